//! A host's demand D_h(theta) = sum of its pages' best responses at one price, with what the
//! multiplier search needs to move: both one-sided limits at a step, the slope, the nearest steps.

use super::arena::Arena;

/// Relative half-width of the window in which step responses are smeared into a slope for Newton.
///
/// Step responses (complete observations, binary objective) have zero slope almost everywhere; a
/// staircase of many small steps still behaves like a smooth curve at the scale of a Newton step, and
/// this window estimates that curve's slope from the steps near the price.
pub const STEP_WINDOW: f64 = 0.05;

/// Demand of a set of pages at one price.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demand {
    /// Demand just above the price (right limit), fetches per day.
    pub right: f64,
    /// Demand just below the price (left limit): larger than `right` only when steps sit at the price.
    pub left: f64,
    /// d demand / d price: the smooth responses' slope plus the smeared steps near the price (<= 0).
    pub slope: f64,
    /// The smallest step price above the price (+inf if none).
    pub next_above: f64,
    /// The largest step price below the price (0 if none).
    pub next_below: f64,
}

/// Demand of host `h`'s pages at `price`, each within its box, summed in page order (deterministic).
#[inline]
pub fn demand(arena: &Arena, h: usize, price: f64) -> Demand {
    let mut d = Demand {
        right: 0.0,
        left: 0.0,
        slope: 0.0,
        next_above: f64::INFINITY,
        next_below: 0.0,
    };
    let (window_lo, window_hi) = (price / (1.0 + STEP_WINDOW), price * (1.0 + STEP_WINDOW));
    let step_density = 1.0 / (window_hi - window_lo);
    let floor = arena.host_floor(h);
    for i in arena.host_pages(h) {
        let (page, response) = (arena.page(i), arena.response[i]);
        // the floor of the box; the families clip at their own hi already
        let lo = if floor > 0.0 {
            floor.min(response.upper(page))
        } else {
            0.0
        };
        let r = response.rate(page, price);
        let jump = response.jump(page);
        d.right += r.max(lo);
        d.left += if jump.is_some() {
            response.rate_left(page, price).max(lo)
        } else {
            r.max(lo)
        };
        if r > lo {
            d.slope += response.slope(page, price, r); // the continuous part (0 for pure steps)
        }
        // a jump the floor does not swallow
        let step = jump.filter(|&step| {
            response.rate_left(page, step).max(lo) > response.rate(page, step).max(lo)
        });
        if let Some(step) = step {
            if step > price {
                d.next_above = d.next_above.min(step);
            } else if step < price {
                d.next_below = d.next_below.max(step);
            }
            if step > window_lo && step < window_hi {
                // the step's size spread over the window: the staircase's average slope
                let size =
                    response.rate_left(page, step).max(lo) - response.rate(page, step).max(lo);
                d.slope -= size * step_density;
            }
        }
    }
    d
}

/// The rate of page `i` of host `h` at the host's price, with `fill` of the step at exactly that
/// price taken, within the page's box.
#[inline]
pub fn page_rate(arena: &Arena, h: usize, i: usize, price: f64, fill: f64) -> f64 {
    let (page, response) = (arena.page(i), arena.response[i]);
    let (lo, _) = arena.bounds(h, i);
    let right = response.rate(page, price).max(lo);
    match response.jump(page) {
        Some(step) if step == price && fill > 0.0 => {
            right + fill * (response.rate_left(page, price).max(lo) - right)
        }
        _ => right,
    }
}
