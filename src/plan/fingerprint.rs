//! What the processes of a cluster compare before any work: a fingerprint of the resolved plan,
//! the input files with their sizes and the hosts table, as (what, value) pairs, so that a
//! difference can be named ("--bandwidth: 4000 here, 8000 on process 1").

use std::path::Path;

use xxhash_rust::xxh3::xxh3_64;

use super::run::RunPlan;
use super::{Cluster, PagesPlan};
use crate::io::inputs;

/// (what, value) pairs; two processes run the same job when their fingerprints are equal.
pub type Fingerprint = Vec<(String, String)>;

/// Differences more than this are summarised.
const SHOWN: usize = 6;

/// What differs between `mine` and `theirs`, one phrase each ("X: A here, B there").
pub fn differences(mine: &Fingerprint, theirs: &Fingerprint) -> Vec<String> {
    let find =
        |f: &Fingerprint, k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let mut out = Vec::new();
    let mut keys: Vec<&String> = mine.iter().map(|(k, _)| k).collect();
    keys.extend(
        theirs
            .iter()
            .map(|(k, _)| k)
            .filter(|k| find(mine, k).is_none()),
    );
    for k in keys {
        let (a, b) = (find(mine, k), find(theirs, k));
        if a != b {
            let show = |v: Option<String>| v.unwrap_or_else(|| "absent".to_owned());
            out.push(format!("{k}: {} here, {} there", show(a), show(b)));
        }
    }
    if out.len() > SHOWN {
        let more = out.len() - SHOWN;
        out.truncate(SHOWN);
        out.push(format!("and {more} more differences"));
    }
    out
}

/// The page set as this process sees it: every input file with its size, the hosts table's size
/// and digest, the politeness defaults. An input that cannot be listed is a value too (the error),
/// so that a process without the inputs is named rather than silent.
pub fn of_pages(pages: &PagesPlan) -> Fingerprint {
    let mut f: Fingerprint = Vec::new();
    match inputs::expand(&pages.inputs) {
        Ok(files) => {
            f.push(("input files".into(), format!("{}", files.len())));
            for file in files {
                let size = std::fs::metadata(&file)
                    .map(|m| format!("{} bytes", m.len()))
                    .unwrap_or_else(|e| format!("unreadable ({e})"));
                f.push((format!("input file {}", absolute(&file)), size));
            }
        }
        Err(e) => f.push(("input files".into(), format!("error: {e:#}"))),
    }
    let hosts = match &pages.hosts {
        None => "none".to_owned(),
        Some(p) => match std::fs::read(p) {
            Ok(bytes) => format!(
                "{} ({} bytes, digest {:016x})",
                absolute(p),
                bytes.len(),
                xxh3_64(&bytes)
            ),
            Err(e) => format!("{} (unreadable: {e})", absolute(p)),
        },
    };
    f.push(("--hosts".into(), hosts));
    f.push(("--min-delay-s".into(), format!("{}", pages.default_delay.0)));
    f.push(("--horizon-s".into(), format!("{}", pages.horizon.0)));
    f.push((
        "--value-per-change".into(),
        format!("{}", pages.value_per_change),
    ));
    f.push(("--politeness-key".into(), format!("{:?}", pages.politeness)));
    f
}

/// The shape of the cluster every process must share: its threads and addresses.
pub fn of_cluster(cluster: &Cluster) -> Fingerprint {
    vec![
        ("revisit version".into(), env!("CARGO_PKG_VERSION").into()),
        (
            "-w (workers per process)".into(),
            cluster.threads.to_string(),
        ),
        ("hostfile".into(), cluster.addresses.join(" ")),
    ]
}

impl RunPlan {
    /// Everything that shapes this run's output.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut f = of_cluster(&self.cluster);
        f.extend(of_pages(&self.pages));
        f.extend([
            ("--objective".into(), self.objective.name().to_owned()),
            (
                "--bandwidth".into(),
                match self.bandwidth {
                    super::run::Bandwidth::PerDay(r) => format!("{r} fetches/day"),
                    super::run::Bandwidth::PerUrl(f) => {
                        format!("{f} x URLs (--bandwidth-fraction)")
                    }
                },
            ),
            ("--floor".into(), format!("{}", self.floor_eps)),
            ("--crawlers".into(), format!("{}", self.crawlers)),
            ("--out".into(), format!("{}", self.out.display())),
            ("--index-rate".into(), format!("{:?}", self.index)),
            ("--timetable".into(), format!("{:?}", self.timetable)),
        ]);
        f
    }
}

/// A fingerprint of any plan by its debug form (`sweep`, `evaluate`), with the page set's files.
pub fn of_plan(pages: &PagesPlan, cluster: &Cluster, plan_debug: String) -> Fingerprint {
    let mut f = of_cluster(cluster);
    f.extend(of_pages(pages));
    f.push(("options".into(), plan_debug));
    f
}

fn absolute(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_what_differs_both_ways() {
        let a: Fingerprint = vec![
            ("--bandwidth".into(), "4000".into()),
            ("--hosts".into(), "h".into()),
        ];
        let b: Fingerprint = vec![
            ("--bandwidth".into(), "8000".into()),
            ("input file x".into(), "1 bytes".into()),
        ];
        let d = differences(&a, &b);
        assert_eq!(
            d,
            vec![
                "--bandwidth: 4000 here, 8000 there".to_owned(),
                "--hosts: h here, absent there".to_owned(),
                "input file x: absent here, 1 bytes there".to_owned(),
            ]
        );
        assert!(differences(&a, &a).is_empty());
    }
}
