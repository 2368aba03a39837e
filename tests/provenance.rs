//! Where a result came from: every summary starts with the same provenance (version, run id, start
//! time, inputs with sizes, hosts table, every resolved option) and has the same shape; every
//! Parquet file carries it in its key-value metadata.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;

/// The key-value metadata of a Parquet file.
fn metadata(path: &Path) -> BTreeMap<String, String> {
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(file).unwrap();
    use parquet::file::reader::FileReader;
    reader
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
        .collect()
}

/// The top-level keys of a JSON object, in the order written.
fn keys_in_order(text: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visitor;
            impl<'de> serde::de::Visitor<'de> for Visitor {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(k) = map.next_key::<String>()? {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        keys.push(k);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visitor)
        }
    }
    serde_json::from_str::<Keys>(text).unwrap().0
}

fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// Seconds since the epoch of an RFC 3339 UTC time as revisit writes it (…Z, optional fraction).
fn parse_utc(text: &str) -> i64 {
    // days from civil (H. Hinnant), written out here apart from revisit's own code
    let n = |a: usize, b: usize| text[a..b].parse::<i64>().unwrap();
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    let (hh, mm, ss) = (n(11, 13), n(14, 16), n(17, 19));
    assert!(text.ends_with('Z'), "{text}");
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    days * 86_400 + hh * 3600 + mm * 60 + ss
}

/// The keys every command's summary starts with, and the ones every dataflow summary has.
const PROVENANCE: [&str; 7] = [
    "version",
    "command",
    "run_id",
    "started_at",
    "inputs",
    "hosts_table",
    "options",
];
const SHARED: [&str; 8] = [
    "rows_in",
    "rows_rejected",
    "rejected_by_reason",
    "defaults",
    "workers",
    "processes",
    "seconds",
    "urls",
];

#[test]
fn every_summary_and_file_records_where_it_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let before = now_us() / 1_000_000;
    run_ok(&[
        "run",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
        "--crawlers",
        "4",
    ]);
    let after = now_us() / 1_000_000 + 1;
    let s = summary(&out);
    let keys = keys_in_order(&std::fs::read_to_string(out.join("summary.json")).unwrap());
    assert_eq!(keys[..7], PROVENANCE, "the provenance block comes first");
    assert_eq!(s["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(s["command"], "run");
    let run_id = s["run_id"].as_str().unwrap();
    assert!(
        run_id.len() == 16 && run_id.chars().all(|c| c.is_ascii_hexdigit()),
        "{run_id}"
    );
    let started = parse_utc(s["started_at"].as_str().unwrap());
    assert!(
        (before..=after).contains(&started),
        "{before} <= {started} <= {after}"
    );
    // the sample's files with their sizes, and its hosts table
    let inputs = s["inputs"].as_array().unwrap();
    let mut files: Vec<_> = std::fs::read_dir("data/pages")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(inputs.len(), files.len());
    for (i, f) in inputs.iter().zip(&files) {
        assert_eq!(i["path"].as_str().unwrap(), f.display().to_string());
        assert_eq!(
            i["bytes"].as_u64().unwrap(),
            std::fs::metadata(f).unwrap().len()
        );
        assert_eq!(i["format"], "parquet");
    }
    let h = &s["hosts_table"];
    assert_eq!(h["path"], "data/hosts.parquet");
    assert_eq!(
        h["bytes"].as_u64().unwrap(),
        std::fs::metadata("data/hosts.parquet").unwrap().len()
    );
    assert_eq!(
        h["hosts"].as_u64().unwrap(),
        read_delays(Path::new("data")).len() as u64
    );
    // every option, as resolved: given, defaulted, or null when neither
    let o = &s["options"];
    assert_eq!(o["crawlers"], 4);
    assert_eq!(o["workers"], 2);
    assert_eq!(o["min_delay_s"], 15);
    assert_eq!(o["objective"], "harmonic");
    assert_eq!(o["quiet"], true);
    assert_eq!(o["timetable"], false);
    assert!(o["bandwidth"].is_null() && o["start"].is_null());
    assert_eq!(o["inputs"], serde_json::json!([]));
    assert!(o.get("no_quiet").is_none() && o.get("help").is_none());
    let help = String::from_utf8(run_ok(&["run", "--help"]).stdout).unwrap();
    for key in o.as_object().unwrap().keys() {
        let flag = format!("--{}", key.replace('_', "-"));
        assert!(
            key == "inputs" || help.contains(&flag),
            "options.{key} is no option of run"
        );
    }
    for key in SHARED {
        assert!(s.get(key).is_some(), "run's summary has no {key}");
    }
    assert!(s["seconds"]["total"].as_f64().unwrap() >= 0.0);

    // every file: the same provenance
    let mut parquet = vec![
        out.join("hosts/part-00000.parquet"),
        out.join("rejected/part-00000.parquet"),
    ];
    parquet.extend((0..4).map(|c| out.join(format!("rates/crawler={c}/part-00000.parquet"))));
    for path in &parquet {
        let m = metadata(path);
        assert_eq!(m["revisit.run_id"], run_id, "{}", path.display());
        assert_eq!(m["revisit.started_at"], s["started_at"].as_str().unwrap());
        assert_eq!(m["revisit.version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(m["revisit.command"], "run");
        let inputs: serde_json::Value = serde_json::from_str(&m["revisit.inputs"]).unwrap();
        assert_eq!(inputs, s["inputs"]);
        let hosts: serde_json::Value = serde_json::from_str(&m["revisit.hosts_table"]).unwrap();
        assert_eq!(hosts, s["hosts_table"]);
        let options: serde_json::Value = serde_json::from_str(&m["revisit.options"]).unwrap();
        assert_eq!(options, s["options"]);
    }
    // the manifest lists partitions crawler=0 .. crawler=3, no zero padding
    let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("rates/crawler=3/part-00000.parquet"),
        "{manifest}"
    );

    // a second run is another run
    run_ok(&[
        "run",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-w",
        "2",
        "--crawlers",
        "4",
    ]);
    assert_ne!(summary(&out)["run_id"], run_id);
}

#[test]
fn sweep_and_evaluate_summaries_have_the_same_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q", "-w", "2"]);
    let sweep = tmp.path().join("sweep");
    run_ok(&[
        "sweep",
        "--policies",
        "harmonic",
        "--points",
        "2",
        "--out",
        sweep.to_str().unwrap(),
        "-q",
    ]);
    let rates = format!("--rates={}", out.join("rates").display());
    let evaluate = String::from_utf8(run_ok(&["evaluate", &rates, "--json", "-q"]).stdout).unwrap();
    let sweep_text = std::fs::read_to_string(sweep.join("summary.json")).unwrap();
    for (command, text) in [("sweep", sweep_text), ("evaluate", evaluate)] {
        let s: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(keys_in_order(&text)[..7], PROVENANCE, "{command}");
        assert_eq!(s["command"], command);
        for key in SHARED {
            assert!(s.get(key).is_some(), "{command}'s summary has no {key}");
        }
        assert!(s["seconds"].is_object() && s["seconds"]["total"].as_f64().unwrap() >= 0.0);
        assert_eq!(s["hosts_table"]["path"], "data/hosts.parquet");
    }
    let s = summary(&sweep);
    let m = metadata(&sweep.join("sweep.parquet"));
    assert_eq!(m["revisit.run_id"], s["run_id"].as_str().unwrap());
    assert_eq!(m["revisit.command"], "sweep");
    // evaluate lists the table it valued among its inputs
    let evaluate: serde_json::Value =
        serde_json::from_slice(&run_ok(&["evaluate", &rates, "--json", "-q"]).stdout).unwrap();
    let formats: Vec<&str> = evaluate["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["format"].as_str().unwrap())
        .collect();
    assert!(
        formats.contains(&"parquet") && formats.contains(&"rates"),
        "{formats:?}"
    );
}
