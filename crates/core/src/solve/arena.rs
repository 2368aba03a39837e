//! The solver's input: pages in columns, grouped by host, each host with its politeness cap.

use crate::objective::{Page, Response};

/// Pages grouped by host, in columns (the hot data of the solve: 17 bytes per page).
///
/// Pages of host `h` are `offsets[h]..offsets[h + 1]`; their order inside a host is canonical (sorted
/// by URL) so that per-host sums, and hence every result, do not depend on arrival order.
///
/// Each page's rate lies in its box [lo, hi] (DESIGN §2): hi is its family's largest useful rate
/// ([`Response::upper`]), lo = min(floor of its host, hi). Floors are per host, not per page, to keep
/// the arena small: one level per host suffices for BLC-eps's uniform floor (see [`Arena::set_floor`]).
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
    /// Least rate of every page of each host, fetches per day (empty: no floors).
    pub floor: Vec<f64>,
    /// Slot of the discrete-time model, days (one fetch per slot: 1 / bandwidth); read only by
    /// [`Response::BinaryDiscrete`] pages, and must then be set (> 0) before solving.
    pub slot_days: f64,
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

    /// Page `i` as its response sees it.
    #[inline]
    pub fn page(&self, i: usize) -> Page {
        Page {
            importance: self.importance[i],
            change_rate: self.change_rate[i],
            slot_days: self.slot_days,
        }
    }

    /// The floor level of host `h`, fetches per day per page (0 without floors).
    #[inline]
    pub fn host_floor(&self, h: usize) -> f64 {
        self.floor.get(h).copied().unwrap_or(0.0)
    }

    /// The box [lo, hi] of page `i` of host `h`, fetches per day.
    #[inline]
    pub fn bounds(&self, h: usize, i: usize) -> (f64, f64) {
        let hi = self.response[i].upper(self.page(i));
        (self.host_floor(h).min(hi), hi)
    }

    /// Gives every page a least rate of `floor_per_day` (BLC-eps: eps R / |W|), never above what the
    /// page can use (its hi) nor, summed over a host, above the host's cap.
    ///
    /// A host whose pages' floors would exceed its cap gets the highest level l with
    /// sum_i min(l, hi_i) = cap (water-filling), lowered by 1e-12 relative: politeness is a hard
    /// limit and the floor a soft guarantee, and the small margin keeps the host's demand crossing its
    /// cap at a finite price, so its own multiplier stays well defined. The total of the floors is then
    /// at most floor_per_day x pages, which the caller keeps below the bandwidth (eps < 1).
    pub fn set_floor(&mut self, floor_per_day: f64) {
        let mut levels = Vec::with_capacity(self.hosts());
        for h in 0..self.hosts() {
            let his: Vec<f64> = self
                .host_pages(h)
                .map(|i| self.response[i].upper(self.page(i)))
                .collect();
            let at = |level: f64| -> f64 { his.iter().map(|&hi| hi.min(level)).sum() };
            let cap = self.cap[h];
            if floor_per_day <= 0.0 || at(floor_per_day) <= cap {
                levels.push(floor_per_day.max(0.0));
                continue;
            }
            // water-fill: pages with hi below the level are at hi, the others share what is left
            let mut sorted = his;
            sorted.sort_by(f64::total_cmp);
            let mut room = cap;
            let mut level = 0.0;
            for (k, &hi) in sorted.iter().enumerate() {
                let share = room / (sorted.len() - k) as f64;
                if hi >= share {
                    level = share;
                    break;
                }
                room -= hi;
            }
            levels.push(level * (1.0 - 1e-12));
        }
        self.floor = levels;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_fit_the_caps_by_water_filling() {
        let mut a = Arena::new();
        let complete = Response::BinaryComplete; // hi = lambda
        a.push_host(
            10.0,
            [
                (1.0, 0.5, Response::BinaryPoisson),
                (1.0, 0.5, Response::BinaryPoisson),
            ],
        );
        a.push_host(
            1.0,
            [
                (1.0, 0.1, complete),
                (1.0, 5.0, Response::BinaryPoisson),
                (1.0, 5.0, Response::BinaryPoisson),
            ],
        );
        a.push_host(5.0, [(1.0, 0.0, Response::BinaryPoisson)]);
        a.set_floor(2.0);
        assert_eq!(a.host_floor(0), 2.0);
        // host 1: 0.1 at its hi, 0.45 each for the other two
        assert!((a.host_floor(1) - 0.45).abs() < 1e-12);
        assert!(a.host_floor(1) < 0.45);
        assert_eq!(a.bounds(1, 2), (0.1, 0.1));
        // a page that never changes has nothing to gain: its box is [0, 0]
        assert_eq!(a.bounds(2, 5), (0.0, 0.0));
    }
}
