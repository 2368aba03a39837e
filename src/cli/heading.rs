//! The headings options are grouped under in `--help`, the same in every command, in the order a
//! crawl engineer sets them: what to read, what the bandwidth buys and how politely, what to
//! write, the timetable, where the job runs.

/// Page sets and the files that come with them; what rows without a value take.
pub const INPUT: &str = "Input";
/// The bandwidth, what it is spent on (the objective), and the hosts' politeness.
pub const BANDWIDTH: &str = "Bandwidth and politeness";
/// Where results go and in what form.
pub const OUTPUT: &str = "Output";
/// Crawler timetables and the horizon they repeat over.
pub const TIMETABLE: &str = "Timetable";
/// Worker threads, processes and machines.
pub const CLUSTER: &str = "Cluster";
/// Everything else.
pub const OTHER: &str = "Other";

/// Every heading, in the order above.
pub const ALL: [&str; 6] = [INPUT, BANDWIDTH, OUTPUT, TIMETABLE, CLUSTER, OTHER];
