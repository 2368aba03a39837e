//! Solved rows in transit to their crawler's writer: columnar, one host name per run of rows, the
//! names back to back (a String per host cost an allocation and a free per host on 1M-host sets).
//!
//! Input rows ([`super::rows::RowBatch`]) carry a host and an origin per row because they arrive
//! in any order; solved rows leave a worker grouped by host, so the host travels once per run and
//! the origin (needed only to rank duplicates) not at all: a third less to copy and keep.

use serde::{Deserialize, Serialize};

use crate::append::{append_short, extend_short};
use crate::io::rates_out::RateRun;
use crate::job::heap::room_bytes;
use crate::job::url_text::{Form, Url};

/// A batch of solved rows bound for one crawler's writer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RatedBatch {
    /// The worker that writes this crawler's partition.
    pub dest: u32,
    /// The crawler these rows belong to.
    pub crawler: u32,
    /// The rest of every row's URL after its scheme and its run's host ([`Url`]), back to back.
    // one byte string between processes, not a sequence of bytes (see `RowBatch`)
    #[serde(with = "serde_bytes")]
    rest_text: Vec<u8>,
    /// End of each row's rest in `rest_text`.
    #[serde(with = "crate::plain")]
    rest_end: Vec<u32>,
    /// Each row's URL form, as its `u8`.
    #[serde(with = "serde_bytes")]
    form: Vec<u8>,
    /// Importance as read (the input's column, whatever the solver made of it).
    #[serde(with = "crate::plain")]
    pub importance: Vec<f64>,
    /// Changes per day.
    #[serde(with = "crate::plain")]
    pub change_rate: Vec<f64>,
    #[serde(with = "crate::plain::bools")]
    pub complete_obs: Vec<bool>,
    /// Crawls per day (the seconds between them follow: the writer works them out).
    #[serde(with = "crate::plain")]
    pub crawl_rate: Vec<f64>,
    /// The rolling schedule: the last fetch known before the night and the next due, microseconds
    /// since the epoch (i64::MIN: never fetched).
    #[serde(with = "crate::plain")]
    pub last_fetch_us: Vec<i64>,
    #[serde(with = "crate::plain")]
    pub next_fetch_us: Vec<i64>,
    /// The runs of rows of one host, in the sender's canonical order (a host larger than a
    /// batch is sent in several runs, each saying the page it starts at).
    pub runs: Vec<HostRun>,
    /// Host names of the runs, back to back.
    #[serde(with = "serde_bytes")]
    pub host_text: Vec<u8>,
}

/// A row's place in a partition's canonical order: its host's identity, then the index of its page
/// among the host's pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub host: u128,
    pub page: u32,
}

/// The numbers of one solved row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatedRow {
    pub importance: f64,
    pub change_rate: f64,
    pub complete_obs: bool,
    pub crawl_rate: f64,
    pub last_fetch_us: i64,
    pub next_fetch_us: i64,
}

/// A host's run of rows in a [`RatedBatch`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostRun {
    /// The host's 128-bit identity (orders runs canonically at the writer).
    pub id: u128,
    /// End of the host's name in the batch's `host_text`.
    pub name_end: u32,
    /// Whether the host is held at its politeness cap.
    pub capped: bool,
    /// First row of the run; it ends where the next run starts (or at the batch's end).
    pub first: u32,
    /// Index of the run's first page among its host's pages (orders a host's runs).
    pub first_page: u32,
}

impl HostRun {
    /// Where the run's rows go in their partition's canonical order.
    pub fn place(&self) -> Place {
        Place {
            host: self.id,
            page: self.first_page,
        }
    }
}

impl RatedBatch {
    /// An empty batch for `crawler`, written by worker `dest`, with room for `text` URL bytes and
    /// `rows` rows: growth by doubling would copy every buffer about once more and fault in fresh
    /// pages for each copy.
    pub fn with_capacity(dest: u32, crawler: u32, text: usize, rows: usize) -> Self {
        RatedBatch {
            dest,
            crawler,
            rest_text: Vec::with_capacity(text),
            rest_end: Vec::with_capacity(rows),
            form: Vec::with_capacity(rows),
            importance: Vec::with_capacity(rows),
            change_rate: Vec::with_capacity(rows),
            complete_obs: Vec::with_capacity(rows),
            crawl_rate: Vec::with_capacity(rows),
            last_fetch_us: Vec::with_capacity(rows),
            next_fetch_us: Vec::with_capacity(rows),
            runs: Vec::new(),
            host_text: Vec::new(),
        }
    }

    /// This batch emptied for `crawler`, written by worker `dest`: no row left, its room kept.
    pub fn reused(mut self, dest: u32, crawler: u32) -> Self {
        // every field named, so that one added later is cleared too or fails to build
        let RatedBatch {
            dest: _,
            crawler: _,
            rest_text,
            rest_end,
            form,
            importance,
            change_rate,
            complete_obs,
            crawl_rate,
            last_fetch_us,
            next_fetch_us,
            runs,
            host_text,
        } = &mut self;
        rest_text.clear();
        rest_end.clear();
        form.clear();
        importance.clear();
        change_rate.clear();
        complete_obs.clear();
        crawl_rate.clear();
        last_fetch_us.clear();
        next_fetch_us.clear();
        runs.clear();
        host_text.clear();
        RatedBatch {
            dest,
            crawler,
            ..self
        }
    }

    /// Whether the batch has no room yet (a default one, or one taken by a send).
    pub fn is_unallocated(&self) -> bool {
        self.rest_end.capacity() == 0
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rest_end.len()
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rest_end.is_empty()
    }

    /// Starts a run of a host's rows, from its page `first_page` on.
    pub fn start_host(&mut self, id: u128, name: &str, capped: bool, first_page: u32) {
        append_short(&mut self.host_text, name.as_bytes());
        self.runs.push(HostRun {
            id,
            name_end: self.host_text.len() as u32,
            capped,
            first: self.len() as u32,
            first_page,
        });
    }

    /// Appends a row of the current host, whose URL names that host (or is whole).
    pub fn push(&mut self, url: Url<'_>, row: RatedRow) {
        self.push_url(url);
        self.push_numbers(&RateRun {
            // not read: the current run has them
            host: &[],
            host_capped: false,
            importance: &[row.importance],
            change_rate: &[row.change_rate],
            complete_obs: &[row.complete_obs],
            crawl_rate: &[row.crawl_rate],
            last_fetch_us: &[row.last_fetch_us],
            next_fetch_us: &[row.next_fetch_us],
        });
    }

    /// Appends the URL of a row of the current host, which names that host (or is whole); its
    /// numbers follow with [`RatedBatch::push_numbers`].
    #[inline]
    pub fn push_url(&mut self, url: Url<'_>) {
        debug_assert!(
            url.form() == Form::Whole
                || Some(url.parts()[1]) == self.runs.len().checked_sub(1).map(|k| self.run_host(k)),
            "a URL held as its rest must be of the current run's host"
        );
        append_short(&mut self.rest_text, url.rest());
        self.rest_end.push(self.rest_text.len() as u32);
        self.form.push(url.form() as u8);
    }

    /// Appends the numbers of `run`, rows of the current host whose URLs were pushed last (its
    /// host and flag are not read: [`RatedBatch::start_host`] gave them): a host's rows in page
    /// order come as slices of its columns, copied a run at a time, not pushed a row at a time
    /// into six vectors.
    pub fn push_numbers(&mut self, run: &RateRun<'_>) {
        debug_assert_eq!(
            self.importance.len() + run.len(),
            self.len(),
            "one row of numbers a URL"
        );
        extend_short(&mut self.importance, run.importance);
        extend_short(&mut self.change_rate, run.change_rate);
        extend_short(&mut self.complete_obs, run.complete_obs);
        extend_short(&mut self.crawl_rate, run.crawl_rate);
        extend_short(&mut self.last_fetch_us, run.last_fetch_us);
        extend_short(&mut self.next_fetch_us, run.next_fetch_us);
    }

    /// Rows of run `k`.
    pub fn run_rows(&self, k: usize) -> std::ops::Range<usize> {
        let end = self
            .runs
            .get(k + 1)
            .map_or(self.len(), |next| next.first as usize);
        self.runs[k].first as usize..end
    }

    /// Run `k`'s rows, in the columns a rates file takes.
    pub fn rate_run(&self, k: usize) -> RateRun<'_> {
        let batch = RateRun {
            host: self.run_host(k),
            host_capped: self.runs[k].capped,
            importance: &self.importance,
            change_rate: &self.change_rate,
            complete_obs: &self.complete_obs,
            crawl_rate: &self.crawl_rate,
            last_fetch_us: &self.last_fetch_us,
            next_fetch_us: &self.next_fetch_us,
        };
        batch.rows(self.run_rows(k))
    }

    /// Host name bytes of run `k` (UTF-8: pushed from a &str).
    #[inline]
    pub fn run_host(&self, k: usize) -> &[u8] {
        let start = if k == 0 {
            0
        } else {
            self.runs[k - 1].name_end as usize
        };
        &self.host_text[start..self.runs[k].name_end as usize]
    }

    /// URL of row `i` of run `k` (UTF-8: pushed from the arranged URLs, which were read as
    /// strings).
    #[inline]
    pub fn url(&self, k: usize, i: usize) -> Url<'_> {
        let start = if i == 0 {
            0
        } else {
            self.rest_end[i - 1] as usize
        };
        let rest = &self.rest_text[start..self.rest_end[i] as usize];
        Url::new(Form::from_bits(self.form[i]), self.run_host(k), rest)
    }

    /// Bytes the batch holds on the heap (its buffers' room, used or not).
    pub fn room_bytes(&self) -> usize {
        room_bytes(&self.rest_text)
            + room_bytes(&self.rest_end)
            + room_bytes(&self.form)
            + room_bytes(&self.importance)
            + room_bytes(&self.change_rate)
            + room_bytes(&self.complete_obs)
            + room_bytes(&self.crawl_rate)
            + room_bytes(&self.last_fetch_us)
            + room_bytes(&self.next_fetch_us)
            + room_bytes(&self.runs)
            + room_bytes(&self.host_text)
    }

    /// Bytes of URL text held (to cut batches at a bounded size).
    pub fn text_bytes(&self) -> usize {
        self.rest_text.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::rates_out::NEVER_FETCHED;

    #[test]
    fn runs_cover_their_rows_and_urls_round_trip() {
        let mut b = RatedBatch::with_capacity(1, 7, 16, 2);
        let row = |importance: f64, crawl_rate: f64| RatedRow {
            importance,
            change_rate: 0.5,
            complete_obs: false,
            crawl_rate,
            last_fetch_us: i64::MIN,
            next_fetch_us: 0,
        };
        b.start_host(5, "a.example", false, 0);
        b.push(Url::new(Form::Https, b"a.example", b"/1"), row(1.0, 2.0));
        b.push(Url::new(Form::Http, b"a.example", b"/22"), row(2.0, 0.25));
        b.start_host(3, "b.example", true, 0);
        b.push(Url::whole(b"urn:b.example"), row(3.0, 0.5));
        assert_eq!(b.len(), 3);
        assert_eq!(b.run_rows(0), 0..2);
        assert_eq!(b.run_rows(1), 2..3);
        let url = |k, i| b.url(k, i).to_string_lossy();
        assert_eq!(url(0, 0), "https://a.example/1");
        assert_eq!(url(0, 1), "http://a.example/22");
        assert_eq!(url(1, 2), "urn:b.example");
        // the hosts are not held again with the URLs
        assert_eq!(b.text_bytes(), "/1/22urn:b.example".len());
        assert_eq!(b.run_host(0), b"a.example");
        assert_eq!(b.run_host(1), b"b.example");
    }

    #[test]
    fn a_run_pushed_as_columns_is_its_rows_pushed_one_by_one() {
        // runs of every length around the short copy's (value by value up to 4, then memcpy)
        for n in [1usize, 3, 4, 5, 9] {
            let at = |i: usize| i as f64 + 0.25;
            let importance: Vec<f64> = (0..n).map(at).collect();
            let change_rate: Vec<f64> = (0..n).map(|i| at(i) / 3.0).collect();
            let complete_obs: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
            let crawl_rate: Vec<f64> = (0..n).map(|i| at(i) * 7.0).collect();
            let next: Vec<i64> = (0..n as i64).map(|i| 2_000 * i + 1).collect();
            let rests: Vec<String> = (0..n).map(|i| format!("/p/{i}")).collect();
            let url = |i: usize| Url::new(Form::Https, b"a.example", rests[i].as_bytes());
            // with the last fetches known, and without (never fetched)
            for known in [true, false] {
                let last: Vec<i64> = (0..n as i64)
                    .map(|i| if known { 1_000 * i - 5 } else { NEVER_FETCHED })
                    .collect();
                let mut by_rows = RatedBatch::default();
                let mut by_run = RatedBatch::default();
                for b in [&mut by_rows, &mut by_run] {
                    b.start_host(9, "a.example", false, 2);
                }
                for i in 0..n {
                    let row = RatedRow {
                        importance: importance[i],
                        change_rate: change_rate[i],
                        complete_obs: complete_obs[i],
                        crawl_rate: crawl_rate[i],
                        last_fetch_us: last[i],
                        next_fetch_us: next[i],
                    };
                    by_rows.push(url(i), row);
                    by_run.push_url(url(i));
                }
                by_run.push_numbers(&RateRun {
                    host: b"a.example",
                    host_capped: false,
                    importance: &importance,
                    change_rate: &change_rate,
                    complete_obs: &complete_obs,
                    crawl_rate: &crawl_rate,
                    last_fetch_us: &last,
                    next_fetch_us: &next,
                });
                let encoded = |b: &RatedBatch| bincode::serialize(b).unwrap();
                assert_eq!(
                    encoded(&by_run),
                    encoded(&by_rows),
                    "{n} rows, known {known}"
                );
            }
        }
    }
}
