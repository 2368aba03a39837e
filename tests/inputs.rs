//! The inputs a crawl team already has: seed lists, CSV and TSV page sets, Parquet with only
//! `url`; the defaults rows without a value take; the share of rejected rows a run refuses.

mod common;

use std::fmt::Write as _;
use std::path::Path;

use common::*;

/// The sample's rows as CSV (or TSV) text with a header, columns in the order given; numbers in
/// Rust's shortest form, which reads back to the same f64.
fn sample_as_text(columns: &[&str], separator: char) -> String {
    let rows = read_pages(Path::new("data"));
    let mut text = columns.join(&separator.to_string()) + "\n";
    for (url, host, mu, lambda, complete) in rows {
        let fields: Vec<String> = columns
            .iter()
            .map(|c| match *c {
                "url" => url.clone(),
                "host" => host.clone(),
                "importance" => mu.to_string(),
                "change_rate" => lambda.to_string(),
                "complete_obs" => complete.to_string(),
                _ => "x".to_owned(),
            })
            .collect();
        text += &fields.join(&separator.to_string());
        text.push('\n');
    }
    text
}

/// Rates rows sorted by URL (their order in a partition is the run's canonical one either way).
fn rates_by_url(out: &Path) -> Vec<RateRow> {
    let mut rows = read_rates(out);
    rows.sort_by(|a, b| a.url.cmp(&b.url));
    rows
}

fn run_into(out: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--out", out.to_str().unwrap(), "-w", "2"]);
    run_ok(&all)
}

#[test]
fn csv_and_tsv_page_sets_give_the_rates_of_the_same_parquet() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pages.csv");
    std::fs::write(
        &csv,
        sample_as_text(
            &["url", "host", "importance", "change_rate", "complete_obs"],
            ',',
        ),
    )
    .unwrap();
    // another column order, a column revisit does not read
    let tsv = tmp.path().join("pages.tsv");
    std::fs::write(
        &tsv,
        sample_as_text(
            &[
                "change_rate",
                "note",
                "url",
                "complete_obs",
                "importance",
                "host",
            ],
            '\t',
        ),
    )
    .unwrap();
    let reference = tmp.path().join("parquet");
    run_into(
        &reference,
        &["data/pages", "--hosts", "data/hosts.parquet", "-q"],
    );
    let want = rates_by_url(&reference);
    assert_eq!(want.len() as u64, summary(&reference)["rows_scheduled"]);
    for input in [&csv, &tsv] {
        let out = tmp.path().join(input.extension().unwrap());
        let o = run_into(
            &out,
            &[input.to_str().unwrap(), "--hosts", "data/hosts.parquet"],
        );
        assert!(rates_by_url(&out) == want, "{} differs", input.display());
        let s = summary(&out);
        assert_eq!(
            (s["rows_in"].as_u64(), s["rows_rejected"].as_u64()),
            (Some(20_000), Some(0))
        );
        let format = input.extension().unwrap().to_str().unwrap();
        assert_eq!(s["inputs"][0]["format"], format);
        assert_eq!(
            s["inputs"][0]["bytes"].as_u64(),
            Some(std::fs::metadata(input).unwrap().len())
        );
        // no default was needed, and the summary says none
        assert_eq!(s["defaults"]["importance_rows"], 0);
        assert!(!String::from_utf8_lossy(&o.stdout).contains("defaults:"));
    }
}

#[test]
fn a_categorical_host_column_gives_the_rates_of_plain_strings() {
    // pandas writes a categorical column as an Arrow dictionary type, which a reader gets back as
    // one: the rows must be those of the same hosts written as plain strings
    use std::sync::Arc;

    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, BooleanArray, DictionaryArray};
    type Row = (String, String, f64, f64, bool);
    let rows = read_pages(Path::new("data"));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("categorical/pages.parquet");
    let column = |f: fn(&Row) -> f64| floats(&rows.iter().map(|r| Some(f(r))).collect::<Vec<_>>());
    let hosts: DictionaryArray<Int32Type> = rows.iter().map(|r| r.1.as_str()).collect();
    let complete: BooleanArray = rows.iter().map(|r| Some(r.4)).collect();
    write_pages(
        &file,
        vec![
            (
                "url",
                strings(&rows.iter().map(|r| Some(r.0.as_str())).collect::<Vec<_>>()),
            ),
            ("host", Arc::new(hosts) as ArrayRef),
            ("importance", column(|r| r.2)),
            ("change_rate", column(|r| r.3)),
            ("complete_obs", Arc::new(complete) as ArrayRef),
        ],
    );
    let reference = tmp.path().join("reference");
    run_into(
        &reference,
        &["data/pages", "--hosts", "data/hosts.parquet", "-q"],
    );
    let out = tmp.path().join("out");
    run_into(
        &out,
        &[
            file.to_str().unwrap(),
            "--hosts",
            "data/hosts.parquet",
            "-q",
        ],
    );
    assert!(rates_by_url(&out) == rates_by_url(&reference));
    assert_eq!(summary(&out)["rows_scheduled"], 20_000);
    assert_eq!(read_hosts(&out), read_hosts(&reference));
}

#[test]
fn a_seed_list_and_a_url_only_parquet_take_the_stated_defaults() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = read_pages(Path::new("data"));
    let urls: Vec<&str> = pages.iter().take(3_000).map(|p| p.0.as_str()).collect();
    // Nutch's seed format: comments, blank lines, metadata after a tab
    let mut seeds = String::from("# seeds for the first night\n\n");
    for (k, u) in urls.iter().enumerate() {
        if k % 7 == 0 {
            writeln!(seeds, "{u}\tnutch.score=2.5").unwrap();
        } else {
            writeln!(seeds, "  {u}").unwrap();
        }
    }
    let seed_file = tmp.path().join("seeds.txt");
    std::fs::write(&seed_file, seeds).unwrap();
    let out = tmp.path().join("seeds");
    let o = run_into(&out, &[seed_file.to_str().unwrap(), "-q"]);
    let s = summary(&out);
    assert_eq!(s["rows_in"], 3_000);
    assert_eq!(s["rows_rejected"], 0);
    assert_eq!(s["inputs"][0]["format"], "seed list");
    let d = &s["defaults"];
    assert_eq!(
        (d["importance"].as_f64(), d["importance_rows"].as_u64()),
        (Some(1.0), Some(3_000))
    );
    assert_eq!(d["change_rate"].as_f64(), Some(1.0 / 30.0));
    assert_eq!(d["change_rate_rows"], 3_000);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("defaults: 3,000 rows took importance 1 (--default-importance); 3,000 rows took change rate 0.03333 per day, one change every 30 days (--default-change-days)"),
        "{text}"
    );
    // every page alike, no cap binds (at most 15 pages a host here, 5,760 fetches a day a cap): the
    // harmonic optimum is the same rate for all, the bandwidth per URL
    let rates = rates_by_url(&out);
    assert_eq!(rates.len(), 3_000);
    for r in &rates {
        assert_eq!((r.importance, r.change_rate), (1.0, 1.0 / 30.0));
        assert!((r.crawl_rate - 0.2).abs() <= 1e-12, "{}", r.crawl_rate);
    }

    // the same URLs as a Parquet file with only `url`: the same rates
    let only_url = tmp.path().join("urls.parquet");
    write_url_only_parquet(&only_url, &urls);
    let out2 = tmp.path().join("parquet");
    run_into(&out2, &[only_url.to_str().unwrap(), "-q"]);
    assert!(rates_by_url(&out2) == rates);

    // explicit defaults
    let out3 = tmp.path().join("explicit");
    run_into(
        &out3,
        &[
            only_url.to_str().unwrap(),
            "--default-importance",
            "2",
            "--default-change-days",
            "7",
            "-q",
        ],
    );
    for r in rates_by_url(&out3) {
        assert_eq!((r.importance, r.change_rate), (2.0, 1.0 / 7.0));
    }
    let s = summary(&out3);
    assert_eq!(s["options"]["default_importance"], 2);
    assert_eq!(s["options"]["default_change_days"], 7);

    // a folder holding every kind is read whole
    let folder = tmp.path().join("mixed");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(&seed_file, folder.join("a.txt")).unwrap();
    std::fs::write(
        folder.join("b.csv"),
        "url,importance\nhttps://new.example/1,3\n",
    )
    .unwrap();
    std::fs::copy("data/pages/part-00000.parquet", folder.join("c.parquet")).unwrap();
    let out4 = tmp.path().join("folder");
    run_into(&out4, &[folder.to_str().unwrap(), "-q"]);
    let s = summary(&out4);
    let formats: Vec<&str> = s["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["format"].as_str().unwrap())
        .collect();
    assert_eq!(formats, ["seed list", "csv", "parquet"]);
}

fn write_url_only_parquet(path: &Path, urls: &[&str]) {
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "url",
        arrow_schema::DataType::Utf8,
        false,
    )]));
    let batch = arrow_array::RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(arrow_array::StringArray::from(urls.to_vec()))],
    )
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn nulls_are_rejected_unless_the_default_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("pages.csv");
    let mut text = String::from("url,importance,change_rate\n");
    for k in 0..100 {
        let mu = if k % 10 == 3 {
            String::new()
        } else {
            "1.5".into()
        };
        let lambda = if k % 10 < 2 {
            String::new()
        } else {
            "0.25".into()
        };
        writeln!(text, "https://h{}.example/p{k},{mu},{lambda}", k % 5).unwrap();
    }
    std::fs::write(&csv, text).unwrap();
    let out = tmp.path().join("out");
    run_into(&out, &[csv.to_str().unwrap(), "-q"]);
    let s = summary(&out);
    // rows 0, 1, 10, 11, ...: no change rate; rows 3, 13, ...: no importance
    assert_eq!(s["rejected_by_reason"]["change_rate_missing"], 20);
    assert_eq!(s["rejected_by_reason"]["importance_missing"], 10);
    assert_eq!(s["defaults"]["change_rate_rows"], 0);
    let rejected = read_rejected(&out);
    assert_eq!(rejected[0].1, 0);
    assert_eq!(
        (rejected[0].2.as_str(), rejected[0].3.as_str()),
        ("change_rate_missing", "change_rate")
    );

    let out2 = tmp.path().join("filled");
    run_into(
        &out2,
        &[
            csv.to_str().unwrap(),
            "--default-change-days",
            "8",
            "--default-importance",
            "0.5",
            "-q",
        ],
    );
    let s = summary(&out2);
    assert_eq!(s["rows_rejected"], 0);
    assert_eq!(
        (
            s["defaults"]["change_rate_rows"].as_u64(),
            s["defaults"]["importance_rows"].as_u64()
        ),
        (Some(20), Some(10))
    );
    for r in read_rates(&out2) {
        let k: usize = r.url.rsplit('p').next().unwrap().parse().unwrap();
        let want_lambda = if k % 10 < 2 { 0.125 } else { 0.25 };
        let want_mu = if k % 10 == 3 { 0.5 } else { 1.5 };
        assert_eq!(
            (r.importance, r.change_rate),
            (want_mu, want_lambda),
            "{}",
            r.url
        );
    }

    // a value that is not a number stops the run, naming file, row and column
    std::fs::write(
        &csv,
        "url,importance\nhttps://a.example/,1\nhttps://a.example/b,lots\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        csv.to_str().unwrap(),
        "--out",
        tmp.path().join("bad").to_str().unwrap(),
        "-q",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("pages.csv: row 1 (line 3), column importance: \"lots\" is not a number"),
        "{err}"
    );
}

#[test]
fn most_rows_rejected_stops_the_run_and_keeps_the_last_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_into(&out, &["-q"]);
    let before = std::fs::read_to_string(out.join("summary.json")).unwrap();
    // 4 of 5 rows without a change rate, in a file that has the column
    let csv = tmp.path().join("tonight.csv");
    std::fs::write(
        &csv,
        "url,importance,change_rate\nhttps://a.example/1,1,\nhttps://a.example/2,1,0.5\n\
         https://a.example/3,1,\nhttps://b.example/4,1,\nhttps://b.example/5,1,\n",
    )
    .unwrap();
    let o = run(&[
        "run",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("4 of 5 rows rejected (80%), more than --max-reject-share 0.5"),
        "{err}"
    );
    assert!(err.contains("change_rate_missing 4"), "{err}");
    assert!(
        err.contains("tonight.csv row 0 (change_rate_missing)"),
        "{err}"
    );
    assert!(err.contains("previous output is untouched"), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        before
    );
    assert!(out.join("_SUCCESS").exists());

    // told to go on, it publishes the one good row, with a warning
    let o = run_ok(&[
        "run",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
        "--max-reject-share",
        "1",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("WARNING: 80% of the rows were rejected (change_rate_missing 4)"),
        "{text}"
    );
    let s = summary(&out);
    assert_eq!(
        (s["rows_scheduled"].as_u64(), s["rows_rejected"].as_u64()),
        (Some(1), Some(4))
    );
    // (one URL on ten crawlers also leaves nine idle: a warning of its own)
    let warnings = s["warnings"].as_array().unwrap();
    assert!(warnings
        .iter()
        .any(|w| w.as_str().unwrap().starts_with("80% of the rows")));
}
