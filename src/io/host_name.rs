//! The host of a URL, for pages whose `host` column is absent or null.
//!
//! Plain `http(s)://name[:port]/...` URLs, almost all of a crawl, take a fast path that only slices
//! the authority (the `url` crate costs ~0.3 us per URL, seconds on a nightly run); anything else
//! (userinfo, IPv6, percent-encoding, non-ASCII, other schemes) goes through the `url` crate. Hosts
//! are lower-cased: DNS names are case-insensitive and the hosts table is matched the same way.

/// The lower-cased host of `url`, or None if it has none.
pub fn host_of(url: &str) -> Option<String> {
    fast_host(url).map(|h| h.to_ascii_lowercase()).or_else(|| {
        let parsed = url::Url::parse(url).ok()?;
        parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .map(|h| h.to_ascii_lowercase())
    })
}

/// Normalises a host given in a table: trimmed and lower-cased.
pub fn normalize(host: &str) -> String {
    host.trim().to_ascii_lowercase()
}

/// The host `url` spells after `http://` or `https://`, as written (before lower-casing), when it
/// is a plain DNS name or IPv4 address with at most a port after it; None otherwise.
pub fn fast_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let name = match authority.rfind(':') {
        Some(colon) if authority[colon + 1..].bytes().all(|b| b.is_ascii_digit()) => {
            &authority[..colon]
        }
        Some(_) => return None,
        None => authority,
    };
    dotted_name(name, |b| b.is_ascii_alphanumeric() || b == b'-').then_some(name)
}

/// Whether `name` is labels of `label` bytes joined by single dots (none leading or trailing), in
/// one pass over its bytes (a substring search for ".." set up a searcher per row: 1.2% of the
/// CPU of a 10M-URL run in a profile; folds without early exits were 1.3-2x slower than this loop
/// on 1M host names, all valid: its branches are predicted).
pub fn dotted_name(name: &str, label: impl Fn(u8) -> bool) -> bool {
    let mut previous = b'.'; // a leading dot is an empty label
    for b in name.bytes() {
        if b == b'.' {
            if previous == b'.' {
                return false;
            }
        } else if !label(b) {
            return false;
        }
        previous = b;
    }
    previous != b'.' // empty, or a trailing dot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_agrees_with_the_url_crate() {
        let cases = [
            "https://www.Example.com/a/b?c#d",
            "http://example.com:8080/x",
            "http://example.com",
            "https://a-b.c.d.example.org?q=1",
            "https://sub.example.com#frag",
            "HTTP://EXAMPLE.COM/",
            "http://user:pw@example.com/",
            "http://[::1]:80/",
            "https://bücher.example/",
            "ftp://files.example.com/x",
            "http://exa%6Dple.com/",
            "http://192.168.0.1:8080/x",
        ];
        for u in cases {
            let reference = url::Url::parse(u)
                .ok()
                .and_then(|p| p.host_str().map(|h| h.to_ascii_lowercase()));
            assert_eq!(host_of(u), reference, "{u}");
        }
    }

    #[test]
    fn no_host_is_none() {
        assert_eq!(host_of("not a url"), None);
        assert_eq!(host_of("mailto:someone@example.com"), None);
        // (the WHATWG parser reads "http:///path" as host "path", so that is not a case of no host)
        assert_eq!(host_of("http://"), None);
    }

    proptest::proptest! {
        #[test]
        fn dotted_names_are_as_defined(name in "[a.B-]{0,12}") {
            let label = |b: u8| b.is_ascii_lowercase() || b == b'-';
            let obvious = !name.is_empty()
                && !name.starts_with('.')
                && !name.ends_with('.')
                && !name.contains("..")
                && name.bytes().all(|b| label(b) || b == b'.');
            proptest::prop_assert_eq!(dotted_name(&name, label), obvious);
        }
    }

    #[test]
    fn dotted_names_are_labels_joined_by_single_dots() {
        let lower = |b: u8| b.is_ascii_lowercase();
        for (name, ok) in [
            ("a.b", true),
            ("abc", true),
            ("", false),
            (".", false),
            (".a", false),
            ("a.", false),
            ("a..b", false),
            ("a.B", false),
            ("a.b.c", true),
        ] {
            assert_eq!(dotted_name(name, lower), ok, "{name:?}");
            // the same as the obvious definition
            let obvious = !name.is_empty()
                && !name.starts_with('.')
                && !name.ends_with('.')
                && !name.contains("..")
                && name.bytes().all(|b| lower(b) || b == b'.');
            assert_eq!(dotted_name(name, lower), obvious, "{name:?}");
        }
    }
}
