//! Input rows in transit to their host's worker: columnar batches, so an exchange moves a few
//! large buffers instead of millions of small records with two Strings each (measured: 3-9 M
//! records/s with Strings, an order of magnitude more as buffers).

use serde::{Deserialize, Serialize};

use super::claims;
use crate::io::pages::Origin;

/// What ends a URL's scheme; the authority, and most often the host, follows.
const SCHEME_END: &str = "://";

/// A batch of input page rows bound for the worker of their hosts.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RowBatch {
    /// The worker these rows go to.
    pub dest: u32,
    /// URL bytes of every row, back to back, each followed by its host's bytes unless the URL
    /// spells the host right after its scheme (almost always: the host is then read in place,
    /// which saves a third of the text).
    // one byte string between processes: bincode encodes a plain Vec<u8> byte by byte, which
    // took a third of the read phase of 2 processes
    #[serde(with = "serde_bytes")]
    pub text: Vec<u8>,
    /// End of each row's URL in `text`.
    pub url_end: Vec<u32>,
    /// Start of each row's host in `text`.
    pub host_start: Vec<u32>,
    /// End of each row's host in `text`.
    pub host_end: Vec<u32>,
    pub importance: Vec<f64>,
    /// Changes per day.
    pub change_rate: Vec<f64>,
    pub complete_obs: Vec<bool>,
    /// Each row's own refetch-interval bounds, seconds (NaN: none); empty when no input file has
    /// them.
    pub min_interval_s: Vec<f64>,
    pub max_interval_s: Vec<f64>,
    /// Each row's origin, packed ([`claims::pack`]: 8 bytes a row where an [`Origin`] takes 16).
    origin: Vec<u64>,
}

impl RowBatch {
    /// An empty batch for worker `dest`.
    pub fn new(dest: u32) -> Self {
        RowBatch {
            dest,
            ..Default::default()
        }
    }

    /// An empty batch for worker `dest` with room for `text` bytes and `rows` input rows: a batch
    /// grown by doubling copies its buffers about once over and faults in fresh pages for every
    /// copy (a tenth of the read phase on the 10M-URL bench).
    pub fn with_capacity(dest: u32, text: usize, rows: usize) -> Self {
        RowBatch {
            dest,
            text: Vec::with_capacity(text),
            url_end: Vec::with_capacity(rows),
            host_start: Vec::with_capacity(rows),
            host_end: Vec::with_capacity(rows),
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete_obs: Vec::with_capacity(rows),
            min_interval_s: Vec::new(),
            max_interval_s: Vec::new(),
            origin: Vec::with_capacity(rows),
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.url_end.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.url_end.is_empty()
    }

    /// Appends an input row.
    pub fn push(
        &mut self,
        url: &str,
        host: &str,
        importance: f64,
        change_rate: f64,
        complete_obs: bool,
        origin: Origin,
    ) {
        let url_start = self.text.len();
        self.text.extend_from_slice(url.as_bytes());
        self.url_end.push(self.text.len() as u32);
        let host_start = match url.find(SCHEME_END) {
            Some(p) if url[p + SCHEME_END.len()..].starts_with(host) => {
                url_start + p + SCHEME_END.len()
            }
            _ => {
                let start = self.text.len();
                self.text.extend_from_slice(host.as_bytes());
                start
            }
        };
        self.host_start.push(host_start as u32);
        self.host_end.push((host_start + host.len()) as u32);
        self.importance.push(importance);
        self.change_rate.push(change_rate);
        self.complete_obs.push(complete_obs);
        self.origin.push(claims::pack(origin));
    }

    /// Appends the refetch-interval bounds of the row just pushed (seconds, NaN: none); every row
    /// of a batch has them or none does.
    pub fn push_intervals(&mut self, min_s: f64, max_s: f64) {
        self.min_interval_s.push(min_s);
        self.max_interval_s.push(max_s);
    }

    /// Whether the rows carry refetch-interval bounds.
    pub fn has_intervals(&self) -> bool {
        !self.min_interval_s.is_empty()
    }

    /// Gives back spare capacity before the batch is sent: a received batch lives until the end of
    /// the run, and doubling growth would leave up to half of it unused.
    pub fn sealed(mut self) -> Self {
        self.text.shrink_to_fit();
        self.url_end.shrink_to_fit();
        self.host_start.shrink_to_fit();
        self.host_end.shrink_to_fit();
        self.importance.shrink_to_fit();
        self.change_rate.shrink_to_fit();
        self.complete_obs.shrink_to_fit();
        self.min_interval_s.shrink_to_fit();
        self.max_interval_s.shrink_to_fit();
        self.origin.shrink_to_fit();
        self
    }

    /// Where row `i` came from, packed ([`claims::pack`]: ordered as the origins are).
    #[inline]
    pub fn packed_origin(&self, i: usize) -> u64 {
        self.origin[i]
    }

    /// Where row `i` came from.
    pub fn origin(&self, i: usize) -> Origin {
        claims::unpack(self.origin[i])
    }

    /// Bytes of text held (to cut batches at a bounded size).
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// Where row `i`'s URL starts: where the previous row's text ends (its URL, or its host when
    /// that was appended after the URL).
    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.url_end[i - 1].max(self.host_end[i - 1]) as usize
        }
    }

    /// URL bytes of row `i` (UTF-8; byte order is string order, for sorting).
    #[inline]
    pub fn url_bytes(&self, i: usize) -> &[u8] {
        &self.text[self.start(i)..self.url_end[i] as usize]
    }

    /// Where row `i`'s URL is in `text`: (first byte, end).
    #[inline]
    pub fn url_range(&self, i: usize) -> (usize, usize) {
        (self.start(i), self.url_end[i] as usize)
    }

    /// Host bytes of row `i`.
    #[inline]
    pub fn host_bytes(&self, i: usize) -> &[u8] {
        &self.text[self.host_start[i] as usize..self.host_end[i] as usize]
    }

    /// URL of row `i`. The bytes were pushed from a &str (and bincode moves them unchanged), so the
    /// check cannot fail; an empty string would show a broken invariant rather than panic a worker.
    pub fn url(&self, i: usize) -> &str {
        std::str::from_utf8(self.url_bytes(i)).unwrap_or("")
    }

    /// Host of row `i`.
    pub fn host(&self, i: usize) -> &str {
        std::str::from_utf8(self.host_bytes(i)).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_in_their_urls_are_read_in_place_and_others_stored() {
        let origin = Origin { file: 0, row: 0 };
        let mut b = RowBatch::new(0);
        let rows = [
            ("https://a.example/x", "a.example"),
            ("https://A.example/y", "a.example"), // case differs: stored after the URL
            ("urn:isbn:123", "books.example"),
            ("http://b.example:8080/", "b.example"),
            ("http://c.example", "c.example"),
            ("https://d.example/", "other.example"),
        ];
        for (url, host) in rows {
            b.push(url, host, 1.0, 0.5, false, origin);
        }
        for (i, (url, host)) in rows.iter().enumerate() {
            assert_eq!(b.url(i), *url);
            assert_eq!(b.host(i), *host);
        }
        let stored: usize = ["a.example", "books.example", "other.example"]
            .iter()
            .map(|h| h.len())
            .sum::<usize>();
        let urls: usize = rows.iter().map(|r| r.0.len()).sum();
        assert_eq!(b.text_bytes(), urls + stored);
    }
}
