//! Giving freed memory back to the system between phases.
//!
//! glibc's malloc keeps what a phase freed for later allocations, but it cannot hand out the holes
//! left between the rows that stay: after arranging the 10M-URL bench, 490 MiB of the resident
//! 1.2 GiB was free and kept, and the write phase grew resident memory past it rather than into it.
//! Given back, the pages are faulted in again when later phases grow. Measured on the 10M-URL
//! benches against the same build without it (median of 5): on 3.1M hosts the peak falls from
//! 234 to 199 bytes a URL for 1.6% of the run's time; on 100k hosts from 143 to 139 bytes for 8%
//! (the write phase 0.4 s slower). Memory decides how many URLs fit a machine; time only how long
//! the night is, so the trim stays. A fixed mmap threshold (every large
//! buffer its own mapping) avoids the holes too, but faulted in every buffer afresh: 30-40% slower.

/// Bytes a pass that frees buffers as it goes frees between two calls of [`give_back_freed`].
pub const GIVE_BACK_EVERY_BYTES: usize = 256 << 20;

/// Bytes of `v`'s room on the heap, used or not.
pub fn room_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// Returns the heap's free pages to the system (glibc; elsewhere, nothing to do).
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
