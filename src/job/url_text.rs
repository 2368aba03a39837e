//! URLs held without the scheme and host their host already names: "https://" + host + rest.
//!
//! Almost every URL starts with its own host's name, which a worker holds once per host; keeping
//! only the rest holds the generated sets' 46-byte URLs (20-byte hosts) in 18 bytes, through the
//! exchange, the solve and the write. A URL that does not start so (another scheme, its host in
//! other case) is kept whole; a port after the host is part of the rest.

use super::keys::url_id;
use crate::append::append_short;
use crate::prefetch::prefetch_at;

/// What comes before a URL's rest: a scheme and its host's name, or nothing (the rest is the
/// whole URL).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Form {
    #[default]
    Whole = 0,
    Https = 1,
    Http = 2,
}

impl Form {
    /// Bits a form takes where it is packed beside a number.
    pub const BITS: u32 = 2;
    const SCHEMES: [(Form, &'static str); 2] = [(Form::Https, "https://"), (Form::Http, "http://")];

    /// How `url` splits over its `host`: the form, and where its rest starts.
    pub fn of(url: &str, host: &str) -> (Form, usize) {
        for (form, scheme) in Self::SCHEMES {
            if url.starts_with(scheme) && url[scheme.len()..].starts_with(host) {
                return (form, scheme.len() + host.len());
            }
        }
        (Form::Whole, 0)
    }

    /// The scheme this form writes before the host ("" for a whole URL).
    #[inline]
    pub fn scheme(self) -> &'static [u8] {
        match self {
            Form::Whole => b"",
            Form::Https => b"https://",
            Form::Http => b"http://",
        }
    }

    /// The form packed as `bits` ([`Form::Whole`] for a value no form packs to).
    #[inline]
    pub fn from_bits(bits: u8) -> Form {
        match bits {
            1 => Form::Https,
            2 => Form::Http,
            _ => Form::Whole,
        }
    }
}

/// URLs up to this length are hashed from a copy on the stack; longer ones (rare) from the heap.
const STACK_URL: usize = 256;

/// A URL as its parts: the form's scheme, the host's name when the form names it, the rest.
#[derive(Clone, Copy, Debug)]
pub struct Url<'a> {
    form: Form,
    host: &'a [u8],
    rest: &'a [u8],
}

impl<'a> Url<'a> {
    /// The URL of `form` on `host` with `rest` (the host is ignored for a whole URL).
    #[inline]
    pub fn new(form: Form, host: &'a [u8], rest: &'a [u8]) -> Self {
        let host = if form == Form::Whole { &[][..] } else { host };
        Url { form, host, rest }
    }

    /// A URL held whole.
    #[inline]
    pub fn whole(url: &'a [u8]) -> Self {
        Url::new(Form::Whole, &[], url)
    }

    /// How the URL is held.
    #[inline]
    pub fn form(&self) -> Form {
        self.form
    }

    /// What follows the scheme and host (the whole URL for [`Form::Whole`]).
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// The URL's bytes in three pieces: scheme, host, rest.
    #[inline]
    pub fn parts(&self) -> [&'a [u8]; 3] {
        [self.form.scheme(), self.host, self.rest]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.form.scheme().len() + self.host.len() + self.rest.len()
    }

    /// Whether the URL is empty (never, for a valid row).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the URL's bytes to `out`.
    #[inline]
    pub fn push_to(&self, out: &mut Vec<u8>) {
        for part in self.parts() {
            out.extend_from_slice(part);
        }
    }

    /// The URL as a String (its parts came from &str, cut at a host boundary: valid UTF-8).
    pub fn to_string_lossy(&self) -> String {
        let mut bytes = Vec::with_capacity(self.len());
        self.push_to(&mut bytes);
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    }

    /// The URL's 128-bit identity, [`url_id`] of its bytes.
    #[inline]
    pub fn id(&self) -> u128 {
        if self.form == Form::Whole {
            return url_id(self.rest);
        }
        let len = self.len();
        if len <= STACK_URL {
            // not zeroed first: clearing 256 bytes cost a third as much as the copies (every row
            // of the exchange is hashed here)
            let mut buf = std::mem::MaybeUninit::<[u8; STACK_URL]>::uninit();
            let base = buf.as_mut_ptr().cast::<u8>();
            let mut at = 0;
            for part in self.parts() {
                // SAFETY: the parts add up to `len` <= STACK_URL bytes, from slices that are not
                // the buffer.
                unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), base.add(at), part.len()) };
                at += part.len();
            }
            // SAFETY: the first `len` bytes of the buffer were written just above.
            url_id(unsafe { std::slice::from_raw_parts(base, len) })
        } else {
            let mut bytes = Vec::with_capacity(len);
            self.push_to(&mut bytes);
            url_id(&bytes)
        }
    }

    /// The URL's 64-bit key, [`super::keys::url_key`] of its bytes.
    #[inline]
    pub fn key(&self) -> u64 {
        self.id() as u64
    }
}

/// The rests of a worker's URLs in page order, back to back, each with its form.
#[derive(Debug, Default)]
pub struct Rests {
    text: Vec<u8>,
    /// End of each rest in `text`, its form in the top [`Form::BITS`] bits.
    end: Vec<u64>,
}

const END_BITS: u32 = u64::BITS - Form::BITS;
const END_MASK: u64 = (1 << END_BITS) - 1;

impl Rests {
    /// Room for `rows` rests of `bytes` bytes in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> Self {
        Rests {
            text: Vec::with_capacity(bytes),
            end: Vec::with_capacity(rows),
        }
    }

    /// Appends the next URL's form and rest.
    #[inline]
    pub fn push(&mut self, form: Form, rest: &[u8]) {
        append_short(&mut self.text, rest);
        self.end
            .push(self.text.len() as u64 | (form as u64) << END_BITS);
    }

    /// Number of URLs.
    pub fn len(&self) -> usize {
        self.end.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.end.is_empty()
    }

    /// Form and rest of URL `i`.
    #[inline]
    pub fn get(&self, i: usize) -> (Form, &[u8]) {
        let start = if i == 0 {
            0
        } else {
            self.end[i - 1] & END_MASK
        };
        let end = self.end[i];
        let form = Form::from_bits((end >> END_BITS) as u8);
        (form, &self.text[start as usize..(end & END_MASK) as usize])
    }

    /// Asks the CPU to fetch the bounds of rest `i` (a hint, for passes that jump between pages).
    #[inline]
    pub fn prefetch_end(&self, i: usize) {
        prefetch_at(self.end.as_ptr().wrapping_add(i.saturating_sub(1)));
    }

    /// Asks the CPU to fetch rest `i`'s text (a hint; reads its start, fetched a step earlier
    /// with [`Rests::prefetch_end`]).
    #[inline]
    pub fn prefetch_text(&self, i: usize) {
        let start = if i == 0 {
            0
        } else {
            self.end.get(i - 1).map_or(0, |&e| e & END_MASK)
        };
        prefetch_at(self.text.as_ptr().wrapping_add(start as usize));
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.text.capacity() + self.end.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::keys::url_key;

    /// (URL, host, form it is held in, bytes of rest)
    const CASES: [(&str, &str, Form, usize); 8] = [
        ("https://a.example/x", "a.example", Form::Https, 2),
        ("http://a.example:8080/", "a.example", Form::Http, 6),
        ("https://a.example", "a.example", Form::Https, 0),
        ("https://A.example/y", "a.example", Form::Whole, 19),
        ("urn:isbn:123", "books.example", Form::Whole, 12),
        ("ftp://a.example/", "a.example", Form::Whole, 16),
        ("https://d.example/", "other.example", Form::Whole, 18),
        // a host that is a prefix of the URL's authority still splits exactly
        ("https://a.example.org/", "a.example", Form::Https, 5),
    ];

    #[test]
    fn a_url_is_its_form_host_and_rest_and_hashes_as_its_bytes() {
        for (url, host, form, rest_len) in CASES {
            let (f, at) = Form::of(url, host);
            assert_eq!((f, url.len() - at), (form, rest_len), "{url}");
            let u = Url::new(f, host.as_bytes(), &url.as_bytes()[at..]);
            assert_eq!(u.len(), url.len());
            assert_eq!(u.to_string_lossy(), url);
            let mut bytes = vec![b'#'];
            u.push_to(&mut bytes);
            assert_eq!(&bytes[1..], url.as_bytes());
            assert_eq!(u.id(), url_id(url.as_bytes()), "{url}");
            assert_eq!(u.key(), url_key(url.as_bytes()));
        }
    }

    #[test]
    fn long_urls_hash_as_their_bytes_too() {
        let host = "h.example";
        for n in [
            STACK_URL - 20,
            STACK_URL - 17,
            STACK_URL - 16,
            STACK_URL,
            3 * STACK_URL,
        ] {
            let url = format!("https://{host}/{}", "p".repeat(n));
            let (f, at) = Form::of(&url, host);
            let u = Url::new(f, host.as_bytes(), &url.as_bytes()[at..]);
            assert_eq!(u.id(), url_id(url.as_bytes()), "{} bytes", url.len());
        }
    }

    #[test]
    fn rests_give_back_what_was_pushed() {
        let mut rests = Rests::default();
        for (url, host, _, _) in CASES {
            let (f, at) = Form::of(url, host);
            rests.push(f, &url.as_bytes()[at..]);
        }
        assert_eq!(rests.len(), CASES.len());
        for (i, (url, host, form, _)) in CASES.iter().enumerate() {
            let (f, rest) = rests.get(i);
            assert_eq!(f, *form);
            assert_eq!(Url::new(f, host.as_bytes(), rest).to_string_lossy(), *url);
        }
    }
}
