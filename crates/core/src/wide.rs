//! Loops compiled for the vector instructions of the CPU they run on.
//!
//! A release build targets every x86-64, whose vector registers hold two f64; the solver's inner
//! loops are divisions and square roots, which the CPUs of this decade do on four (AVX2) or eight
//! (AVX-512) at a time. IEEE division and square root round alike at any width and Rust never
//! fuses a multiply and an add, so a loop gives the same bits compiled any way (the solver's
//! tests compare its wide loops with the per-page reference bit for bit, and `scripts/test.sh`
//! runs them at each width).
//!
//! `REVISIT_VECTORS=avx2` (or `baseline`) keeps the loops to narrower instructions than the CPU
//! has: on CPUs that slow their clock for AVX-512, and to test the narrower loops.

use std::sync::OnceLock;

/// The vector instructions the loops may use, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Width {
    /// What every x86-64 has (two f64 a register).
    Baseline,
    /// AVX2: four f64.
    Avx2,
    /// AVX-512: eight f64.
    Avx512,
}

/// The environment variable that narrows [`width`].
pub const VECTORS_VAR: &str = "REVISIT_VECTORS";

/// The widest instructions the CPU has, or narrower if [`VECTORS_VAR`] asks (checked once).
pub fn width() -> Width {
    static WIDTH: OnceLock<Width> = OnceLock::new();
    *WIDTH.get_or_init(|| {
        let cpu = cpu_width();
        let asked = std::env::var(VECTORS_VAR).unwrap_or_default();
        allowed(&asked, cpu).unwrap_or_else(|e| {
            eprintln!("revisit: {e}: using the CPU's widest ({cpu:?})");
            cpu
        })
    })
}

/// The width [`VECTORS_VAR`] set to `asked` allows on a CPU of width `cpu` (empty: the CPU's).
fn allowed(asked: &str, cpu: Width) -> Result<Width, String> {
    match asked.to_ascii_lowercase().as_str() {
        "" => Ok(cpu),
        "avx512" => Ok(cpu.min(Width::Avx512)),
        "avx2" => Ok(cpu.min(Width::Avx2)),
        "baseline" => Ok(Width::Baseline),
        _ => Err(format!(
            "{VECTORS_VAR}={asked} is none of avx512, avx2, baseline"
        )),
    }
}

/// The widest vector instructions of this CPU.
fn cpu_width() -> Width {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Width::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Width::Avx2;
        }
    }
    Width::Baseline
}

/// Runs `f`, compiled for the widest vector instructions allowed ([`width`]).
///
/// `f` should be a short loop over slices that `#[inline(always)]` lets the compiler compile into
/// each instance.
#[inline(always)]
pub fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        match width() {
            // SAFETY: the CPU has AVX-512 (width() checked it).
            Width::Avx512 => return unsafe { avx512(f) },
            // SAFETY: the CPU has AVX2 (width() checked it).
            Width::Avx2 => return unsafe { avx2(f) },
            Width::Baseline => {}
        }
    }
    f()
}

/// [`wide`] when `worth` it (a loop long enough to repay the switch), else `f` as it is.
#[inline(always)]
pub fn wide_if<R>(worth: bool, f: impl FnOnce() -> R) -> R {
    if worth {
        wide(f)
    } else {
        f()
    }
}

/// The first of `values` that is not `valid`, if any, found a chunk at a time: each chunk checked
/// whole (vector compares, no exit inside it), and only a chunk with a failing value walked again.
/// A `position` exits after every value, which keeps it to one value at a time (the importance
/// and change rates of 1M pages: 53M instructions that way, 14M this way).
pub fn first_failing(values: &[f64], valid: impl Fn(f64) -> bool) -> Option<usize> {
    const CHUNK: usize = 256;
    wide(
        #[inline(always)]
        || {
            values.chunks(CHUNK).enumerate().find_map(|(c, chunk)| {
                if chunk.iter().fold(true, |ok, &v| ok & valid(v)) {
                    return None;
                }
                chunk.iter().position(|&v| !valid(v)).map(|i| c * CHUNK + i)
            })
        },
    )
}

/// `f` inlined into a function compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `f` inlined into a function compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_narrows_and_never_widens() {
        assert_eq!(allowed("", Width::Avx2), Ok(Width::Avx2));
        assert_eq!(allowed("AVX2", Width::Avx512), Ok(Width::Avx2));
        assert_eq!(allowed("avx512", Width::Avx2), Ok(Width::Avx2));
        assert_eq!(allowed("baseline", Width::Avx512), Ok(Width::Baseline));
        let e = allowed("sse9", Width::Avx2).unwrap_err();
        assert!(
            e.contains("REVISIT_VECTORS=sse9") && e.contains("avx2"),
            "{e}"
        );
    }
}
