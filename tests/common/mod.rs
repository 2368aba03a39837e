//! Helpers for the end-to-end tests: run the binary with a timeout, read its Parquet output.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow_schema::{Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::sync::Arc;

pub const BIN: &str = env!("CARGO_BIN_EXE_revisit");

/// Longest a single run may take in a test before it counts as a hang.
pub const TIMEOUT: Duration = Duration::from_secs(120);

pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("REVISIT_FAIL_AT")
        .env_remove("REVISIT_ARRANGE_PART_BYTES");
    c
}

/// Waits for `child`, killing it after `timeout`; panics on a hang.
pub fn wait(mut child: Child, timeout: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("waiting for revisit").is_some() {
            return child.wait_with_output().expect("collecting output");
        }
        if start.elapsed() > timeout {
            child.kill().ok();
            let out = child.wait_with_output().expect("collecting output");
            panic!(
                "revisit hung for {timeout:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs revisit to completion (with the timeout).
pub fn run(args: &[&str]) -> Output {
    wait(command(args).spawn().expect("starting revisit"), TIMEOUT)
}

/// Runs revisit and asserts success.
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "revisit {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Generates a page set into `dir`.
pub fn gen(dir: &Path, urls: u64, hosts: u64, extra: &[&str]) {
    let mut args = vec!["gen", "--out", dir.to_str().unwrap()];
    let (u, h) = (urls.to_string(), hosts.to_string());
    args.extend(["--urls", &u, "--host-count", &h]);
    args.extend(extra);
    run_ok(&args);
}

/// The Python interpreter of the consumer checks: REVISIT_PYTHON (a relative path is taken from
/// the repository root, whatever folder it then runs in), else python3.
pub fn python() -> String {
    match std::env::var("REVISIT_PYTHON") {
        Ok(p) if p.contains('/') && Path::new(&p).is_relative() => std::env::current_dir()
            .unwrap()
            .join(p)
            .display()
            .to_string(),
        Ok(p) => p,
        Err(_) => "python3".into(),
    }
}

/// Free TCP ports on the loopback interface (bound then released).
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Writes a hostfile for `n` processes on fresh local ports.
pub fn hostfile(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("hostfile");
    let lines: Vec<String> = free_ports(n)
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

/// Runs `n` processes of one job; returns their outputs.
pub fn run_cluster(n: usize, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<Output> {
    let hf = hostfile(dir, n);
    let children: Vec<Child> = (0..n)
        .map(|p| {
            let mut c = command(args);
            c.args([
                "-n",
                &n.to_string(),
                "-p",
                &p.to_string(),
                "--hostfile",
                hf.to_str().unwrap(),
            ]);
            for (k, v) in env {
                c.env(k, v);
            }
            c.spawn().expect("starting a process")
        })
        .collect();
    children.into_iter().map(|c| wait(c, TIMEOUT)).collect()
}

/// All record batches of a Parquet file.
pub fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// A rates row.
#[derive(Clone, Debug, PartialEq)]
pub struct RateRow {
    pub url: String,
    pub host: String,
    pub importance: f64,
    pub change_rate: f64,
    pub complete_obs: bool,
    pub crawl_rate: f64,
    pub crawl_probability: Option<f64>,
    pub host_capped: bool,
    pub crawler: u32,
}

/// Every rates row of an output folder, with its crawler from the partition folder name.
pub fn read_rates(out: &Path) -> Vec<RateRow> {
    let mut rows = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(out.join("rates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let crawler: u32 = name.strip_prefix("crawler=").unwrap().parse().unwrap();
        for file in std::fs::read_dir(&dir).unwrap() {
            for b in read_parquet(&file.unwrap().path()) {
                let s = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
                let f = |c: &str| {
                    b.column_by_name(c)
                        .unwrap()
                        .as_primitive::<Float64Type>()
                        .clone()
                };
                let t = |c: &str| b.column_by_name(c).unwrap().as_boolean().clone();
                let (url, host, mu, lambda, rate, prob) = (
                    s("url"),
                    s("host"),
                    f("importance"),
                    f("change_rate"),
                    f("crawl_rate"),
                    f("crawl_probability"),
                );
                let (complete, capped) = (t("complete_obs"), t("host_capped"));
                for i in 0..b.num_rows() {
                    rows.push(RateRow {
                        url: url.value(i).to_owned(),
                        host: host.value(i).to_owned(),
                        importance: mu.value(i),
                        change_rate: lambda.value(i),
                        complete_obs: complete.value(i),
                        crawl_rate: rate.value(i),
                        crawl_probability: prob.is_valid(i).then(|| prob.value(i)),
                        host_capped: capped.value(i),
                        crawler,
                    });
                }
            }
        }
    }
    rows
}

/// A hosts row.
#[derive(Clone, Debug, PartialEq)]
pub struct HostRow {
    pub host: String,
    pub crawler: i32,
    /// Fetches per horizon; infinite where the table holds null (no limit).
    pub cap: f64,
    /// Fetches per horizon at the global multiplier; NaN where the table holds null.
    pub demand: f64,
    pub budget: f64,
    pub capped: bool,
    pub multiplier: f64,
}

pub fn read_hosts(out: &Path) -> BTreeMap<String, HostRow> {
    let mut rows = BTreeMap::new();
    for b in read_parquet(&out.join("hosts/part-00000.parquet")) {
        let host = b.column_by_name("host").unwrap().as_string::<i32>().clone();
        let crawler = b
            .column_by_name("crawler")
            .unwrap()
            .as_primitive::<Int32Type>()
            .clone();
        let f = |c: &str| {
            b.column_by_name(c)
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone()
        };
        let capped = b.column_by_name("capped").unwrap().as_boolean().clone();
        let (cap, demand, budget, mult) = (f("cap"), f("demand"), f("budget"), f("multiplier"));
        for i in 0..b.num_rows() {
            rows.insert(
                host.value(i).to_owned(),
                HostRow {
                    host: host.value(i).to_owned(),
                    crawler: crawler.value(i),
                    // null: the host has no cap (a zero delay), its demand no meaning
                    cap: if cap.is_null(i) {
                        f64::INFINITY
                    } else {
                        cap.value(i)
                    },
                    demand: if demand.is_null(i) {
                        f64::NAN
                    } else {
                        demand.value(i)
                    },
                    budget: budget.value(i),
                    capped: capped.value(i),
                    multiplier: mult.value(i),
                },
            );
        }
    }
    rows
}

/// (file, row, reason) of every rejected row.
pub fn read_rejected(out: &Path) -> Vec<(String, i64, String, String)> {
    let mut rows = Vec::new();
    for b in read_parquet(&out.join("rejected/part-00000.parquet")) {
        let s = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
        let row = b
            .column_by_name("row")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone();
        let (file, reason, column) = (s("file"), s("reason"), s("column"));
        for i in 0..b.num_rows() {
            rows.push((
                file.value(i).to_owned(),
                row.value(i),
                reason.value(i).to_owned(),
                column.value(i).to_owned(),
            ));
        }
    }
    rows
}

pub fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// A file of an output folder as two runs that should agree are compared: a Parquet file by its
/// schema, rows, row groups and key-value metadata, but for the keys that name the run (its id,
/// start time and options, which differ from run to run); any other file by its bytes.
#[derive(Debug, PartialEq)]
pub enum Content {
    Parquet {
        batches: Vec<RecordBatch>,
        row_groups: Vec<i64>,
        metadata: BTreeMap<String, String>,
    },
    Bytes(Vec<u8>),
}

/// The key-value metadata that differs between two runs of the same job.
pub const RUN_KEYS: [&str; 3] = ["revisit.run_id", "revisit.started_at", "revisit.options"];

/// Every table file of an output folder as [`Content`] (not the run-specific summary and
/// manifest): equal for two runs of the same job on any number of workers and processes.
pub fn table_contents(out: &Path) -> BTreeMap<String, Content> {
    table_bytes(out)
        .into_iter()
        .map(|(name, bytes)| {
            if !name.ends_with(".parquet") {
                return (name, Content::Bytes(bytes));
            }
            let path = out.join(&name);
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
            let meta = builder.metadata().clone();
            let row_groups = meta.row_groups().iter().map(|g| g.num_rows()).collect();
            let metadata = meta
                .file_metadata()
                .key_value_metadata()
                .into_iter()
                .flatten()
                .filter(|kv| !RUN_KEYS.contains(&kv.key.as_str()))
                .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
                .collect();
            let batches = builder.build().unwrap().map(|b| b.unwrap()).collect();
            (
                name,
                Content::Parquet {
                    batches,
                    row_groups,
                    metadata,
                },
            )
        })
        .collect()
}

/// A summary or report without what differs between two runs of the same job: timings, the run's
/// identity, and the cluster's shape (workers and their shares of the pages, in the summary;
/// workers among the options).
pub fn without_run(mut v: serde_json::Value) -> serde_json::Value {
    let o = v.as_object_mut().unwrap();
    for key in [
        "seconds",
        "seconds_cpu",
        "workers",
        "worker_pages_max_over_mean",
        "run_id",
        "started_at",
        "peak_rss_bytes",
    ] {
        o.remove(key);
    }
    if let Some(options) = o.get_mut("options").and_then(|x| x.as_object_mut()) {
        options.remove("workers");
    }
    v
}

/// Every file of an output folder with its bytes, except the run-specific summary and manifest.
pub fn table_bytes(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for sub in ["rates", "hosts", "rejected", "visits"] {
        collect(&out.join(sub), out, &mut files);
    }
    files
}

fn collect(dir: &Path, root: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, root, files);
        } else {
            files.insert(
                p.strip_prefix(root).unwrap().display().to_string(),
                std::fs::read(&p).unwrap(),
            );
        }
    }
}

/// (url, host, importance, change_rate, complete_obs) of every input row.
pub fn read_pages(data: &std::path::Path) -> Vec<(String, String, f64, f64, bool)> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    let mut rows = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(data.join("pages"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        for b in read_parquet(&f) {
            let url = b.column_by_name("url").unwrap().as_string::<i32>().clone();
            let host = b.column_by_name("host").unwrap().as_string::<i32>().clone();
            let mu = b
                .column_by_name("importance")
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone();
            let l = b
                .column_by_name("change_rate")
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone();
            let c = b
                .column_by_name("complete_obs")
                .unwrap()
                .as_boolean()
                .clone();
            for i in 0..b.num_rows() {
                rows.push((
                    url.value(i).to_owned(),
                    host.value(i).to_owned(),
                    mu.value(i),
                    l.value(i),
                    c.value(i),
                ));
            }
        }
    }
    rows
}

pub fn read_delays(data: &std::path::Path) -> HashMap<String, f64> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;
    let mut d = HashMap::new();
    for b in read_parquet(&data.join("hosts.parquet")) {
        let host = b.column_by_name("host").unwrap().as_string::<i32>().clone();
        let delay = b
            .column_by_name("min_delay_s")
            .unwrap()
            .as_primitive::<Float64Type>()
            .clone();
        for i in 0..b.num_rows() {
            d.insert(host.value(i).to_owned(), delay.value(i));
        }
    }
    d
}

/// Writes one Parquet file of the given columns (nullable), for inputs the tests make up.
pub fn write_pages(path: &Path, columns: Vec<(&str, ArrayRef)>) {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    revisit::io::parquet_out::write(path, schema, &[batch], &[]).unwrap();
}

pub fn strings(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

pub fn floats(v: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(v.to_vec()))
}

/// Runs `args`, which must fail with exit status 2, a message holding every needle and no panic,
/// and leave `out` (a published output) and its folder exactly as they were.
pub fn assert_fails_cleanly(args: &[&str], out: &Path, needles: &[&str]) {
    let before = table_bytes(out);
    let summary_before = std::fs::read(out.join("summary.json")).unwrap();
    let o = run(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "clean error exit expected: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "no panic trace: {stderr}");
    for n in needles {
        assert!(stderr.contains(n), "error should mention {n:?}: {stderr}");
    }
    assert!(
        table_bytes(out) == before,
        "the previous output is untouched"
    );
    assert_eq!(
        std::fs::read(out.join("summary.json")).unwrap(),
        summary_before
    );
    let parent = out.parent().unwrap();
    let staging: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".staging-")
        })
        .collect();
    assert!(
        staging.is_empty(),
        "no staging folder left behind after a clean error"
    );
}

/// A URL's schedule in a rates table.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub host: String,
    pub crawl_rate: f64,
    pub interval_s: f64,
    /// Microseconds since the epoch (None: never fetched).
    pub last_us: Option<i64>,
    pub next_us: i64,
}

/// Every URL's schedule in an output folder's rates tables.
pub fn read_schedule(out: &Path) -> HashMap<String, Schedule> {
    use arrow_array::types::TimestampMicrosecondType;
    let mut rows = HashMap::new();
    for file in parquet_files(&out.join("rates")) {
        for b in read_parquet(&file) {
            let s = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
            let f = |c: &str| {
                b.column_by_name(c)
                    .unwrap()
                    .as_primitive::<Float64Type>()
                    .clone()
            };
            let t = |c: &str| {
                b.column_by_name(c)
                    .unwrap()
                    .as_primitive::<TimestampMicrosecondType>()
                    .clone()
            };
            let (url, host, rate, interval) =
                (s("url"), s("host"), f("crawl_rate"), f("fetch_interval_s"));
            let (last, next) = (t("last_fetch_at"), t("next_fetch_at"));
            for i in 0..b.num_rows() {
                rows.insert(
                    url.value(i).to_owned(),
                    Schedule {
                        host: host.value(i).to_owned(),
                        crawl_rate: rate.value(i),
                        interval_s: interval.value(i),
                        last_us: last.is_valid(i).then(|| last.value(i)),
                        next_us: next.value(i),
                    },
                );
            }
        }
    }
    rows
}

/// One fetch of a night's visits tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Visit {
    pub crawler: u32,
    /// Seconds from the night's start, and the same instant in microseconds since the epoch.
    pub at_s: f64,
    pub at_us: i64,
    pub url: String,
    pub host: String,
}

/// Every fetch of an output folder's visits tables, crawler by crawler.
pub fn read_night(out: &Path) -> Vec<Visit> {
    use arrow_array::types::TimestampMicrosecondType;
    let mut rows = Vec::new();
    for file in parquet_files(&out.join("visits")) {
        let partition = file
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        let crawler: u32 = partition.strip_prefix("crawler=").unwrap().parse().unwrap();
        for b in read_parquet(&file) {
            let s = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
            let (url, host) = (s("url"), s("host"));
            let at_s = b
                .column_by_name("at_s")
                .unwrap()
                .as_primitive::<Float64Type>()
                .clone();
            let at = b
                .column_by_name("fetch_at")
                .unwrap()
                .as_primitive::<TimestampMicrosecondType>()
                .clone();
            for i in 0..b.num_rows() {
                rows.push(Visit {
                    crawler,
                    at_s: at_s.value(i),
                    at_us: at.value(i),
                    url: url.value(i).to_owned(),
                    host: host.value(i).to_owned(),
                });
            }
        }
    }
    rows
}

/// The Parquet files under `dir`, sorted.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
