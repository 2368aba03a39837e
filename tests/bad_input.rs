//! Bad input never panics and never publishes half a result: each bad row is a counted rejection
//! with its reason, each bad file a clear error naming the file and column.

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::*;

/// A row of [`mixed_file`]: url, host, importance, change_rate, and the reason it is rejected.
type MixedRow = (
    Option<&'static str>,
    Option<&'static str>,
    Option<f64>,
    Option<f64>,
    Option<&'static str>,
);

/// A file mixing good rows and every kind of bad row; returns the reason expected per row.
fn mixed_file(path: &Path) -> Vec<Option<&'static str>> {
    let good = "https://a.example/1";
    let rows: Vec<MixedRow> = vec![
        (Some(good), Some("a.example"), Some(1.0), Some(0.5), None),
        (
            Some("https://a.example/2"),
            Some("a.example"),
            Some(f64::NAN),
            Some(0.5),
            Some("importance_not_positive_finite"),
        ),
        (
            Some("https://a.example/3"),
            Some("a.example"),
            Some(f64::INFINITY),
            Some(0.5),
            Some("importance_not_positive_finite"),
        ),
        (
            Some("https://a.example/4"),
            Some("a.example"),
            Some(-1.0),
            Some(0.5),
            Some("importance_not_positive_finite"),
        ),
        (
            Some("https://a.example/5"),
            Some("a.example"),
            Some(0.0),
            Some(0.5),
            Some("importance_not_positive_finite"),
        ),
        (
            Some("https://a.example/6"),
            Some("a.example"),
            Some(1.0),
            Some(-0.5),
            Some("change_rate_negative_or_not_finite"),
        ),
        (
            None,
            Some("a.example"),
            Some(1.0),
            Some(0.5),
            Some("url_missing"),
        ),
        (
            Some("not a url"),
            None,
            Some(1.0),
            Some(0.5),
            Some("host_unresolvable"),
        ),
        (
            Some(good),
            Some("a.example"),
            Some(2.0),
            Some(0.7),
            Some("duplicate_url"),
        ),
        (
            Some("https://a.example/9"),
            Some("a.example"),
            None,
            Some(0.5),
            Some("importance_missing"),
        ),
        (
            Some("https://a.example/10"),
            Some("a.example"),
            Some(1.0),
            None,
            Some("change_rate_missing"),
        ),
        (
            Some("https://a.example/11"),
            Some("a.example"),
            Some(1.0),
            Some(f64::NAN),
            Some("change_rate_negative_or_not_finite"),
        ),
        (
            Some("https://B.Example:8080/x"),
            None,
            Some(3.0),
            Some(1.5),
            None,
        ),
        (
            Some("https://a.example/13"),
            Some("a.example"),
            Some(1.0),
            Some(0.0),
            None,
        ),
        (
            Some("https://c.example/1"),
            Some("c.example"),
            Some(1.0),
            Some(f64::NEG_INFINITY),
            Some("change_rate_negative_or_not_finite"),
        ),
    ];
    write_pages(
        path,
        vec![
            (
                "url",
                strings(&rows.iter().map(|r| r.0).collect::<Vec<_>>()),
            ),
            (
                "host",
                strings(&rows.iter().map(|r| r.1).collect::<Vec<_>>()),
            ),
            (
                "importance",
                floats(&rows.iter().map(|r| r.2).collect::<Vec<_>>()),
            ),
            (
                "change_rate",
                floats(&rows.iter().map(|r| r.3).collect::<Vec<_>>()),
            ),
        ],
    );
    rows.iter().map(|r| r.4).collect()
}

#[test]
fn bad_rows_are_counted_rejections_with_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("pages/mixed.parquet");
    let expected = mixed_file(&file);
    let out = tmp.path().join("out");
    for workers in ["1", "2"] {
        run_ok(&[
            "run",
            file.to_str().unwrap(),
            "--bandwidth",
            "1",
            "--out",
            out.to_str().unwrap(),
            "-w",
            workers,
            "-q",
            // most of this file is bad on purpose
            "--max-reject-share",
            "1",
        ]);
        let s = summary(&out);
        let n = |k: &str| s[k].as_u64().unwrap();
        assert_eq!(n("rows_in"), expected.len() as u64);
        assert_eq!(
            n("rows_in"),
            n("rows_scheduled") + n("rows_zero_rate") + n("rows_rejected")
        );
        assert_eq!(
            n("rows_rejected"),
            expected.iter().filter(|e| e.is_some()).count() as u64
        );
        assert_eq!(
            n("rows_zero_rate"),
            1,
            "the page that never changes gets no crawls"
        );
        let rejected = read_rejected(&out);
        for (row, want) in expected.iter().enumerate() {
            let got: Vec<_> = rejected.iter().filter(|r| r.1 == row as i64).collect();
            match want {
                Some(reason) => {
                    assert_eq!(got.len(), 1, "row {row} rejected once");
                    assert_eq!(&got[0].2, reason, "row {row}");
                    assert!(got[0].0.ends_with("mixed.parquet"));
                }
                None => assert!(got.is_empty(), "row {row} is valid"),
            }
        }
        let by_reason = s["rejected_by_reason"].as_object().unwrap();
        assert_eq!(by_reason["importance_not_positive_finite"], 4);
        assert_eq!(by_reason["duplicate_url"], 1);
        // the host came from the URL, lower-cased, port dropped
        let rates = read_rates(&out);
        assert!(rates
            .iter()
            .any(|r| r.host == "b.example" && r.url == "https://B.Example:8080/x"));
        // the duplicate kept the first row's values
        let first = rates
            .iter()
            .find(|r| r.url == "https://a.example/1")
            .unwrap();
        assert_eq!(first.importance, 1.0);
    }
}

fn previous_output(tmp: &Path) -> std::path::PathBuf {
    let out = tmp.join("out");
    run_ok(&["run", "--out", out.to_str().unwrap(), "-q"]);
    out
}

#[test]
fn bad_files_fail_cleanly_and_publish_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = previous_output(tmp.path());
    let o = out.to_str().unwrap();

    // a missing column (importance and change_rate have defaults; url has none)
    let no_url = tmp.path().join("no_url.parquet");
    write_pages(
        &no_url,
        vec![
            ("importance", floats(&[Some(1.0)])),
            ("change_rate", floats(&[Some(1.0)])),
        ],
    );
    assert_fails_cleanly(
        &["run", no_url.to_str().unwrap(), "--out", o, "-q"],
        &out,
        &["no_url.parquet", "no column 'url'"],
    );

    // a column of the wrong type
    let text_mu = tmp.path().join("text_mu.parquet");
    write_pages(
        &text_mu,
        vec![
            ("url", strings(&[Some("https://a.example/")])),
            ("importance", strings(&[Some("high")])),
            ("change_rate", floats(&[Some(1.0)])),
        ],
    );
    assert_fails_cleanly(
        &["run", text_mu.to_str().unwrap(), "--out", o, "-q"],
        &out,
        &["text_mu.parquet", "importance", "Utf8"],
    );

    // an empty input
    let empty = tmp.path().join("empty.parquet");
    write_pages(
        &empty,
        vec![
            ("url", strings(&[])),
            ("importance", floats(&[])),
            ("change_rate", floats(&[])),
        ],
    );
    assert_fails_cleanly(
        &["run", empty.to_str().unwrap(), "--out", o, "-q"],
        &out,
        &["no valid input rows"],
    );

    // only bad rows
    let all_bad = tmp.path().join("all_bad.parquet");
    write_pages(
        &all_bad,
        vec![
            ("url", strings(&[None, None])),
            ("importance", floats(&[Some(1.0), Some(1.0)])),
            ("change_rate", floats(&[Some(1.0), Some(1.0)])),
        ],
    );
    assert_fails_cleanly(
        &["run", all_bad.to_str().unwrap(), "--out", o, "-q"],
        &out,
        &["no valid input rows", "2 rows read"],
    );

    // a truncated file
    let sample = std::fs::read("data/pages/part-00000.parquet").unwrap();
    let truncated = tmp.path().join("truncated.parquet");
    std::fs::write(&truncated, &sample[..sample.len() / 2]).unwrap();
    assert_fails_cleanly(
        &["run", truncated.to_str().unwrap(), "--out", o, "-q"],
        &out,
        &["truncated.parquet", "not a readable Parquet file"],
    );

    // data pages damaged behind an intact footer: found by one worker while reading, agreed by all
    let mut damaged = sample.clone();
    for b in &mut damaged[100..sample.len() / 2] {
        *b = 0x5a;
    }
    let damaged_path = tmp.path().join("pages/damaged.parquet");
    std::fs::create_dir_all(damaged_path.parent().unwrap()).unwrap();
    std::fs::write(&damaged_path, &damaged).unwrap();
    for w in ["1", "2", "4"] {
        assert_fails_cleanly(
            &[
                "run",
                damaged_path.to_str().unwrap(),
                "--out",
                o,
                "-q",
                "-w",
                w,
            ],
            &out,
            &["damaged.parquet"],
        );
    }

    // a path that does not exist, and a bad hosts table
    assert_fails_cleanly(
        &["run", "/nonexistent/pages", "--out", o, "-q"],
        &out,
        &["/nonexistent/pages", "does not exist"],
    );
    let hosts = tmp.path().join("hosts.parquet");
    write_pages(
        &hosts,
        vec![
            ("host", strings(&[Some("a.example"), Some("b.example")])),
            ("min_delay_s", floats(&[Some(5.0), Some(-1.0)])),
        ],
    );
    assert_fails_cleanly(
        &[
            "run",
            "data/pages",
            "--hosts",
            hosts.to_str().unwrap(),
            "--out",
            o,
            "-q",
        ],
        &out,
        &["hosts.parquet", "row 1", "min_delay_s"],
    );
}

#[test]
fn a_folder_that_is_not_an_output_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious.txt"), "keep me").unwrap();
    let o = run(&["run", "--out", tmp.path().to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a revisit output"));
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("precious.txt")).unwrap(),
        "keep me"
    );
}

#[test]
fn optional_columns_may_be_absent_or_typed_differently() {
    // no host column, float32 importance, integer change rates, a complete_obs column
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("p.parquet");
    let urls = [
        "https://x.example/1",
        "https://x.example/2",
        "https://y.example/1",
    ];
    let fields = vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("importance", DataType::Float32, false),
        Field::new("change_rate", DataType::Int64, false),
        Field::new("complete_obs", DataType::Boolean, true),
    ];
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(urls.to_vec())),
            Arc::new(arrow_array::Float32Array::from(vec![1.0f32, 2.0, 3.0])),
            Arc::new(arrow_array::Int64Array::from(vec![1i64, 2, 3])),
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ],
    )
    .unwrap();
    revisit::io::parquet_out::write(&file, schema, &[batch], &[]).unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        file.to_str().unwrap(),
        "--bandwidth",
        "2",
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    let rates = read_rates(&out);
    assert_eq!(rates.len(), 3);
    let first = rates.iter().find(|r| r.url == urls[0]).unwrap();
    assert!(first.complete_obs && first.crawl_probability.is_some());
    assert!(rates
        .iter()
        .filter(|r| r.url != urls[0])
        .all(|r| !r.complete_obs && r.crawl_probability.is_none()));
    let total: f64 = rates.iter().map(|r| r.crawl_rate).sum();
    assert!((total - 2.0).abs() < 1e-12);
}
