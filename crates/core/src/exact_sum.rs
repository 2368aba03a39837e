//! An exact, order-independent sum of f64 values (a Kulisch-style fixed-point accumulator).
//!
//! Records reach a worker in a different order on every run, and hosts land on different workers for
//! different worker counts. Float addition is not associative, so a plain sum would make the multiplier
//! differ in the 13th digit between runs. Summing exactly and rounding once makes
//! every reduction, and so every output byte, independent of partitioning and arrival order.
//!
//! Each finite f64 is m * 2^(e - 1075) with an integer m < 2^53 and the biased exponent e; we add m
//! into an i128 bucket per exponent (room for 2^74 additions per bucket) and round once at the end.
//! Written here rather than taken from a crate: the ones we found are either compensated (not exact)
//! or not serde-serialisable, and timely must ship partial sums between processes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of exponent buckets: biased exponents 1..=2046 (subnormals share bucket 1).
const BUCKETS: usize = 2047;
/// Extra binary digits above the top bucket for the carries of up to 2^74 additions.
const HEADROOM: usize = 128;

/// An exact sum of f64 values; [`ExactSum::value`] rounds it to the nearest f64 once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactSum {
    /// Empty until the first non-zero finite value (cheap to create and merge when unused).
    buckets: Vec<i128>,
    /// Infinities and NaNs, summed the ordinary way (inf + -inf = NaN whatever the order).
    special: f64,
}

impl ExactSum {
    /// An empty sum (zero).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one value exactly.
    ///
    /// Without a branch on the value's sign or normality: sums of millions of host demands (the
    /// solver's rounds) spend most of their time here.
    #[inline(always)]
    pub fn add(&mut self, x: f64) {
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as usize;
        if exponent == 0x7ff {
            self.special += x;
            return;
        }
        if self.buckets.is_empty() {
            if x == 0.0 {
                return;
            }
            self.buckets = vec![0; BUCKETS];
        }
        // subnormals (exponent 0) have no hidden bit and share bucket 1; zeros add nothing
        let hidden = ((exponent != 0) as u64) << 52;
        let mantissa = ((bits & ((1u64 << 52) - 1)) | hidden) as i128;
        let negative = -((bits >> 63) as i128); // all ones for a negative value, else 0
        self.buckets[exponent.max(1)] += (mantissa ^ negative) - negative;
    }

    /// Adds another exact sum (the reduction's combine: associative and commutative, exactly).
    pub fn merge(&mut self, other: &ExactSum) {
        self.special += other.special;
        if other.buckets.is_empty() {
            return;
        }
        if self.buckets.is_empty() {
            self.buckets = other.buckets.clone();
            return;
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += *b;
        }
    }

    /// The sum rounded to the nearest f64 (ties to even; subnormal results may round twice).
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        if self.buckets.is_empty() {
            return 0.0;
        }
        let (digits, negative) = match binary_digits(&self.buckets, false) {
            Some(d) => (d, false),
            None => (
                binary_digits(&self.buckets, true).expect("a negated negative sum is positive"),
                true,
            ),
        };
        let Some(top) = digits.iter().rposition(|&d| d == 1) else {
            return 0.0;
        };
        let digit = |i: isize| if i >= 0 { digits[i as usize] as u64 } else { 0 };
        let top = top as isize;
        let mut mantissa = 0u64;
        for k in 0..53 {
            mantissa |= digit(top - k) << (52 - k);
        }
        let round = digit(top - 53) == 1;
        let sticky = (0..(top - 53).max(0)).any(|i| digits[i as usize] == 1);
        let mut exponent = top - 52 - 1075;
        if round && (sticky || mantissa & 1 == 1) {
            mantissa += 1;
            if mantissa == 1u64 << 53 {
                mantissa >>= 1;
                exponent += 1;
            }
        }
        let half = (exponent / 2) as i32;
        let magnitude = mantissa as f64 * 2f64.powi(half) * 2f64.powi(exponent as i32 - half);
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// The binary digits (least significant first) of the non-negative total, or None if it is negative.
fn binary_digits(buckets: &[i128], negate: bool) -> Option<Vec<u8>> {
    let mut digits = vec![0u8; BUCKETS + HEADROOM];
    let mut carry: i128 = 0;
    for (i, d) in digits.iter_mut().enumerate() {
        let b = buckets.get(i).copied().unwrap_or(0);
        let v = carry + if negate { -b } else { b };
        *d = (v & 1) as u8;
        carry = v >> 1; // arithmetic shift: floor division, so digits stay 0/1 for negative v
    }
    (carry == 0).then_some(digits)
}

impl Serialize for ExactSum {
    /// Sparse on the wire: only non-zero buckets travel between processes.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sparse: Vec<(u16, i128)> = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, &b)| (i as u16, b))
            .collect();
        (sparse, self.special).serialize(s)
    }
}

impl<'de> Deserialize<'de> for ExactSum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (sparse, special): (Vec<(u16, i128)>, f64) = Deserialize::deserialize(d)?;
        let mut sum = ExactSum {
            buckets: Vec::new(),
            special,
        };
        if !sparse.is_empty() {
            sum.buckets = vec![0; BUCKETS];
            for (i, b) in sparse {
                let slot = sum
                    .buckets
                    .get_mut(i as usize)
                    .ok_or_else(|| serde::de::Error::custom("bucket out of range"))?;
                *slot = b;
            }
        }
        Ok(sum)
    }
}

impl FromIterator<f64> for ExactSum {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Self {
        let mut s = ExactSum::new();
        for x in iter {
            s.add(x);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};

    #[test]
    fn cancellation_is_exact() {
        let s: ExactSum = [1e100, 1.0, -1e100, 2f64.powi(-1074)].into_iter().collect();
        assert_eq!(s.value(), 1.0);
        let s: ExactSum = [1e100, -1.0, -1e100].into_iter().collect();
        assert_eq!(s.value(), -1.0);
        let s: ExactSum = [0.1, 0.2, -0.3].into_iter().collect();
        // Fraction(0.1) + Fraction(0.2) - Fraction(0.3) in Python is exactly 1/2^55; naive f64 gives 2^-54.
        assert_eq!(s.value(), 2f64.powi(-55));
    }

    #[test]
    fn equals_integer_arithmetic_and_ignores_order() {
        // Values k / 2^30 with integer k: their exact sum is an integer computation.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let ks: Vec<i64> = (0..10_000)
            .map(|_| rng.random_range(-(1i64 << 40)..(1i64 << 40)))
            .collect();
        let exact: i128 = ks.iter().map(|&k| k as i128).sum();
        let scale = 2f64.powi(-30);
        let mut xs: Vec<f64> = ks.iter().map(|&k| k as f64 * scale).collect();
        let want = exact as f64 * scale;
        for _ in 0..5 {
            xs.shuffle(&mut rng);
            let s: ExactSum = xs.iter().copied().collect();
            assert_eq!(s.value().to_bits(), want.to_bits());
        }
    }

    #[test]
    fn merge_equals_one_sum_and_survives_serialisation() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let xs: Vec<f64> = (0..1000)
            .map(|_| rng.random::<f64>() * 10f64.powi(rng.random_range(-20..20)))
            .collect();
        let whole: ExactSum = xs.iter().copied().collect();
        let mut a: ExactSum = xs[..300].iter().copied().collect();
        let b: ExactSum = xs[300..].iter().copied().collect();
        let b: ExactSum = bincode::deserialize(&bincode::serialize(&b).unwrap()).unwrap();
        a.merge(&b);
        assert_eq!(a.value().to_bits(), whole.value().to_bits());
        let naive: f64 = xs.iter().sum();
        assert!(((whole.value() - naive) / naive).abs() < 1e-13);
    }

    #[test]
    fn rounds_to_nearest_even() {
        // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: rounds to even (1).
        let s: ExactSum = [1.0, 2f64.powi(-53)].into_iter().collect();
        assert_eq!(s.value(), 1.0);
        let s: ExactSum = [1.0, 2f64.powi(-53), 2f64.powi(-80)].into_iter().collect();
        assert_eq!(s.value(), 1.0 + 2f64.powi(-52));
        let s: ExactSum = [f64::MAX, f64::MAX].into_iter().collect();
        assert_eq!(s.value(), f64::INFINITY);
        let s: ExactSum = [f64::INFINITY, 1.0].into_iter().collect();
        assert_eq!(s.value(), f64::INFINITY);
    }
}
