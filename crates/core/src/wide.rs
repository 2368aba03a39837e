//! Loops compiled for the vector instructions of the CPU they run on.
//!
//! A release build targets every x86-64, whose vector registers hold two f64; the solver's inner
//! loops are divisions and square roots, which the CPUs of this decade do on four at a time
//! (AVX2). IEEE division and square root round alike at any width and Rust never fuses a multiply
//! and an add, so a loop gives the same bits compiled either way (the solver's tests compare its
//! wide loops with the per-page reference bit for bit).

/// Runs `f`, compiled for AVX2 where the CPU has it (checked once; elsewhere as it is).
///
/// `f` should be a short loop over slices that `#[inline(always)]` lets the compiler compile into
/// the AVX2 instance.
#[inline(always)]
pub fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { avx2(f) };
        }
    }
    f()
}

/// Whether the CPU has AVX2 (checked once), for loops written with its instructions.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
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

/// `f` inlined into a function compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}
