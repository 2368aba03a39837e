//! The solver's input: pages in columns, grouped by host, each host with its politeness cap.

use crate::objective::Response;

/// Pages grouped by host, in columns (the hot data of the solve: 17 bytes per page).
///
/// Pages of host `h` are `offsets[h]..offsets[h + 1]`; their order inside a host is canonical (sorted
/// by URL) so that per-host sums, and hence every result, do not depend on arrival order.
#[derive(Clone, Debug, Default)]
pub struct Arena {
    /// Importance mu > 0 of each page.
    pub importance: Vec<f64>,
    /// Change rate lambda >= 0 of each page, changes per day.
    pub change_rate: Vec<f64>,
    /// Best-response family of each page (objective x observability).
    pub response: Vec<Response>,
    /// Page index boundaries of the hosts (len = hosts + 1).
    pub offsets: Vec<usize>,
    /// Politeness cap of each host, fetches per day.
    pub cap: Vec<f64>,
}

impl Arena {
    /// An arena with no hosts.
    pub fn new() -> Self {
        Arena {
            offsets: vec![0],
            ..Default::default()
        }
    }

    /// Appends one host with its pages `(importance, change_rate, response)` and its cap per day.
    pub fn push_host(
        &mut self,
        cap_per_day: f64,
        pages: impl IntoIterator<Item = (f64, f64, Response)>,
    ) {
        for (mu, lambda, response) in pages {
            self.importance.push(mu);
            self.change_rate.push(lambda);
            self.response.push(response);
        }
        self.offsets.push(self.importance.len());
        self.cap.push(cap_per_day);
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.cap.len()
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.importance.len()
    }

    /// Page index range of host `h`.
    #[inline]
    pub fn host_pages(&self, h: usize) -> std::ops::Range<usize> {
        self.offsets[h]..self.offsets[h + 1]
    }
}
