//! A page batch's numbers checked a column at a time: each row's importance, change rate and
//! refetch bounds as a page takes them (a default where the file has no column, or where a null
//! may take it), and the first check each row fails.
//!
//! Why: row by row, each number cost a look at its column's type and nulls and a match on the
//! result, some 66 of the 218 instructions the reader's loop took a row (cachegrind, 1M URLs). A
//! column at a time, the type is matched once, a column without nulls is never asked about them,
//! and a row takes 24 to 48 fewer.

use arrow_array::Array;
use revisit_core::wide::first_failing;

use super::columns::NumberColumn;
use super::pages::{Defaults, Reason};

/// The numeric checks, in the order a row is judged by (the first it fails is its reason).
const CHECKS: [Reason; 6] = [
    Reason::ImportanceMissing,
    Reason::ImportanceInvalid,
    Reason::ChangeRateMissing,
    Reason::ChangeRateInvalid,
    Reason::MinIntervalInvalid,
    Reason::MaxIntervalInvalid,
];

/// Low bits of a verdict: 0, or the [`code`] of the first check failed.
const REASON_BITS: u8 = 0b111;

/// A failed check's code in a verdict: 1 + its index in [`CHECKS`].
const fn code(reason: Reason) -> u8 {
    let mut k = 0;
    while k < CHECKS.len() {
        if CHECKS[k] as u8 == reason as u8 {
            return k as u8 + 1;
        }
        k += 1;
    }
    panic!("not a numeric check")
}

// every check's code fits the verdict's reason bits, below the bits of the defaults
const _: () = assert!(CHECKS.len() <= REASON_BITS as usize);

/// The row's importance is the default.
const IMPORTANCE_DEFAULTED: u8 = 1 << 6;
/// The row's change rate is the default.
const CHANGE_RATE_DEFAULTED: u8 = 1 << 7;

/// What the numeric checks made of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict(u8);

impl Verdict {
    /// The first check the row fails, if any.
    #[inline]
    pub fn reason(self) -> Option<Reason> {
        match self.0 & REASON_BITS {
            0 => None,
            k => Some(CHECKS[k as usize - 1]),
        }
    }

    /// Whether the row's importance is the default.
    #[inline]
    pub fn importance_defaulted(self) -> bool {
        self.0 & IMPORTANCE_DEFAULTED != 0
    }

    /// Whether the row's change rate is the default.
    #[inline]
    pub fn change_rate_defaulted(self) -> bool {
        self.0 & CHANGE_RATE_DEFAULTED != 0
    }
}

/// A batch's numeric columns, as the pages take them; kept from batch to batch (its room reused).
#[derive(Default)]
pub struct PageNumbers {
    importance: Vec<f64>,
    change_rate: Vec<f64>,
    /// The refetch bounds, seconds (NaN: none); empty when the batch has neither column.
    min_interval_s: Vec<f64>,
    max_interval_s: Vec<f64>,
    verdicts: Vec<u8>,
}

/// A batch's numeric columns, each absent if the file has none.
#[derive(Clone, Copy)]
pub struct NumberColumns<'c, 'a> {
    pub importance: Option<&'c NumberColumn<'a>>,
    pub change_rate: Option<&'c NumberColumn<'a>>,
    pub min_interval_s: Option<&'c NumberColumn<'a>>,
    pub max_interval_s: Option<&'c NumberColumn<'a>>,
}

impl PageNumbers {
    /// Checks the `rows` rows of `columns`, each check in turn over all of them, the last
    /// (least urgent) first: a failed check overwrites the verdict of any checked before it.
    pub fn check(&mut self, rows: usize, columns: NumberColumns<'_, '_>, defaults: &Defaults) {
        self.verdicts.clear();
        self.verdicts.resize(rows, 0);
        self.check_intervals(rows, columns);
        fill(
            &mut self.change_rate,
            &mut self.verdicts,
            rows,
            Measure {
                column: columns.change_rate,
                default: defaults.change_rate,
                fills_nulls: defaults.change_rate_fills_nulls,
                valid: |v: f64| v.is_finite() && v >= 0.0,
                missing: code(Reason::ChangeRateMissing),
                invalid: code(Reason::ChangeRateInvalid),
                defaulted: CHANGE_RATE_DEFAULTED,
            },
        );
        fill(
            &mut self.importance,
            &mut self.verdicts,
            rows,
            Measure {
                column: columns.importance,
                default: defaults.importance,
                fills_nulls: defaults.importance_fills_nulls,
                valid: |v: f64| v.is_finite() && v > 0.0,
                missing: code(Reason::ImportanceMissing),
                invalid: code(Reason::ImportanceInvalid),
                defaulted: IMPORTANCE_DEFAULTED,
            },
        );
    }

    /// The refetch bounds: a null is no bound (NaN), a given one a positive number of seconds,
    /// the max no less than the min.
    fn check_intervals(&mut self, rows: usize, columns: NumberColumns<'_, '_>) {
        self.min_interval_s.clear();
        self.max_interval_s.clear();
        if columns.min_interval_s.is_none() && columns.max_interval_s.is_none() {
            return;
        }
        for (bounds, column) in [
            (&mut self.min_interval_s, columns.min_interval_s),
            (&mut self.max_interval_s, columns.max_interval_s),
        ] {
            bounds.resize(rows, f64::NAN);
            if let Some(c) = column {
                c.each(|i, v| bounds[i] = v.unwrap_or(f64::NAN));
            }
        }
        let positive = |s: f64| s.is_nan() || (s.is_finite() && s > 0.0);
        for (i, verdict) in self.verdicts.iter_mut().enumerate() {
            let (min_s, max_s) = (self.min_interval_s[i], self.max_interval_s[i]);
            if !positive(max_s) || max_s < min_s {
                *verdict = code(Reason::MaxIntervalInvalid);
            }
            if !positive(min_s) {
                *verdict = code(Reason::MinIntervalInvalid);
            }
        }
    }

    /// Row `i`'s verdict.
    #[inline]
    pub fn verdict(&self, i: usize) -> Verdict {
        Verdict(self.verdicts[i])
    }

    /// Row `i`'s importance (the default where it took it).
    #[inline]
    pub fn importance(&self, i: usize) -> f64 {
        self.importance[i]
    }

    /// Row `i`'s change rate, changes per day (the default where it took it).
    #[inline]
    pub fn change_rate(&self, i: usize) -> f64 {
        self.change_rate[i]
    }

    /// Row `i`'s refetch bounds, seconds (NaN: none).
    #[inline]
    pub fn intervals_s(&self, i: usize) -> (f64, f64) {
        match self.min_interval_s.get(i) {
            Some(&min_s) => (min_s, self.max_interval_s[i]),
            None => (f64::NAN, f64::NAN),
        }
    }
}

/// One measure's column and what its rows may take.
struct Measure<'c, 'a, V> {
    column: Option<&'c NumberColumn<'a>>,
    default: f64,
    /// Whether a null takes the default (else it is missing; a file without the column takes it
    /// either way).
    fills_nulls: bool,
    valid: V,
    /// The verdicts of a missing value and of an invalid one.
    missing: u8,
    invalid: u8,
    /// The verdict's bit for a value that is the default.
    defaulted: u8,
}

/// Fills `values` with `m`'s values of `rows` rows, setting the verdict of each row that fails.
fn fill<V: Fn(f64) -> bool>(
    values: &mut Vec<f64>,
    verdicts: &mut [u8],
    rows: usize,
    m: Measure<'_, '_, V>,
) {
    values.clear();
    if let Some(NumberColumn::F64(a)) = m.column {
        // the common column (f64s, no nulls, none failing) checked a chunk at a time and taken
        // whole, not walked a value at a time through the verdicts below (the two measures of
        // zipf-1m: 60.5M instructions that way, 8M this way)
        if a.null_count() == 0 && a.len() == rows && first_failing(a.values(), &m.valid).is_none() {
            values.extend_from_slice(a.values());
            return;
        }
    }
    values.resize(rows, m.default);
    let default_fails = !(m.valid)(m.default);
    let Some(column) = m.column else {
        for verdict in verdicts.iter_mut() {
            *verdict |= m.defaulted;
            if default_fails {
                *verdict = (*verdict & !REASON_BITS) | m.invalid;
            }
        }
        return;
    };
    column.each(|i, v| {
        let verdict = &mut verdicts[i];
        let failed = match v {
            Some(v) => {
                values[i] = v;
                (!(m.valid)(v)).then_some(m.invalid)
            }
            None if m.fills_nulls => {
                *verdict |= m.defaulted;
                default_fails.then_some(m.invalid)
            }
            None => Some(m.missing),
        };
        if let Some(k) = failed {
            *verdict = (*verdict & !REASON_BITS) | k;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Float64Array, Int32Array};
    use proptest::prelude::*;

    /// One row judged as the reader judged rows one at a time: its values (column absent: None
    /// outside, null: None inside), the checks in order.
    #[allow(clippy::type_complexity)]
    fn judged_alone(
        importance: Option<Option<f64>>,
        change_rate: Option<Option<f64>>,
        min_s: Option<f64>,
        max_s: Option<f64>,
        d: &Defaults,
    ) -> Result<(f64, bool, f64, bool, f64, f64), Reason> {
        let (mu, mu_defaulted) = match importance {
            Some(Some(v)) => (v, false),
            None => (d.importance, true),
            Some(None) if d.importance_fills_nulls => (d.importance, true),
            Some(None) => return Err(Reason::ImportanceMissing),
        };
        if !(mu.is_finite() && mu > 0.0) {
            return Err(Reason::ImportanceInvalid);
        }
        let (lambda, lambda_defaulted) = match change_rate {
            Some(Some(v)) => (v, false),
            None => (d.change_rate, true),
            Some(None) if d.change_rate_fills_nulls => (d.change_rate, true),
            Some(None) => return Err(Reason::ChangeRateMissing),
        };
        if !(lambda.is_finite() && lambda >= 0.0) {
            return Err(Reason::ChangeRateInvalid);
        }
        let (min_s, max_s) = (min_s.unwrap_or(f64::NAN), max_s.unwrap_or(f64::NAN));
        let positive = |s: f64| s.is_nan() || (s.is_finite() && s > 0.0);
        if !positive(min_s) {
            return Err(Reason::MinIntervalInvalid);
        }
        if !positive(max_s) || max_s < min_s {
            return Err(Reason::MaxIntervalInvalid);
        }
        Ok((mu, mu_defaulted, lambda, lambda_defaulted, min_s, max_s))
    }

    /// A value of any kind a number column may hold: a null, the edges, and ordinary numbers.
    fn value() -> impl Strategy<Value = Option<f64>> {
        prop_oneof![
            Just(None),
            Just(Some(0.0)),
            Just(Some(-1.0)),
            Just(Some(f64::NAN)),
            Just(Some(f64::INFINITY)),
            (1..2000i32).prop_map(|v| Some(f64::from(v))),
            (-3..3i32).prop_map(|v| Some(f64::from(v) / 2.0)),
        ]
    }

    fn defaults() -> impl Strategy<Value = Defaults> {
        let default = prop_oneof![Just(1.0), Just(0.0), Just(-2.0), Just(f64::NAN)];
        (default.clone(), any::<bool>(), default, any::<bool>()).prop_map(|(i, fi, c, fc)| {
            Defaults {
                importance: i,
                importance_fills_nulls: fi,
                change_rate: c,
                change_rate_fills_nulls: fc,
            }
        })
    }

    proptest! {
        #[test]
        fn a_column_at_a_time_judges_every_row_as_one_at_a_time(
            rows in proptest::collection::vec((value(), value(), value(), value()), 0..60),
            present in (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
            integers in any::<bool>(),
            dense in any::<bool>(),
            d in defaults(),
        ) {
            // half the cases without nulls: the columns a writer of plain floats gives
            let rows: Vec<_> = if dense {
                let given = |v: Option<f64>| v.or(Some(2.0));
                rows.iter().map(|r| (given(r.0), given(r.1), given(r.2), given(r.3))).collect()
            } else {
                rows
            };
            // the importance column as integers where asked (whole values only: the rest null)
            let importance_f64 = Float64Array::from(rows.iter().map(|r| r.0).collect::<Vec<_>>());
            let importance_i32 = Int32Array::from(
                rows.iter()
                    .map(|r| r.0.filter(|v| v.fract() == 0.0).map(|v| v as i32))
                    .collect::<Vec<_>>(),
            );
            let importance_of = |i: usize| -> Option<f64> {
                if integers {
                    rows[i].0.filter(|v| v.fract() == 0.0).map(|v| f64::from(v as i32))
                } else {
                    rows[i].0
                }
            };
            let column = |k: usize| {
                Float64Array::from(
                    rows.iter().map(|r| [r.0, r.1, r.2, r.3][k]).collect::<Vec<_>>(),
                )
            };
            let (change_rate, min_s, max_s) = (column(1), column(2), column(3));
            // a column without nulls has no null buffer: the pass that never asks about them
            prop_assert_eq!(change_rate.nulls().is_none(), dense || rows.iter().all(|r| r.1.is_some()));
            let importance_column = if integers {
                NumberColumn::I32(&importance_i32)
            } else {
                NumberColumn::F64(&importance_f64)
            };
            let (change_rate_column, min_column, max_column) = (
                NumberColumn::F64(&change_rate),
                NumberColumn::F64(&min_s),
                NumberColumn::F64(&max_s),
            );
            let columns = NumberColumns {
                importance: present.0.then_some(&importance_column),
                change_rate: present.1.then_some(&change_rate_column),
                min_interval_s: present.2.then_some(&min_column),
                max_interval_s: present.3.then_some(&max_column),
            };
            let mut numbers = PageNumbers::default();
            // twice: the second check reuses the first's room
            for _ in 0..2 {
                numbers.check(rows.len(), columns, &d);
                for (i, r) in rows.iter().enumerate() {
                    let alone = judged_alone(
                        present.0.then(|| importance_of(i)),
                        present.1.then_some(r.1),
                        r.2.filter(|_| present.2),
                        r.3.filter(|_| present.3),
                        &d,
                    );
                    let verdict = numbers.verdict(i);
                    match alone {
                        Err(reason) => prop_assert_eq!(verdict.reason(), Some(reason), "row {}", i),
                        Ok((mu, mu_d, lambda, lambda_d, min_s, max_s)) => {
                            prop_assert_eq!(verdict.reason(), None, "row {}", i);
                            prop_assert_eq!(numbers.importance(i), mu);
                            prop_assert_eq!(verdict.importance_defaulted(), mu_d);
                            prop_assert_eq!(numbers.change_rate(i), lambda);
                            prop_assert_eq!(verdict.change_rate_defaulted(), lambda_d);
                            let (got_min, got_max) = numbers.intervals_s(i);
                            prop_assert_eq!(got_min.to_bits(), min_s.to_bits());
                            prop_assert_eq!(got_max.to_bits(), max_s.to_bits());
                        }
                    }
                }
            }
        }

        #[test]
        fn a_column_of_valid_floats_is_taken_whole_and_a_bad_value_in_it_still_found(
            n in 0usize..700,
            bad in proptest::option::of((
                0usize..700,
                prop_oneof![Just(0.0), Just(-0.0), Just(-1.0), Just(f64::NAN), Just(f64::INFINITY)],
            )),
            d in defaults(),
        ) {
            // long enough to span chunks, every value valid but perhaps one (at any place)
            let mut mu: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / 8.0).collect();
            let mut lambda: Vec<f64> = (0..n).map(|i| (i % 7) as f64 / 2.0).collect();
            if let Some((at, v)) = bad.filter(|&(at, _)| at < n) {
                mu[at] = v;
                lambda[at] = v;
            }
            let (mu_column, lambda_column) =
                (Float64Array::from(mu.clone()), Float64Array::from(lambda.clone()));
            let (mu_column, lambda_column) =
                (NumberColumn::F64(&mu_column), NumberColumn::F64(&lambda_column));
            let columns = NumberColumns {
                importance: Some(&mu_column),
                change_rate: Some(&lambda_column),
                min_interval_s: None,
                max_interval_s: None,
            };
            let mut numbers = PageNumbers::default();
            numbers.check(n, columns, &d);
            for i in 0..n {
                let alone = judged_alone(Some(Some(mu[i])), Some(Some(lambda[i])), None, None, &d);
                let verdict = numbers.verdict(i);
                match alone {
                    Err(reason) => prop_assert_eq!(verdict.reason(), Some(reason), "row {}", i),
                    Ok((mu_i, _, lambda_i, _, _, _)) => {
                        prop_assert_eq!(verdict, Verdict(0), "row {}", i);
                        prop_assert_eq!(numbers.importance(i).to_bits(), mu_i.to_bits());
                        prop_assert_eq!(numbers.change_rate(i).to_bits(), lambda_i.to_bits());
                    }
                }
            }
        }
    }
}
