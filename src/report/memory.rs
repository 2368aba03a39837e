//! The process's resident memory, as Linux reports it (0 elsewhere).

/// Peak resident set size of this process, bytes.
pub fn peak_rss_bytes() -> u64 {
    proc_status_bytes("VmHWM:")
}

/// Current resident set size of this process, bytes.
pub fn rss_bytes() -> u64 {
    proc_status_bytes("VmRSS:")
}

fn proc_status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}
