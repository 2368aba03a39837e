//! Which URLs share a politeness cap: each row's politeness key, from its `host` column (normalised)
//! or its URL's host, its registrable domain, or a column of its own (`ip`).
//!
//! Host values are normalised so that one server cannot be split into several caps by spelling:
//! `https://H0.Example:8080/path`, `h0.example.` and `h0.example` are one host, `h0.example`; names
//! in other scripts are taken to their ASCII form (IDNA, by the `url` crate: `bücher.example` is
//! `xn--bcher-kva.example`). A value that names no host (spaces inside, a bare scheme) is rejected
//! with a reason rather than guessed at.

use std::borrow::Cow;

use super::host_name::{fast_host, host_of};
use super::pages::Reason;

/// The unit of politeness: rows with the same key share one cap (one `min_delay_s`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PolitenessKey {
    /// The host: the `host` column normalised, or the URL's host where it is absent or null.
    #[default]
    Host,
    /// The registrable domain of that host (public suffix list: `a.example.co.uk` and
    /// `b.example.co.uk` share `example.co.uk`); IP addresses stay as they are.
    Domain,
    /// The value of the input's `ip` column (e.g. the server's address after DNS): hosts on one
    /// server share its cap.
    IpColumn,
}

impl PolitenessKey {
    /// The input column this key needs besides `url` and `host`, if any.
    pub fn column(self) -> Option<&'static str> {
        match self {
            PolitenessKey::IpColumn => Some(IP_COLUMN),
            _ => None,
        }
    }

    /// The key of a row with `url`, its `host` value (None: absent, null or blank) and its `ip` value;
    /// Err(reason) when the row has none.
    pub fn of<'a>(
        self,
        url: &'a str,
        host: Option<&'a str>,
        ip: Option<&'a str>,
    ) -> Result<Cow<'a, str>, Reason> {
        if self == PolitenessKey::IpColumn {
            return match ip.map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) => Ok(normalize_ip(v)),
                None => Err(Reason::PolitenessKeyMissing),
            };
        }
        let host = match host {
            Some(h) => normalize_host(h).ok_or(Reason::HostInvalid)?,
            None => {
                let derived = host_of(url).ok_or(Reason::HostUnresolvable)?;
                Cow::Owned(
                    normalize_host(&derived)
                        .ok_or(Reason::HostUnresolvable)?
                        .into_owned(),
                )
            }
        };
        if self == PolitenessKey::Domain {
            return Ok(registrable_domain(host));
        }
        Ok(host)
    }
}

impl PolitenessKey {
    /// Whether `key`, this policy's key of a row with `url` and host value `given`, is the key
    /// `url` alone gives (that of a row without a host value). Rows of one URL whose keys are so
    /// all share one key; only a row whose key is not can list its URL under another key.
    ///
    /// A given host counts when the URL spells it as its plain host (case aside, a port after it):
    /// the URL's own key is then that very name.
    pub fn is_urls_own(self, url: &str, given: Option<&str>, key: &str) -> bool {
        match self {
            PolitenessKey::IpColumn => false,
            PolitenessKey::Domain => given.is_none(),
            PolitenessKey::Host => given.is_none() || spells_host(url, key),
        }
    }

    /// A key as a hosts table gives it, normalised as the rows' keys are (None: it names none).
    pub fn table_value(self, v: &str) -> Option<String> {
        match self {
            PolitenessKey::IpColumn => Some(v.trim())
                .filter(|v| !v.is_empty())
                .map(|v| normalize_ip(v).into_owned()),
            _ => normalize_host(v).map(Cow::into_owned),
        }
    }
}

/// Whether `url` spells `key`, a normalised host, as its own plain host (case aside, a port after
/// it): the host a row without a host value would take from it.
fn spells_host(url: &str, key: &str) -> bool {
    // most rows in one comparison: the scheme, the key as it is, then a path, a query or the end
    // (a normalised host is a plain name unless it is an IPv6 address in brackets)
    let after = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .and_then(|rest| rest.strip_prefix(key));
    if let Some(after) = after.filter(|_| !key.starts_with('[')) {
        if matches!(after.bytes().next(), None | Some(b'/' | b'?' | b'#')) {
            return true;
        }
    }
    fast_host(url).is_some_and(|h| h.eq_ignore_ascii_case(key))
}

/// The column `--politeness-key ip-column` reads.
pub const IP_COLUMN: &str = "ip";

/// A host value as a politeness unit: lower-case ASCII without scheme, user, port, path or trailing
/// dot; None if it names no host.
pub fn normalize_host(given: &str) -> Option<Cow<'_, str>> {
    if is_plain(given) {
        return Some(Cow::Borrowed(given));
    }
    let mut s = given.trim();
    if let Some(i) = s.find("://") {
        s = &s[i + 3..];
    }
    let end = s.find(['/', '?', '#']).unwrap_or(s.len());
    s = &s[..end];
    if let Some(at) = s.rfind('@') {
        s = &s[at + 1..];
    }
    let name = if s.starts_with('[') {
        &s[..s.find(']').map_or(s.len(), |i| i + 1)]
    } else {
        match s.rfind(':') {
            Some(c) if s[c + 1..].bytes().all(|b| b.is_ascii_digit()) => &s[..c],
            _ => s,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() || name.starts_with('.') {
        return None;
    }
    let host = url::Host::parse(name).ok()?;
    let text = match host {
        url::Host::Domain(d) => d,
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => format!("[{a}]"),
    };
    (!text.is_empty() && is_plain(&text) || text.starts_with('[')).then_some(Cow::Owned(text))
}

/// Already a normal host: lower-case letters, digits, '-' and inner dots.
fn is_plain(h: &str) -> bool {
    super::host_name::is_normal_name(h)
}

/// The registrable domain of a normalised host (itself for IP addresses, public suffixes and names
/// the list cannot split).
fn registrable_domain(host: Cow<'_, str>) -> Cow<'_, str> {
    let ip = host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok();
    if ip {
        return host;
    }
    match psl::domain_str(&host) {
        Some(d) if d.len() < host.len() => Cow::Owned(d.to_owned()),
        _ => host,
    }
}

/// An `ip` value as a key: addresses in their canonical text, anything else trimmed and lower-cased.
fn normalize_ip(v: &str) -> Cow<'_, str> {
    match v.parse::<std::net::IpAddr>() {
        Ok(a) => {
            let text = a.to_string();
            if text == v {
                Cow::Borrowed(v)
            } else {
                Cow::Owned(text)
            }
        }
        Err(_) => Cow::Owned(v.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_the_urls_own_when_the_url_alone_gives_it() {
        let host = PolitenessKey::Host;
        for (url, given) in [
            ("https://a.example/x", None),
            ("https://B.Example:8080", None),
            ("https://a.example/x", Some("a.example")),
            ("https://A.Example:8080/x", Some("A.example")),
            ("http://a.example?q", Some("a.example:81")),
            ("http://10.0.0.1/", Some("10.0.0.1")),
        ] {
            let key = host.of(url, given, None).unwrap();
            assert!(host.is_urls_own(url, given, &key), "{url} {given:?}");
            // and it is the key the URL alone gives
            assert_eq!(key, host.of(url, None, None).unwrap(), "{url}");
        }
        for (url, given) in [
            ("https://a.example/x", "b.example"),
            ("https://a.example.org/x", "a.example"),
            ("https://a.example@b.example/x", "a.example"),
            ("https://a.example:x@b.example/", "a.example"),
            ("ftp://a.example/x", "a.example"),
            ("http://[::1]/", "[::1]"),
        ] {
            let key = host.of(url, Some(given), None).unwrap();
            assert!(!host.is_urls_own(url, Some(given), &key), "{url} {given}");
        }
        // the shortcut answers as the parse of the URL's host does
        let urls = [
            "https://a.example",
            "https://a.example/x",
            "http://a.example?q",
            "https://a.example#f",
            "https://a.example:8080/x",
            "https://a.examplex/",
            "https://a.example.org/",
            "https://A.example/",
            "https://a.example@b.example/",
            "http://[::1]/",
            "ftp://a.example/",
        ];
        for url in urls {
            for key in ["a.example", "a.exampl", "b.example", "[::1]"] {
                assert_eq!(
                    spells_host(url, key),
                    fast_host(url).is_some_and(|h| h.eq_ignore_ascii_case(key)),
                    "{url} {key}"
                );
            }
        }
        let domain = PolitenessKey::Domain;
        let url = "https://a.shop.example.co.uk/1";
        assert!(domain.is_urls_own(url, None, "example.co.uk"));
        assert!(!domain.is_urls_own(url, Some("a.shop.example.co.uk"), "example.co.uk"));
        assert!(!PolitenessKey::IpColumn.is_urls_own(url, None, "10.0.0.1"));
    }

    #[test]
    fn spellings_of_one_host_are_one_host() {
        for given in [
            "h0.example",
            "H0.Example",
            "h0.example.",
            "h0.example:8080",
            "https://h0.example",
            "http://user@h0.example:81/a/b?c#d",
            "h0.example/",
            " h0.example ",
        ] {
            assert_eq!(
                normalize_host(given).as_deref(),
                Some("h0.example"),
                "{given:?}"
            );
        }
        assert_eq!(
            normalize_host("bücher.example").as_deref(),
            Some("xn--bcher-kva.example")
        );
        assert_eq!(
            normalize_host("192.168.0.1:80").as_deref(),
            Some("192.168.0.1")
        );
        assert_eq!(normalize_host("[::1]:8080").as_deref(), Some("[::1]"));
        for bad in [
            "",
            "   ",
            "https://",
            "a b.example",
            ".",
            ":80",
            "h0..example",
        ] {
            assert_eq!(normalize_host(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn keys_by_host_domain_and_column() {
        let url = "https://www.shop.example.co.uk/item";
        assert_eq!(
            PolitenessKey::Host.of(url, None, None).unwrap(),
            "www.shop.example.co.uk"
        );
        assert_eq!(
            PolitenessKey::Domain.of(url, None, None).unwrap(),
            "example.co.uk"
        );
        assert_eq!(
            PolitenessKey::Domain
                .of(url, Some("img.shop.example.co.uk."), None)
                .unwrap(),
            "example.co.uk"
        );
        assert_eq!(
            PolitenessKey::Domain
                .of("http://10.0.0.7/x", None, None)
                .unwrap(),
            "10.0.0.7"
        );
        assert_eq!(
            PolitenessKey::Domain
                .of("http://h0.example/", None, None)
                .unwrap(),
            "h0.example"
        );
        assert_eq!(
            PolitenessKey::IpColumn
                .of(url, None, Some("10.0.0.7"))
                .unwrap(),
            "10.0.0.7"
        );
        assert_eq!(
            PolitenessKey::IpColumn
                .of(url, None, Some("2001:DB8::1"))
                .unwrap(),
            "2001:db8::1"
        );
        assert_eq!(
            PolitenessKey::IpColumn.of(url, None, None),
            Err(Reason::PolitenessKeyMissing)
        );
        assert_eq!(
            PolitenessKey::Host.of(url, Some("a b"), None),
            Err(Reason::HostInvalid)
        );
        assert_eq!(
            PolitenessKey::Host.of("not a url", None, None),
            Err(Reason::HostUnresolvable)
        );
    }
}
