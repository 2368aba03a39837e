//! A software prefetch: passes that read large arrays at random (host names in name order, URL
//! rests in page order, a row group's host dictionary in row order) wait on a cache miss per step
//! unless they ask a few steps ahead.

/// Asks the CPU to fetch the cache line at `p` (a hint: nothing happens elsewhere than x86_64).
#[inline]
pub fn prefetch_at<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults nor reads into the program.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
}
