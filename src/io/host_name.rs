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

/// Whether `text` is empty or white space only (as `str::trim` takes it): a first byte that is
/// visible ASCII says no without the trim (a look at both ends, Unicode-aware, for every row's
/// host).
#[inline]
pub fn is_blank(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(0x21..=0x7e) => false,
        _ => text.trim().is_empty(),
    }
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
/// by single dots (none leading or trailing); what [`dotted_name`] says for those labels, sixteen
/// bytes at a time. Every row whose host has no dictionary token is checked: the byte loop took 8%
/// of the read phase's CPU on input with 3M hosts, eight bytes at a time in a word 170
/// instructions a name of 20 bytes.
pub fn is_normal_name(name: &str) -> bool {
    let b = name.as_bytes();
    let n = b.len();
    if n == 0 || b[0] == b'.' || b[n - 1] == b'.' {
        return false;
    }
    if n < BLOCK {
        // padded with a label byte: it cannot make a name bad, nor a dot double
        let mut block = [b'a'; BLOCK];
        block[..n].copy_from_slice(b);
        return !block_is_bad(&block);
    }
    // blocks overlapping by a byte, so that every pair of neighbours lies in one, the last one
    // ending at the name's end
    let mut bad = false;
    let mut i = 0;
    while i + BLOCK < n {
        bad |= block_is_bad(b[i..i + BLOCK].try_into().expect("a block"));
        i += BLOCK - 1;
    }
    !(bad | block_is_bad(b[n - BLOCK..].try_into().expect("a block")))
}

/// Bytes [`is_normal_name`] checks at a time.
const BLOCK: usize = 16;

/// Whether `block` holds a byte that is not a normal label's or a dot, or two dots in a row: every
/// byte tested at once (SSE2, which every x86-64 CPU has: some 15 instructions a block, where the
/// compiler's vectorising of a byte loop took 60).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_is_bad(block: &[u8; BLOCK]) -> bool {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86-64; the load reads the block's 16 bytes, unaligned.
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast());
        // lo <= x <= lo + span as unsigned bytes: x - lo (wrapping) is at most span
        let within = |lo: u8, span: u8| {
            let d = _mm_sub_epi8(x, _mm_set1_epi8(lo as i8));
            _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span as i8)), d)
        };
        let dots = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'.' as i8));
        let hyphens = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'-' as i8));
        let allowed = _mm_or_si128(
            _mm_or_si128(within(b'a', 25), within(b'0', 9)),
            _mm_or_si128(hyphens, dots),
        );
        let bad = !_mm_movemask_epi8(allowed) & 0xffff;
        let dots = _mm_movemask_epi8(dots);
        (bad | (dots & (dots >> 1))) != 0
    }
}

/// [`block_is_bad`] byte by byte, where there is no SSE2.
#[cfg(not(target_arch = "x86_64"))]
fn block_is_bad(block: &[u8; BLOCK]) -> bool {
    block.iter().any(|&b| b != b'.' && !is_normal_label_byte(b))
        || block.windows(2).any(|w| w == b"..")
}

/// A byte of a normal host name's label.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn is_normal_label_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
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
    fn blank_is_what_trim_leaves_empty() {
        for text in [
            "",
            " ",
            "\t\n",
            "\u{a0}",
            "\u{2003} ",
            "\u{b}",
            "a",
            " a",
            "a ",
            "\u{a0}b",
            "-",
        ] {
            assert_eq!(is_blank(text), text.trim().is_empty(), "{text:?}");
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
            name in "[a-z0-9.A-Z_ \u{e9}\u{7f}-]{0,60}"
        ) {
            proptest::prop_assert_eq!(
                is_normal_name(&name),
                dotted_name(&name, is_normal_label_byte)
            );
        }
    }

    #[test]
    fn normal_names_at_every_block_boundary() {
        // a fault (two dots, a byte outside the labels) at every place of names of every length
        // around one, two and three blocks
        for n in 1..=50 {
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
