//! The pages' switch prices kappa = mu/lambda in a histogram, their change rates summed per bin:
//! the spend curve of the families whose response is lambda G(kappa/theta), from which the first
//! price of the search is guessed.
//!
//! Why: the search's first price used to be the root of a power law fitted by moments (every
//! harmonic page taken as mu/theta, every binary page as fed), 40-50% off in spend on real mixes,
//! where pages on both sides of their switch price answer differently. Newton then needed five
//! rounds, each a pass over every page and an all-reduce. Each of these families' response is the
//! page's change rate times one function of kappa/theta, so pages of similar kappa answer alike at
//! every price: with a quarter octave per bin the sketch's root is within about 1e-3 of the true
//! spend's, and the search needs three rounds (measured by `cargo bench -p revisit-core --bench
//! solve`). Change rates are summed as integers (multiples of 2^-32 per day), so the sketch, and so
//! the first price and every bit after it, is the same however the pages are split over workers.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::objective::Response;
use crate::reduce::Combine;

/// Bins per octave of kappa: the top two bits of the mantissa below the exponent.
const MANTISSA_BITS_KEPT: u32 = 2;
/// A bin is the f64 exponent and the top mantissa bits of kappa: this many bins cover every f64.
const BINS: usize = 1 << (11 + MANTISSA_BITS_KEPT);
/// Where a bin's index starts in kappa's bits.
const BIN_SHIFT: u32 = 52 - MANTISSA_BITS_KEPT;
/// Change rates are summed as integer multiples of 2^-32 per day (rates above 2^32 per day count
/// as 2^32: a guess loses only rounds).
const SCALE: f64 = 4294967296.0;
/// Pages whose switch prices [`SwitchSketch::add_pages`] computes at a time.
const RUN_CHUNK: usize = 256;
/// 2^52: the f64s from here to 2^53 are the integers.
const INTEGERS: f64 = 4503599627370496.0;

/// The families a sketch models, each as lambda G(kappa/theta) (see [`shape`]).
const FAMILIES: [Response; 4] = [
    Response::HarmonicIncomplete,
    Response::HarmonicComplete,
    Response::BinaryPoisson,
    Response::BinaryComplete,
];

/// G(x) of `family`, its response at price theta over its change rate with x = kappa/theta.
fn shape(family: Response, x: f64) -> f64 {
    match family {
        // NeurIPS'19 eq. 5's root rho (rho + lambda) = mu lambda / theta, over lambda
        Response::HarmonicIncomplete => 2.0 * x / (1.0 + (1.0 + 4.0 * x).sqrt()),
        // rho = min(lambda, mu / theta) (NeurIPS'19 Prop. 5)
        Response::HarmonicComplete => x.min(1.0),
        // rho = sqrt(mu lambda / theta) - lambda where positive (PNAS'18 eq. 5)
        Response::BinaryPoisson => (x.sqrt() - 1.0).max(0.0),
        // rho = lambda below the step price mu / lambda (NeurIPS'19 eq. 13)
        Response::BinaryComplete => (x > 1.0) as u8 as f64,
        _ => 0.0,
    }
}

/// The slot of `family` in a sketch, if the sketch models it.
fn slot(family: Response) -> Option<usize> {
    FAMILIES.iter().position(|&f| f == family)
}

/// Per modelled family, the change rates of its pages summed by bin of kappa.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SwitchSketch {
    /// Per family of [`FAMILIES`]: empty, or [`BINS`] sums in units of 2^-32 per day.
    bins: [Vec<u128>; 4],
}

impl SwitchSketch {
    /// Whether the sketch models pages of `family` (else the caller keeps them in its moments).
    pub fn models(family: Response) -> bool {
        slot(family).is_some()
    }

    /// Adds a page of `family` (one [`SwitchSketch::models`]) with importance `mu` and change rate
    /// `lambda` per day. Pages that never respond (lambda or mu not positive) add nothing.
    #[inline]
    pub fn add(&mut self, family: Response, mu: f64, lambda: f64) {
        if let Some(s) = slot(family) {
            add_to(&mut self.bins[s], mu, lambda);
        }
    }

    /// [`SwitchSketch::add`] of every page (importance and change rate columns), of `families[0]`
    /// where `complete` is false and of `families[1]` where it is true (both
    /// [`SwitchSketch::models`]), a chunk at a time. A page's bin and units do not depend on its
    /// family, only the bins they go to: taken in runs of one family, where observability
    /// alternates, each run of a few pages paid the vector loop's setup or went page by page.
    pub fn add_pages(
        &mut self,
        families: [Response; 2],
        mu: &[f64],
        lambda: &[f64],
        complete: &[bool],
    ) {
        let slots = families.map(|f| slot(f).expect("a family the sketch models"));
        let (mut bin, mut units) = ([0u64; RUN_CHUNK], [0u64; RUN_CHUNK]);
        let chunks = mu.chunks(RUN_CHUNK).zip(lambda.chunks(RUN_CHUNK));
        for ((mu, lambda), complete) in chunks.zip(complete.chunks(RUN_CHUNK)) {
            let n = mu.len();
            let (bin, units) = (&mut bin[..n], &mut units[..n]);
            let (responds, large) = bins_and_units(mu, lambda, complete, bin, units);
            if responds == [false; 2] {
                continue; // (nor bins to add to, perhaps)
            }
            // a family's bins are allocated at its first page that responds, as page by page
            for (&slot, responds) in slots.iter().zip(responds) {
                if responds && self.bins[slot].is_empty() {
                    self.bins[slot] = vec![0; BINS];
                }
            }
            // (every flag tested, without an early exit: many at a time in vector instructions)
            let mixed = complete.iter().fold(false, |m, &c| m | (c != complete[0]));
            if !mixed {
                // (the family responds: its bins are there)
                let bins = &mut self.bins[slots[complete[0] as usize]];
                for (&b, &u) in bin.iter().zip(&*units) {
                    bins[b as usize] += u as u128;
                }
            } else {
                for ((&b, &u), &c) in bin.iter().zip(&*units).zip(complete) {
                    // (a page that does not respond adds 0 units to bin 0, of bins it may not
                    // have)
                    if u > 0 {
                        self.bins[slots[c as usize]][b as usize] += u as u128;
                    }
                }
            }
            if large {
                for ((&mu, &lambda), &c) in mu.iter().zip(lambda).zip(complete) {
                    if lambda * SCALE >= INTEGERS {
                        add_to(&mut self.bins[slots[c as usize]], mu, lambda);
                    }
                }
            }
        }
    }

    /// Whether no page was added.
    pub fn is_empty(&self) -> bool {
        self.bins.iter().all(|b| b.iter().all(|&x| x == 0))
    }

    /// The modelled spend as a function of the price: each bin's pages taken at the bin's
    /// geometric centre.
    pub fn curve(&self) -> SketchCurve {
        let mut points = Vec::new();
        for (s, bins) in self.bins.iter().enumerate() {
            for (i, &sum) in bins.iter().enumerate().filter(|(_, &sum)| sum > 0) {
                let lo = f64::from_bits((i as u64) << BIN_SHIFT);
                let hi = f64::from_bits((i as u64 + 1) << BIN_SHIFT);
                points.push(Point {
                    family: FAMILIES[s],
                    lo,
                    hi,
                    lambda: sum as f64 / SCALE,
                });
            }
        }
        SketchCurve { points }
    }
}

/// Each page's bin and its rate's units into `bin` and `units`, many at a time in vector
/// instructions: 0 units for a page that never responds, and for a rate too large for the fast
/// conversion, left to [`add_to`]. Returns whether any page responds, of each family (the pages
/// `complete` marks are of the second), and whether any is that large.
#[inline(always)]
fn bins_and_units(
    mu: &[f64],
    lambda: &[f64],
    complete: &[bool],
    bin: &mut [u64],
    units: &mut [u64],
) -> ([bool; 2], bool) {
    crate::wide::wide(
        #[inline(always)]
        || {
            let (mut responds, mut large) = ([false; 2], false);
            let pages = mu.iter().zip(lambda).zip(complete);
            for (((&mu, &lambda), &second), (bin, units)) in pages.zip(bin.iter_mut().zip(units)) {
                let kappa = mu / lambda;
                let adds = lambda > 0.0 && kappa > 0.0 && kappa.is_finite();
                let v = lambda * SCALE;
                // (an integer below 2^52 plus 2^52 has the integer's bits above 2^52's;
                // wrapping, for the rates this discards: negative ones come out below)
                let fast = (v.floor() + INTEGERS)
                    .to_bits()
                    .wrapping_sub(INTEGERS.to_bits());
                *bin = if adds {
                    kappa.to_bits() >> BIN_SHIFT
                } else {
                    0
                };
                *units = if adds && v < INTEGERS { fast } else { 0 };
                responds[0] |= adds & !second;
                responds[1] |= adds & second;
                large |= adds && v >= INTEGERS;
            }
            (responds, large)
        },
    )
}

/// Adds a page to one family's `bins` (allocated at its first page that responds).
#[inline(always)]
fn add_to(bins: &mut Vec<u128>, mu: f64, lambda: f64) {
    let kappa = mu / lambda;
    if !(lambda > 0.0 && kappa > 0.0 && kappa.is_finite()) {
        return;
    }
    if bins.is_empty() {
        *bins = vec![0; BINS];
    }
    // `as` saturates: a rate beyond 2^32 per day counts as 2^32
    bins[(kappa.to_bits() >> BIN_SHIFT) as usize] += (lambda * SCALE) as u64 as u128;
}

impl Combine for SwitchSketch {
    fn combine(&mut self, other: Self) {
        for (mine, theirs) in self.bins.iter_mut().zip(other.bins) {
            if theirs.is_empty() {
                continue;
            }
            if mine.is_empty() {
                *mine = theirs;
                continue;
            }
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }
}

/// One bin of a sketch's curve.
#[derive(Clone, Copy, Debug)]
struct Point {
    family: Response,
    /// The bin's range of kappa, [lo, hi).
    lo: f64,
    hi: f64,
    /// The change rates of its pages, per day.
    lambda: f64,
}

impl Point {
    /// The bin's pages' spend at `theta`: at the bin's geometric centre, but for a step family,
    /// whose pages switch on one by one as theta falls through the bin: the share of the bin
    /// (in log) above theta, so that the curve has no jump for the guess to land on.
    fn spend(&self, theta: f64) -> f64 {
        if self.family == Response::BinaryComplete {
            let above = (self.hi / theta).ln() / (self.hi / self.lo).ln();
            return self.lambda * above.clamp(0.0, 1.0);
        }
        self.lambda * shape(self.family, (self.lo * self.hi).sqrt() / theta)
    }
}

/// A sketch's spend curve, ready to evaluate at many prices.
#[derive(Clone, Debug)]
pub struct SketchCurve {
    points: Vec<Point>,
}

impl SketchCurve {
    /// The modelled spend at `theta` > 0, fetches per day.
    pub fn spend(&self, theta: f64) -> f64 {
        self.points.iter().map(|p| p.spend(theta)).sum()
    }
}

impl Serialize for SwitchSketch {
    /// Sparse on the wire: only the bins holding pages.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sparse: Vec<Vec<(u16, u128)>> = self
            .bins
            .iter()
            .map(|bins| {
                bins.iter()
                    .enumerate()
                    .filter(|(_, &b)| b != 0)
                    .map(|(i, &b)| (i as u16, b))
                    .collect()
            })
            .collect();
        sparse.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SwitchSketch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let sparse: Vec<Vec<(u16, u128)>> = Deserialize::deserialize(d)?;
        let mut sketch = SwitchSketch::default();
        if sparse.len() != FAMILIES.len() {
            return Err(serde::de::Error::custom(
                "a sketch of another build's families",
            ));
        }
        for (bins, pairs) in sketch.bins.iter_mut().zip(sparse) {
            if pairs.is_empty() {
                continue;
            }
            *bins = vec![0; BINS];
            for (i, b) in pairs {
                let slot = bins
                    .get_mut(i as usize)
                    .ok_or_else(|| serde::de::Error::custom("sketch bin out of range"))?;
                *slot = b;
            }
        }
        Ok(sketch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::{binary, harmonic};

    #[test]
    fn each_shape_is_its_family_response_over_lambda() {
        let (mu, lambda) = (3.7, 0.45);
        for theta in [0.01, 0.5, 8.0, 9.0, 200.0] {
            let x = mu / lambda / theta;
            let cases = [
                (
                    Response::HarmonicIncomplete,
                    harmonic::incomplete_rate(mu, lambda, theta),
                ),
                (
                    Response::HarmonicComplete,
                    harmonic::complete_rate(mu, lambda, theta),
                ),
                (
                    Response::BinaryPoisson,
                    binary::poisson_rate(mu, lambda, theta),
                ),
                (
                    Response::BinaryComplete,
                    binary::complete_rate(mu, lambda, theta),
                ),
            ];
            for (family, rate) in cases {
                let modelled = lambda * shape(family, x);
                assert!(
                    (modelled - rate).abs() <= 1e-12 * rate.max(1e-300),
                    "{family:?} at {theta}: {modelled} against {rate}"
                );
            }
        }
    }

    #[test]
    fn pages_of_one_bin_are_summed_and_priced_at_its_centre() {
        let mut s = SwitchSketch::default();
        // kappa = 4.0 and 4.5: one bin [4, 5) of a quarter octave (in the mantissa), centre sqrt(20)
        s.add(Response::HarmonicComplete, 2.0, 0.5);
        s.add(Response::HarmonicComplete, 4.5, 1.0);
        let curve = s.curve();
        assert_eq!(curve.points.len(), 1);
        let p = curve.points[0];
        assert_eq!((p.lo, p.hi, p.lambda), (4.0, 5.0, 1.5));
        // far above every kappa each page takes mu/theta: the sketch takes lambda kappa_bin/theta
        assert!((curve.spend(100.0) - 1.5 * 20f64.sqrt() / 100.0).abs() < 1e-15);
        // far below, each takes lambda
        assert_eq!(curve.spend(1e-3), 1.5);
    }

    #[test]
    fn a_bin_of_steps_switches_on_across_its_width() {
        let mut s = SwitchSketch::default();
        s.add(Response::BinaryComplete, 4.0, 1.0); // kappa 4: bin [4, 5)
        let curve = s.curve();
        assert_eq!(curve.spend(5.0), 0.0);
        assert_eq!(curve.spend(4.0), 1.0);
        let mid = curve.spend(20f64.sqrt());
        assert!((mid - 0.5).abs() < 1e-15, "{mid}");
    }

    #[test]
    fn pages_that_never_respond_and_other_families_add_nothing() {
        let mut s = SwitchSketch::default();
        s.add(Response::HarmonicIncomplete, 1.0, 0.0);
        s.add(Response::BinaryPoisson, 0.0, 1.0);
        s.add(Response::Uniform, 1.0, 1.0);
        s.add(Response::BinaryComplete, f64::INFINITY, 1.0);
        assert!(s.is_empty());
        assert!(!SwitchSketch::models(Response::FixedInterval));
    }

    #[test]
    fn the_sketch_is_the_same_however_pages_are_split_and_survives_the_wire() {
        let pages: Vec<(f64, f64)> = (1..2000)
            .map(|k| (1.0 + (k as f64 * 0.37).sin().abs() * 50.0, 0.001 * k as f64))
            .collect();
        let mut whole = SwitchSketch::default();
        for &(mu, lambda) in &pages {
            whole.add(Response::BinaryPoisson, mu, lambda);
        }
        let (mut a, mut b) = (SwitchSketch::default(), SwitchSketch::default());
        for (k, &(mu, lambda)) in pages.iter().enumerate().rev() {
            let part = if k % 3 == 0 { &mut a } else { &mut b };
            part.add(Response::BinaryPoisson, mu, lambda);
        }
        let wire: SwitchSketch = bincode::deserialize(&bincode::serialize(&b).unwrap()).unwrap();
        a.combine(wire);
        assert_eq!(a, whole);
    }

    /// Chunks none of whose pages respond (pages that never change, of a family whose bins are
    /// not there yet) add nothing, before and after pages that do.
    #[test]
    fn chunks_where_no_page_responds_add_nothing() {
        let n = 3 * RUN_CHUNK;
        let mu = vec![2.0; n];
        // the first two chunks never change; the third does, but for its first page
        let lambda: Vec<f64> = (0..n)
            .map(|k| if k <= 2 * RUN_CHUNK { 0.0 } else { 0.5 })
            .collect();
        let families = [Response::HarmonicIncomplete, Response::HarmonicComplete];
        for complete in [
            vec![false; n],
            vec![true; n],
            (0..n).map(|k| k % 2 == 0).collect(),
        ] {
            let mut at_once = SwitchSketch::default();
            at_once.add_pages(families, &mu, &lambda, &complete);
            let mut each = SwitchSketch::default();
            for ((&mu, &lambda), &c) in mu.iter().zip(&lambda).zip(&complete) {
                each.add(families[c as usize], mu, lambda);
            }
            assert_eq!(at_once, each);
        }
        let mut none = SwitchSketch::default();
        none.add_pages(
            families,
            &mu[..RUN_CHUNK],
            &lambda[..RUN_CHUNK],
            &[false; RUN_CHUNK],
        );
        assert!(none.is_empty());
    }

    /// A run added at once is the same sketch as its pages one by one, whichever two families they
    /// are of and however they alternate: rates of every size (the fast conversion's range and
    /// beyond), pages that never respond, a tail past the chunks.
    #[test]
    fn pages_at_once_are_the_pages_one_by_one() {
        let (mut mu, mut lambda) = (Vec::new(), Vec::new());
        for k in 0..(2 * RUN_CHUNK + 37) {
            let x = k as f64;
            mu.push(if k % 29 == 0 {
                0.0
            } else {
                1.0 + (x * 0.61).sin().abs() * 1e3
            });
            lambda.push(match k % 7 {
                0 => 0.0,
                1 => 1.5e6 + 0.3 * x, // beyond 2^20 changes a day
                5 => 3e6 * (1.0 + x),
                2 => 1e12, // beyond 2^32: saturates
                3 => f64::INFINITY,
                4 => -2.0, // never responds
                _ => 1e-4 * (1.0 + x),
            });
        }
        // every page of one family, one page in 3 of the other, runs of 40 of each
        let patterns: [fn(usize) -> bool; 3] = [|_| false, |k| k % 3 == 1, |k| k / 40 % 2 == 1];
        for families in FAMILIES.into_iter().flat_map(|a| FAMILIES.map(|b| [a, b])) {
            for pattern in patterns {
                let complete: Vec<bool> = (0..mu.len()).map(pattern).collect();
                let mut at_once = SwitchSketch::default();
                at_once.add_pages(families, &mu, &lambda, &complete);
                let mut each = SwitchSketch::default();
                for ((&mu, &lambda), &c) in mu.iter().zip(&lambda).zip(&complete) {
                    each.add(families[c as usize], mu, lambda);
                }
                assert_eq!(at_once, each, "{families:?}");
                assert!(!at_once.is_empty());
            }
        }
    }
}
