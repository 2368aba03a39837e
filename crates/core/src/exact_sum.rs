//! An exact, order-independent sum of f64 values (a Kulisch-style fixed-point accumulator).
//!
//! Records reach a worker in a different order on every run, and hosts land on different workers for
//! different worker counts. Float addition is not associative, so a plain sum would make the multiplier
//! differ in the 13th digit between runs. Summing exactly and rounding once makes
//! every reduction, and so every output byte, independent of partitioning and arrival order.
//!
//! Each finite f64 is (-1)^s * m * 2^(e - 1075) with an integer m < 2^53 and the biased exponent e;
//! we add m into an unsigned 128-bit bucket per sign and exponent (room for 2^74 additions per
//! bucket) and round once at the end. Positive and negative values keep buckets of their own so
//! that an addition is a mask and an add: the top 12 bits of the f64 are its bucket's index.
//! Written here rather than taken from a crate: the ones we found are either compensated (not exact)
//! or not serde-serialisable, and timely must ship partial sums between processes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of buckets: one per sign and biased exponent (subnormals in exponent 0's, weighed as
/// exponent 1's, which is what they are).
const BUCKETS: usize = 4096;
/// The exponents, and the offset of the negative values' buckets.
const EXPONENTS: usize = 2048;
/// Extra binary digits above the top bucket for the carries of up to 2^74 additions.
const HEADROOM: usize = 128;
/// The mantissa's stored bits.
const MANTISSA: u64 = (1 << 52) - 1;
/// Values [`ExactSum::add_slice`] splits at a time.
const SLICE_CHUNK: usize = 256;
/// sigma's exponent above that of a chunk's largest magnitude: the magnitude is below sigma /
/// 2^(SLICE_BITS - 1), and 2^(SLICE_BITS - 1) exceeds the chunk's length, as the extraction needs.
const SLICE_BITS: u64 = 10;
/// The lowest biased exponent of a chunk's largest magnitude that is extracted: its rests stay
/// normal numbers (below, the few values left are added one by one).
const LOWEST_EXTRACTED: u64 = 2 * 53 + SLICE_BITS;

/// An exact sum of f64 values; [`ExactSum::value`] rounds it to the nearest f64 once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactSum {
    /// None until the first non-zero finite value (cheap to create and merge when unused).
    buckets: Option<Box<[u128; BUCKETS]>>,
    /// Infinities and NaNs, summed the ordinary way (inf + -inf = NaN whatever the order).
    special: f64,
}

/// Zeroed buckets, allocated as such (64 KiB: not through the stack).
fn zeroed() -> Box<[u128; BUCKETS]> {
    vec![0u128; BUCKETS]
        .into_boxed_slice()
        .try_into()
        .expect("BUCKETS buckets")
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
        self.add_times(x, 1);
    }

    /// Adds `x` `n` times exactly, at the cost of one addition (n counts as n additions against
    /// the 2^74 a sum holds).
    #[inline(always)]
    pub fn add_times(&mut self, x: f64, n: u64) {
        let bits = x.to_bits();
        let index = (bits >> 52) as usize;
        let exponent = index & (EXPONENTS - 1);
        if exponent == EXPONENTS - 1 {
            // (n infinities or NaNs add as one)
            if n > 0 {
                self.special += x;
            }
            return;
        }
        let buckets = match &mut self.buckets {
            Some(b) => b,
            None if x == 0.0 || n == 0 => return,
            None => self.buckets.insert(zeroed()),
        };
        // subnormals (exponent 0) have no hidden bit; zeros add nothing
        let hidden = ((exponent != 0) as u64) << 52;
        let mantissa = (bits & MANTISSA) | hidden;
        buckets[index] += mantissa as u128 * n as u128;
    }

    /// Adds every value of `xs` exactly: the same sum as [`ExactSum::add`] on each, a few times
    /// faster on long slices of finite values.
    ///
    /// Why faster: a chunk of values is split exactly into parts that floating-point addition sums
    /// without error, four at a time in vector instructions (the ExtractVector of Rump, Ogita and
    /// Oishi, "Accurate floating-point summation part I", SIAM J. Sci. Comput. 31(1), 2008): with
    /// sigma a power of two at least 2^m times every |x| of a chunk of fewer than 2^m values, and
    /// no underflow, q = (sigma + x) - sigma and x - q are exact, and so is any sum of the q's.
    /// Each level takes the top 53 - m bits; the rests go round again until they are all zero, and
    /// one exact addition a level takes the q's sum. (The tests check it against [`ExactSum::add`]
    /// on values of every kind: they fail with too little headroom.)
    pub fn add_slice(&mut self, xs: &[f64]) {
        // (a call's scratch, zeroed once: for a short slice, `add_slice_mut` spares even that)
        let mut rest = [0.0; SLICE_CHUNK];
        for chunk in xs.chunks(SLICE_CHUNK) {
            self.add_chunk(Some(chunk), &mut rest[..chunk.len()]);
        }
    }

    /// [`ExactSum::add_slice`], leaving in `xs` what it likes (no copy, no scratch).
    pub fn add_slice_mut(&mut self, xs: &mut [f64]) {
        for chunk in xs.chunks_mut(SLICE_CHUNK) {
            self.add_chunk(None, chunk);
        }
    }

    /// Adds `values` (at most [`SLICE_CHUNK`] of them; None: they are in `rest`), level by level,
    /// `rest` (as long) holding what is left of them.
    fn add_chunk(&mut self, values: Option<&[f64]>, rest: &mut [f64]) {
        let mut first = values;
        let mut top = largest_magnitude(first.unwrap_or(rest));
        while top != 0.0 {
            let exponent = top.to_bits() >> 52;
            // sigma's exponent must be finite (and so every value), and the rests' well above the
            // subnormals (where the extraction is not exact): else the values left go one by one
            if !(top <= f64::MAX
                && (LOWEST_EXTRACTED..EXPONENTS as u64 - 1 - SLICE_BITS).contains(&exponent))
            {
                for &x in first.unwrap_or(rest) {
                    self.add(x);
                }
                return;
            }
            let sigma = f64::from_bits((exponent + SLICE_BITS) << 52);
            let (high, next) = match first.take() {
                Some(values) => extract(sigma, values, rest),
                None => extract_in_place(sigma, rest),
            };
            self.add(high);
            top = next;
        }
    }

    /// Adds another exact sum (the reduction's combine: associative and commutative, exactly).
    pub fn merge(&mut self, other: &ExactSum) {
        self.special += other.special;
        let Some(theirs) = &other.buckets else {
            return;
        };
        match &mut self.buckets {
            None => self.buckets = Some(theirs.clone()),
            Some(mine) => {
                for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                    *a += *b;
                }
            }
        }
    }

    /// The sum rounded to the nearest f64 (ties to even; subnormal results may round twice).
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let Some(buckets) = &self.buckets else {
            return 0.0;
        };
        // per exponent, positive minus negative (each below 2^127: the difference fits), the
        // subnormals' bucket weighed as exponent 1's
        let (positive, negative) = buckets.split_at(EXPONENTS);
        let mut signed: Vec<i128> = positive
            .iter()
            .zip(negative)
            .map(|(&p, &n)| p as i128 - n as i128)
            .collect();
        signed[1] += std::mem::take(&mut signed[0]);
        let (digits, negative) = match binary_digits(&signed, false) {
            Some(d) => (d, false),
            None => (
                binary_digits(&signed, true).expect("a negated negative sum is positive"),
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

/// One level of the extraction: splits each of `values` at `sigma` into a high part, summed into
/// the first result (exactly), and the rest, written to `rest`; the second result is the largest
/// |rest|, or NaN if a value is not finite.
#[inline(always)]
fn extract(sigma: f64, values: &[f64], rest: &mut [f64]) -> (f64, f64) {
    assert_eq!(values.len(), rest.len());
    // SAFETY: both hold values.len() f64, and they do not overlap (one is borrowed mutably).
    unsafe { extract_raw(sigma, values.as_ptr(), rest.as_mut_ptr(), values.len()) }
}

/// [`extract`] of `rest` into itself.
#[inline(always)]
fn extract_in_place(sigma: f64, rest: &mut [f64]) -> (f64, f64) {
    let at = rest.as_mut_ptr();
    // SAFETY: rest.len() f64 at `at`, read and written through the one pointer.
    unsafe { extract_raw(sigma, at, at, rest.len()) }
}

/// [`extract`] of `n` values at `from` into `to` (the same place, or apart).
///
/// # Safety
/// `from` and `to` must each be valid for `n` f64, and either equal or not overlapping.
#[inline(always)]
unsafe fn extract_raw(sigma: f64, from: *const f64, to: *mut f64, n: usize) -> (f64, f64) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::wide::{width, Width};
        match width() {
            // SAFETY: the CPU has the instructions (width() checked); the pointers as promised.
            Width::Avx512 => return unsafe { extract_avx512(sigma, from, to, n) },
            // SAFETY: as above.
            Width::Avx2 => return unsafe { extract_avx2(sigma, from, to, n) },
            Width::Baseline => {}
        }
    }
    // SAFETY: as the caller promised.
    unsafe { extract_scalar(sigma, from, to, n, 0.0, 0.0) }
}

/// [`extract_raw`] one value at a time, adding to the high parts `high` and largest rest `top` so
/// far.
///
/// # Safety
/// As [`extract_raw`].
#[inline(always)]
unsafe fn extract_scalar(
    sigma: f64,
    from: *const f64,
    to: *mut f64,
    n: usize,
    high: f64,
    top: f64,
) -> (f64, f64) {
    let (mut high, mut top) = (high, top);
    for i in 0..n {
        // SAFETY: i < n, within both.
        let x = unsafe { from.add(i).read() };
        let q = (sigma + x) - sigma;
        let r = x - q;
        // SAFETY: as above; this value was read already.
        unsafe { to.add(i).write(r) };
        high += q;
        // (a value not finite leaves a NaN rest, which stays)
        top = if r.abs() > top || r.is_nan() {
            r.abs()
        } else {
            top
        };
    }
    (high, top)
}

/// [`extract_raw`] four values at a time.
///
/// # Safety
/// As [`extract_raw`], on a CPU with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extract_avx2(sigma: f64, from: *const f64, to: *mut f64, n: usize) -> (f64, f64) {
    use std::arch::x86_64::*;
    let wide = n / 4 * 4;
    let s = _mm256_set1_pd(sigma);
    let magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    let (mut high, mut top, mut bad) = (
        _mm256_setzero_pd(),
        _mm256_setzero_pd(),
        _mm256_setzero_pd(),
    );
    for i in (0..wide).step_by(4) {
        // SAFETY: i + 4 <= n, within both; these four are read before they are written.
        let x = unsafe { _mm256_loadu_pd(from.add(i)) };
        let q = _mm256_sub_pd(_mm256_add_pd(s, x), s);
        let r = _mm256_sub_pd(x, q);
        // SAFETY: as above.
        unsafe { _mm256_storeu_pd(to.add(i), r) };
        high = _mm256_add_pd(high, q);
        top = _mm256_max_pd(top, _mm256_and_pd(r, magnitude));
        // a NaN rest (from a value not finite) marks the lane
        bad = _mm256_or_pd(bad, _mm256_cmp_pd::<_CMP_UNORD_Q>(r, r));
    }
    let (mut highs, mut tops) = ([0.0; 4], [0.0; 4]);
    // SAFETY: four f64 each.
    unsafe {
        _mm256_storeu_pd(highs.as_mut_ptr(), high);
        _mm256_storeu_pd(tops.as_mut_ptr(), top);
    }
    let largest = if _mm256_movemask_pd(bad) != 0 {
        f64::NAN
    } else {
        tops.into_iter().fold(0.0, f64::max)
    };
    // (every partial sum of the high parts is exact, so these are too)
    let high = highs.into_iter().sum::<f64>();
    // SAFETY: the tail, within both.
    unsafe { extract_scalar(sigma, from.add(wide), to.add(wide), n - wide, high, largest) }
}

/// [`extract_raw`] eight values at a time (as [`extract_avx2`]).
///
/// # Safety
/// As [`extract_raw`], on a CPU with AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extract_avx512(sigma: f64, from: *const f64, to: *mut f64, n: usize) -> (f64, f64) {
    use std::arch::x86_64::*;
    let wide = n / 8 * 8;
    let s = _mm512_set1_pd(sigma);
    let (mut high, mut top, mut bad) = (_mm512_setzero_pd(), _mm512_setzero_pd(), 0u8);
    for i in (0..wide).step_by(8) {
        // SAFETY: i + 8 <= n, within both; these eight are read before they are written.
        let x = unsafe { _mm512_loadu_pd(from.add(i)) };
        let q = _mm512_sub_pd(_mm512_add_pd(s, x), s);
        let r = _mm512_sub_pd(x, q);
        // SAFETY: as above.
        unsafe { _mm512_storeu_pd(to.add(i), r) };
        high = _mm512_add_pd(high, q);
        top = _mm512_max_pd(top, _mm512_abs_pd(r));
        bad |= _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(r, r);
    }
    let (mut highs, mut tops) = ([0.0; 8], [0.0; 8]);
    // SAFETY: eight f64 each.
    unsafe {
        _mm512_storeu_pd(highs.as_mut_ptr(), high);
        _mm512_storeu_pd(tops.as_mut_ptr(), top);
    }
    let largest = if bad != 0 {
        f64::NAN
    } else {
        tops.into_iter().fold(0.0, f64::max)
    };
    let high = highs.into_iter().sum::<f64>();
    // SAFETY: the tail, within both.
    unsafe { extract_scalar(sigma, from.add(wide), to.add(wide), n - wide, high, largest) }
}

/// The largest |x| of `xs` (NaN if one is NaN).
#[inline(always)]
fn largest_magnitude(xs: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::wide::{width, Width};
        match width() {
            // SAFETY: the CPU has the instructions (width() checked).
            Width::Avx512 => return unsafe { largest_magnitude_avx512(xs) },
            // SAFETY: as above.
            Width::Avx2 => return unsafe { largest_magnitude_avx2(xs) },
            Width::Baseline => {}
        }
    }
    largest_magnitude_scalar(xs, 0.0)
}

/// [`largest_magnitude`] of `xs` and `top`, one value at a time.
#[inline(always)]
fn largest_magnitude_scalar(xs: &[f64], top: f64) -> f64 {
    xs.iter().fold(top, |top: f64, x| {
        if x.abs() > top || x.is_nan() {
            x.abs()
        } else {
            top
        }
    })
}

/// [`largest_magnitude`] four values at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn largest_magnitude_avx2(xs: &[f64]) -> f64 {
    use std::arch::x86_64::*;
    let n = xs.len() / 4 * 4;
    let magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    let (mut top, mut bad) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    for i in (0..n).step_by(4) {
        // SAFETY: i + 4 <= n, within the slice.
        let x = unsafe { _mm256_loadu_pd(xs.as_ptr().add(i)) };
        top = _mm256_max_pd(top, _mm256_and_pd(x, magnitude));
        bad = _mm256_or_pd(bad, _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x));
    }
    if _mm256_movemask_pd(bad) != 0 {
        return f64::NAN;
    }
    let mut tops = [0.0; 4];
    // SAFETY: four f64.
    unsafe { _mm256_storeu_pd(tops.as_mut_ptr(), top) };
    largest_magnitude_scalar(&xs[n..], tops.into_iter().fold(0.0, f64::max))
}

/// [`largest_magnitude`] eight values at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn largest_magnitude_avx512(xs: &[f64]) -> f64 {
    use std::arch::x86_64::*;
    let n = xs.len() / 8 * 8;
    let (mut top, mut bad) = (_mm512_setzero_pd(), 0u8);
    for i in (0..n).step_by(8) {
        // SAFETY: i + 8 <= n, within the slice.
        let x = unsafe { _mm512_loadu_pd(xs.as_ptr().add(i)) };
        top = _mm512_max_pd(top, _mm512_abs_pd(x));
        bad |= _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x);
    }
    if bad != 0 {
        return f64::NAN;
    }
    let mut tops = [0.0; 8];
    // SAFETY: eight f64.
    unsafe { _mm512_storeu_pd(tops.as_mut_ptr(), top) };
    largest_magnitude_scalar(&xs[n..], tops.into_iter().fold(0.0, f64::max))
}

/// The binary digits (least significant first) of the non-negative total of `buckets` (one per
/// exponent, bucket e weighing 2^e), or None if it is negative.
fn binary_digits(buckets: &[i128], negate: bool) -> Option<Vec<u8>> {
    let mut digits = vec![0u8; EXPONENTS + HEADROOM];
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
        let sparse: Vec<(u16, u128)> = self
            .buckets
            .iter()
            .flat_map(|b| b.iter().enumerate())
            .filter(|(_, &b)| b != 0)
            .map(|(i, &b)| (i as u16, b))
            .collect();
        (sparse, self.special).serialize(s)
    }
}

impl<'de> Deserialize<'de> for ExactSum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (sparse, special): (Vec<(u16, u128)>, f64) = Deserialize::deserialize(d)?;
        let mut sum = ExactSum {
            buckets: None,
            special,
        };
        if !sparse.is_empty() {
            let buckets = sum.buckets.insert(zeroed());
            for (i, b) in sparse {
                let slot = buckets
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
    use proptest::prelude::*;
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

    #[test]
    fn subnormals_weigh_as_exponent_one() {
        let tiny = 2f64.powi(-1074);
        // 3 * 2^-1074 + 2^-1022 is representable: its exact sum is that number
        let s: ExactSum = [tiny, tiny, tiny, 2f64.powi(-1022)].into_iter().collect();
        assert_eq!(s.value(), 3.0 * tiny + 2f64.powi(-1022));
        let s: ExactSum = [2f64.powi(-1022), -tiny].into_iter().collect();
        assert_eq!(s.value(), 2f64.powi(-1022) - tiny);
    }

    #[test]
    fn repeated_additions_are_one() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for _ in 0..200 {
            let x = (rng.random::<f64>() - 0.5) * 10f64.powi(rng.random_range(-300..300));
            let n = rng.random_range(0..2000u64);
            let mut once = ExactSum::new();
            once.add_times(x, n);
            let mut each = ExactSum::new();
            for _ in 0..n {
                each.add(x);
            }
            assert_eq!(once.value().to_bits(), each.value().to_bits(), "{x} x {n}");
        }
        let mut s = ExactSum::new();
        s.add_times(f64::NEG_INFINITY, 3);
        assert_eq!(s.value(), f64::NEG_INFINITY);
    }

    /// Values of every kind: magnitudes over the whole range, both signs, zeros, subnormals,
    /// and, now and then, an infinity or a NaN.
    fn wild_value() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => (-1.0f64..1.0, -300i32..300).prop_map(|(m, e)| m * 10f64.powi(e)),
            4 => (0.0f64..1.0, -8i32..8).prop_map(|(m, e)| m * 2f64.powi(e)),
            2 => Just(0.0),
            1 => (1u64..1 << 52).prop_map(|m| f64::from_bits(m) * if m % 2 == 0 { 1.0 } else { -1.0 }),
            1 => (-1.0f64..1.0).prop_map(|m| m * f64::MAX),
            1 => prop_oneof![Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(f64::NAN)],
        ]
    }

    proptest! {
        /// A slice sums to the same bits as its values added one by one (two ways apart: the
        /// extraction in vector lanes and the buckets), across chunk ends and vector tails.
        #[test]
        fn a_slice_sums_as_its_values_one_by_one(
            xs in proptest::collection::vec(wild_value(), 0..700),
            narrow in proptest::collection::vec(1e-3f64..1e3, 0..700),
        ) {
            for xs in [&xs, &narrow] {
                let mut slice = ExactSum::new();
                slice.add_slice(xs);
                let mut in_place = ExactSum::new();
                in_place.add_slice_mut(&mut xs.clone());
                let each: ExactSum = xs.iter().copied().collect();
                for sum in [&slice, &in_place] {
                    let (a, b) = (sum.value(), each.value());
                    prop_assert!(
                        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                        "{a} {b}"
                    );
                }
            }
        }

        /// The vector extraction gives the scalar one's bits, rests and largest rest included.
    #[test]
    fn vector_and_scalar_extractions_agree(
        wild in proptest::collection::vec(wild_value(), 1..300),
        xs in proptest::collection::vec((-1.0f64..1.0, -300i32..300), 1..300),
    ) {
        let (top, vector) = (largest_magnitude_scalar(&wild, 0.0), largest_magnitude(&wild));
        prop_assert!(top.to_bits() == vector.to_bits() || (top.is_nan() && vector.is_nan()));
        let xs: Vec<f64> = xs.iter().map(|&(m, e)| m * 10f64.powi(e)).collect();
        let top = largest_magnitude(&xs);
        prop_assume!(top > 0.0);
        let sigma = f64::from_bits(((top.to_bits() >> 52) + SLICE_BITS) << 52);
        let (mut a, mut b) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
        let (high_a, top_a) = extract(sigma, &xs, &mut a);
        // SAFETY: xs and b hold xs.len() f64 each, apart.
        let (high_b, top_b) =
            unsafe { extract_scalar(sigma, xs.as_ptr(), b.as_mut_ptr(), xs.len(), 0.0, 0.0) };
        prop_assert_eq!(high_a.to_bits(), high_b.to_bits());
        prop_assert_eq!(top_a.to_bits(), top_b.to_bits());
        prop_assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    /// Cancellation a slice at a time: x and -x sum to the tiny values beside them exactly.
        #[test]
        fn a_slice_cancels_exactly(
            xs in proptest::collection::vec((-1.0f64..1.0, -200i32..200), 1..300),
            tiny in proptest::collection::vec(-1e-200f64..1e-200, 1..8),
        ) {
            let mut all: Vec<f64> = xs.iter().map(|&(m, e)| m * 10f64.powi(e)).collect();
            all.extend(all.clone().iter().map(|x| -x));
            all.extend(&tiny);
            let mut slice = ExactSum::new();
            slice.add_slice(&all);
            let each: ExactSum = tiny.iter().copied().collect();
            prop_assert_eq!(slice.value().to_bits(), each.value().to_bits());
        }
    }
}
