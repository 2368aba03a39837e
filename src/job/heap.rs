//! Giving freed memory back to the system between phases.
//!
//! glibc's malloc keeps what a phase freed for later allocations, but it cannot hand out the holes
//! left between the rows that stay: after arranging the 10M-URL bench, 490 MiB of the resident
//! 1.2 GiB was free and kept, and the write phase grew resident memory past it rather than into it.
//! Given back, the pages are faulted in again when the later phases grow: on the 10M-URL benches
//! this cost the write phase about 0.3 s of 2.5 on 100k hosts and nothing measurable on 3.1M
//! hosts, whose peak it cut from 2.34-2.40 GB to 1.93-1.99 GB. A fixed mmap threshold (every large
//! buffer its own mapping) avoids the holes too, but faulted in every buffer afresh: 30-40% slower.

/// Returns the heap's free pages to the system (glibc; elsewhere, nothing to do).
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists, under its locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
