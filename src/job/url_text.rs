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

/// The rests of a worker's URLs in page order, back to back in blocks of text, each with its
/// form.
///
/// Why blocks: the rests are copied out of the received batches part by part while arranging,
/// and each part's received texts are freed once copied. One growing array faulted in a fresh
/// page for every 4 KiB of rests (a sixth of a 10M-URL run's page faults), while the texts just
/// freed went back to the system. In blocks, the next part's rests are written into the previous
/// part's received texts ([`Rests::recycle`]), pages already resident: only the first part's
/// blocks are new.
#[derive(Debug, Default)]
pub struct Rests {
    /// Text, each block filled before the next is started (a rest never spans two).
    blocks: Vec<Vec<u8>>,
    /// Emptied buffers the next blocks are taken from.
    spare: Vec<Vec<u8>>,
    /// Per URL: its form in the top [`Form::BITS`] bits, then its block, then its end in it.
    end: Vec<u64>,
}

/// Bits of a packed end that give its place in its block (256 GiB).
const OFFSET_BITS: u32 = 38;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// Where a packed end's form starts; its block takes the bits between (16M blocks).
const FORM_SHIFT: u32 = u64::BITS - Form::BITS;
const BLOCK_MASK: u64 = (1 << (FORM_SHIFT - OFFSET_BITS)) - 1;

/// Bytes of a block made afresh (a received batch's text buffer, which later blocks reuse, holds
/// about as many).
const REST_BLOCK_BYTES: usize = super::wire::BATCH_TEXT_BYTES;

/// Emptied buffers smaller than this are not kept as blocks (their tails would waste more).
const LEAST_SPARE_BYTES: usize = 64 << 10;

impl Rests {
    /// Room for `rows` rests' bounds (their text comes in blocks as it is pushed).
    pub fn with_capacity(rows: usize) -> Self {
        Rests {
            blocks: Vec::new(),
            spare: Vec::new(),
            end: Vec::with_capacity(rows),
        }
    }

    /// Appends the next URL's form and rest.
    #[inline]
    pub fn push(&mut self, form: Form, rest: &[u8]) {
        let fits = self
            .blocks
            .last()
            .is_some_and(|b| b.capacity() - b.len() >= rest.len());
        if !fits {
            self.start_block(rest.len());
        }
        let b = self.blocks.len() - 1;
        let block = &mut self.blocks[b];
        append_short(block, rest);
        self.end
            .push((form as u64) << FORM_SHIFT | (b as u64) << OFFSET_BITS | block.len() as u64);
    }

    /// Starts a block with room for at least `bytes`: a spare buffer if one is large enough, else
    /// a new one.
    #[cold]
    fn start_block(&mut self, bytes: usize) {
        assert!(
            (self.blocks.len() as u64) < BLOCK_MASK,
            "more than {BLOCK_MASK} blocks of URL rests"
        );
        let block = match self.spare.pop() {
            Some(b) if b.capacity() >= bytes => b,
            // a spare too small for this rest (longer than any received text held) goes; the
            // rest is rare enough that the spares after it still serve
            _ => Vec::with_capacity(bytes.max(REST_BLOCK_BYTES)),
        };
        self.blocks.push(block);
    }

    /// Keeps `buffers` (received texts whose rests were copied out) as room for the next blocks.
    pub fn recycle(&mut self, buffers: impl IntoIterator<Item = Vec<u8>>) {
        for mut b in buffers {
            if b.capacity() >= LEAST_SPARE_BYTES {
                b.clear();
                self.spare.push(b);
            }
        }
    }

    /// Frees the buffers kept for blocks not yet started.
    pub fn drop_spare(&mut self) {
        self.spare = Vec::new();
    }

    /// Number of URLs.
    pub fn len(&self) -> usize {
        self.end.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.end.is_empty()
    }

    /// URL `i`'s block and the bounds of its rest there.
    #[inline]
    fn place(&self, i: usize) -> (Form, usize, usize, usize) {
        let end = self.end[i];
        let block = (end >> OFFSET_BITS) & BLOCK_MASK;
        // the rest starts where the one before ends if that one is in the same block
        let start = match i.checked_sub(1).map(|j| self.end[j]) {
            Some(before) if (before >> OFFSET_BITS) & BLOCK_MASK == block => before & OFFSET_MASK,
            _ => 0,
        };
        let form = Form::from_bits((end >> FORM_SHIFT) as u8);
        (
            form,
            block as usize,
            start as usize,
            (end & OFFSET_MASK) as usize,
        )
    }

    /// Form and rest of URL `i`.
    #[inline]
    pub fn get(&self, i: usize) -> (Form, &[u8]) {
        let (form, block, start, end) = self.place(i);
        (form, &self.blocks[block][start..end])
    }

    /// Asks the CPU to fetch the bounds of rest `i` (a hint, for passes that jump between pages).
    #[inline]
    pub fn prefetch_end(&self, i: usize) {
        prefetch_at(self.end.as_ptr().wrapping_add(i.saturating_sub(1)));
    }

    /// Asks the CPU to fetch rest `i`'s text (a hint; reads its bounds, fetched a step earlier
    /// with [`Rests::prefetch_end`]).
    #[inline]
    pub fn prefetch_text(&self, i: usize) {
        if i < self.end.len() {
            let (_, block, start, _) = self.place(i);
            prefetch_at(self.blocks[block].as_ptr().wrapping_add(start));
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        let room = |v: &Vec<Vec<u8>>| v.iter().map(Vec::capacity).sum::<usize>();
        room(&self.blocks) + room(&self.spare) + self.end.capacity() * std::mem::size_of::<u64>()
    }

    /// Blocks of text in use.
    #[cfg(test)]
    fn blocks(&self) -> usize {
        self.blocks.len()
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

    proptest::proptest! {
        /// Rests across blocks: fresh ones, recycled buffers of several sizes (all too small for
        /// the long rest), and a rest longer than a block; each comes back as pushed, and no
        /// buffer is both a block and spare.
        #[test]
        fn rests_in_blocks_give_back_what_was_pushed(
            lengths in proptest::collection::vec(0usize..40_000, 1..300),
            recycle_at in proptest::collection::vec((0usize..300, 1usize..4), 0..4),
            long_at in 0usize..300,
        ) {
            let mut rests = Rests::with_capacity(lengths.len());
            let mut pushed: Vec<(Form, Vec<u8>)> = Vec::new();
            for (i, &n) in lengths.iter().enumerate() {
                for &(at, kb) in &recycle_at {
                    if at == i {
                        // 64, 128 or 192 KiB: kept, each smaller than the long rest
                        let buffers: Vec<Vec<u8>> = (0..2).map(|_| vec![7u8; kb * (64 << 10)]).collect();
                        rests.recycle(buffers);
                    }
                }
                let n = if i == long_at { REST_BLOCK_BYTES + 5 } else { n };
                let form = Form::from_bits((i % 3) as u8);
                let rest: Vec<u8> = (0..n).map(|k| (i * 31 + k) as u8).collect();
                rests.push(form, &rest);
                pushed.push((form, rest));
            }
            proptest::prop_assert_eq!(rests.len(), pushed.len());
            for (i, (form, rest)) in pushed.iter().enumerate() {
                let (f, r) = rests.get(i);
                proptest::prop_assert_eq!(f, *form);
                proptest::prop_assert_eq!(r, &rest[..], "rest {}", i);
            }
            // a recycled buffer is never a block while also spare
            for b in &rests.blocks {
                let p = b.as_ptr() as usize;
                proptest::prop_assert!(!rests.spare.iter().any(|s| s.as_ptr() as usize == p));
            }
        }
    }

    #[test]
    fn recycled_buffers_become_the_next_blocks() {
        let mut rests = Rests::with_capacity(4);
        rests.push(Form::Https, &[1; 100]);
        let buffer = vec![0u8; REST_BLOCK_BYTES];
        let at = buffer.as_ptr();
        rests.recycle([buffer, vec![0u8; 10]]);
        // the first block is full only once a rest no longer fits it
        rests.push(Form::Http, &vec![2; REST_BLOCK_BYTES - 100]);
        rests.push(Form::Whole, &[3; 1]);
        assert_eq!(rests.blocks(), 2);
        assert_eq!(rests.blocks[1].as_ptr(), at);
        assert_eq!(rests.get(2), (Form::Whole, &[3u8][..]));
        assert_eq!(rests.get(1).1.len(), REST_BLOCK_BYTES - 100);
        // the 10-byte buffer was not kept
        assert!(rests.spare.is_empty());
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
