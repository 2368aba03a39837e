//! Advice to the kernel on how to back large arrays.

/// Bytes of a transparent huge page (x86_64 and most Linux platforms).
const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the capacity of `v` with huge pages where it can (transparent huge pages
/// in their `madvise` mode; a hint, nothing happens elsewhere). Call it before the memory is first
/// touched. For arrays written or read at random: with 4 KiB pages, each step of such a pass over
/// gigabytes misses the TLB as well as the cache. For arrays written once in order: a fault per
/// 4 KiB, each clearing its page, costs as much as a few passes of arithmetic over them.
pub fn huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let (first, last) = (
            start.next_multiple_of(HUGE_PAGE),
            end / HUGE_PAGE * HUGE_PAGE,
        );
        if last > first {
            // SAFETY: advice on pages of an allocation this Vec owns; it changes no contents.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
}
