//! One row per URL however the rows spell their hosts and however many workers run: the first row
//! of a URL by (file, row) is scheduled under its own key, every later row is rejected as
//! `duplicate_url`. Checked against the rule applied directly to random rows in which URLs repeat
//! under their own host (as given, spelled otherwise, or absent) and under other hosts, for each
//! politeness key.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const HOSTS: usize = 4;
const FILES: usize = 3;

/// A page row as written: URL, host column (None: null), ip column.
struct Row {
    url: String,
    host: Option<String>,
    ip: String,
}

/// The key `policy` gives a row, as the test computes it for its own hosts (`hK.example`, a
/// registrable domain of its own, spelled with any case and port).
fn key_of(policy: &str, row: &Row) -> String {
    if policy == "ip-column" {
        return row.ip.clone();
    }
    let host = row.host.clone().unwrap_or_else(|| {
        let authority = row.url.trim_start_matches("https://");
        authority.split('/').next().unwrap().to_owned()
    });
    host.split(':').next().unwrap().to_ascii_lowercase()
}

/// `rows` random rows on a pool of URLs: each URL's own host as given, spelled in other case with a
/// port, absent, or another host altogether.
fn random_rows(rng: &mut ChaCha8Rng, rows: usize) -> Vec<Row> {
    (0..rows)
        .map(|_| {
            let own = rng.random_range(0..HOSTS);
            // some URLs spell their host in capitals
            let spelled = if rng.random_bool(0.2) {
                format!("H{own}.Example")
            } else {
                format!("h{own}.example")
            };
            let url = format!("https://{spelled}/{}", rng.random_range(0..4));
            let host = match rng.random_range(0..4) {
                0 => None,
                1 => Some(format!("h{own}.example")),
                2 => Some(format!("H{own}.EXAMPLE:8080")),
                _ => Some(format!("h{}.example", rng.random_range(0..HOSTS))),
            };
            let ip = format!("10.0.0.{}", rng.random_range(0..HOSTS));
            Row { url, host, ip }
        })
        .collect()
}

#[test]
fn a_url_is_kept_once_by_its_first_row_whatever_its_hosts_say_and_whatever_the_workers() {
    for seed in 0..3 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let tmp = tempfile::tempdir().unwrap();
        // rows in files part-0 .. part-2, so (file, row) order is the order they are drawn in
        let files: Vec<Vec<Row>> = (0..FILES)
            .map(|_| {
                let n = rng.random_range(5..40);
                random_rows(&mut rng, n)
            })
            .collect();
        for (f, rows) in files.iter().enumerate() {
            let urls: Vec<Option<&str>> = rows.iter().map(|r| Some(r.url.as_str())).collect();
            let hosts: Vec<Option<&str>> = rows.iter().map(|r| r.host.as_deref()).collect();
            let ips: Vec<Option<&str>> = rows.iter().map(|r| Some(r.ip.as_str())).collect();
            write_pages(
                &tmp.path().join(format!("pages/part-{f}.parquet")),
                vec![
                    ("url", strings(&urls)),
                    ("host", strings(&hosts)),
                    ("ip", strings(&ips)),
                    ("importance", floats(&vec![Some(1.0); rows.len()])),
                    ("change_rate", floats(&vec![Some(1.0); rows.len()])),
                ],
            );
        }
        for policy in ["host", "domain", "ip-column"] {
            // the rule itself: each URL's first row, under its key; every later row a duplicate
            let mut kept: BTreeMap<&str, String> = BTreeMap::new();
            let mut duplicates = BTreeSet::new();
            for (f, rows) in files.iter().enumerate() {
                for (r, row) in rows.iter().enumerate() {
                    if kept.contains_key(row.url.as_str()) {
                        duplicates.insert((format!("part-{f}.parquet"), r as i64));
                    } else {
                        kept.insert(&row.url, key_of(policy, row));
                    }
                }
            }
            for workers in ["1", "2", "3", "4"] {
                let out = tmp.path().join(format!("out-{policy}-{workers}"));
                run_ok(&[
                    "run",
                    tmp.path().join("pages").to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                    "--politeness-key",
                    policy,
                    "--bandwidth",
                    "1000",
                    "--max-reject-share",
                    "1",
                    "-q",
                    "-w",
                    workers,
                ]);
                let context = format!("seed {seed}, --politeness-key {policy}, {workers} workers");
                let rates = read_rates(&out);
                assert_eq!(rates.len(), kept.len(), "{context}: one row per URL");
                let scheduled: BTreeMap<String, String> =
                    rates.into_iter().map(|r| (r.url, r.host)).collect();
                let want: BTreeMap<String, String> = kept
                    .iter()
                    .map(|(u, k)| (u.to_string(), k.clone()))
                    .collect();
                assert_eq!(scheduled, want, "{context}");
                let rejected: BTreeSet<(String, i64)> = read_rejected(&out)
                    .into_iter()
                    .map(|(file, row, reason, _)| {
                        assert_eq!(reason, "duplicate_url", "{context}");
                        (file.rsplit('/').next().unwrap().to_owned(), row)
                    })
                    .collect();
                assert_eq!(rejected, duplicates, "{context}");
            }
        }
    }
}
