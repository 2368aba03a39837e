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

/// Whether `name` is a normal host name: labels of lower-case ASCII letters, digits and '-' joined
/// by single dots (none leading or trailing); what [`dotted_name`] says for those labels, eight
/// bytes at a time. Every row whose host has no dictionary token is checked, and the byte loop
/// took 8% of the read phase's CPU on input with 3M hosts.
pub fn is_normal_name(name: &str) -> bool {
    let b = name.as_bytes();
    let n = b.len();
    if n < WORD {
        return dotted_name(name, is_normal_label_byte);
    }
    if b[0] == b'.' || b[n - 1] == b'.' {
        return false;
    }
    let mut bad = 0;
    let mut dot_before = 0;
    let mut i = 0;
    while i + WORD <= n {
        let word = NameWord::at(b, i);
        bad |= word.bad(dot_before);
        dot_before = word.last_is_dot();
        i += WORD;
    }
    if i < n {
        // the last eight bytes, overlapping the words before: the pair across their start lies
        // inside those words, already checked
        bad |= NameWord::at(b, n - WORD).bad(0);
    }
    bad == 0
}

/// A byte of a normal host name's label.
fn is_normal_label_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

const WORD: usize = 8;
const ONES: u64 = u64::from_le_bytes([0x01; WORD]);
/// The top bit of every byte: each test below leaves its answer for a byte there.
const TOPS: u64 = u64::from_le_bytes([0x80; WORD]);

/// Eight bytes of a name, the first in the low byte. The tests add to every byte at once: for a
/// byte below 0x80 no sum carries into the next byte; a byte of 0x80 or more may corrupt the tests
/// of the bytes above it, but is itself never valid, so the word is rejected either way.
struct NameWord(u64);

impl NameWord {
    fn at(b: &[u8], i: usize) -> Self {
        let mut w = [0; WORD];
        w.copy_from_slice(&b[i..i + WORD]);
        NameWord(u64::from_le_bytes(w))
    }

    /// Top bits of the bytes that are at least `lo`.
    fn at_least(&self, lo: u8) -> u64 {
        self.0.wrapping_add(ONES * (0x80 - lo as u64)) & TOPS
    }

    /// Top bits of the bytes in `lo..=hi`.
    fn within(&self, lo: u8, hi: u8) -> u64 {
        self.at_least(lo) & !self.at_least(hi + 1)
    }

    /// Top bits of the bytes equal to `c`.
    fn equal(&self, c: u8) -> u64 {
        let x = self.0 ^ (ONES * c as u64);
        // a byte's top bit is set by the sum when its low seven bits are not zero
        !((x & !TOPS).wrapping_add(!TOPS) | x) & TOPS
    }

    /// Top bits of the dots.
    fn dots(&self) -> u64 {
        self.equal(b'.')
    }

    /// Top bits of the bytes that break a normal name: not a label byte or a dot, or a dot right
    /// after a dot (`dot_before`: the previous word's [`Self::last_is_dot`]).
    fn bad(&self, dot_before: u64) -> u64 {
        let dots = self.dots();
        let allowed = self.within(b'a', b'z') | self.within(b'0', b'9') | self.equal(b'-') | dots;
        let ascii = !self.0 & TOPS;
        (!(allowed & ascii) & TOPS) | (dots & ((dots << 8) | dot_before))
    }

    /// The top bit of the low byte, set when this word's last byte is a dot.
    fn last_is_dot(&self) -> u64 {
        self.dots() >> 56
    }
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

    proptest::proptest! {
        #[test]
        fn normal_names_are_dotted_names_of_normal_labels(
            name in "[a-z0-9.A-Z_ \u{e9}\u{7f}-]{0,40}"
        ) {
            proptest::prop_assert_eq!(
                is_normal_name(&name),
                dotted_name(&name, is_normal_label_byte)
            );
        }
    }

    #[test]
    fn normal_names_at_every_word_boundary() {
        // a fault (two dots, a byte outside the labels) at every place of names of every length
        // around one and two words
        for n in 1..=25 {
            let valid: String = (0..n).map(|i| (b'a' + (i % 26) as u8) as char).collect();
            assert!(is_normal_name(&valid), "{valid}");
            for at in 0..n {
                for fault in [".", "A", "_", "\u{80}", "/"] {
                    let mut name = valid.clone();
                    name.replace_range(at..at + 1, fault);
                    assert_eq!(
                        is_normal_name(&name),
                        dotted_name(&name, is_normal_label_byte),
                        "{name:?}"
                    );
                    if at + 1 < n {
                        let mut two = valid.clone();
                        two.replace_range(at..at + 2, "..");
                        assert!(!is_normal_name(&two), "{two:?}");
                    }
                }
            }
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
