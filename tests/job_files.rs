//! One job file serves every command: each takes `--job FILE`, top-level keys where the command has
//! the option, `[command]` sections for it alone; the command line wins, `--no-X` undoes a switch.

mod common;

use common::*;

#[test]
fn every_command_runs_from_one_job_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let p = |name: &str| dir.join(name).display().to_string();
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        format!(
            r#"
quiet = true
json = true
hosts = "{hosts}"

[gen]
out = "{gen}"
urls = 3000
host_count = 30
seed = 7

[run]
inputs = ["{gen}/pages"]
out = "{out}"
crawlers = 3
timetable = true

[evaluate]
inputs = ["{gen}/pages"]
rates = ["{out}/rates"]

[sweep]
inputs = ["{gen}/pages"]
policies = ["harmonic", "uniform"]
points = 2
out = "{sweep}"

[simulate]
out = "{simulated}"
inputs = ["{gen}/pages"]
nights = 2

[estimate]
inputs = ["{history}"]
out = "{rates}"

[plan-crawlers]
arrival-rate = 40
index-rate = 100
buffer = 10
"#,
            hosts = p("gen/hosts.parquet"),
            gen = p("gen"),
            out = p("out"),
            sweep = p("sweep"),
            simulated = p("simulated"),
            history = p("history.csv"),
            rates = p("change_rates.parquet"),
        ),
    )
    .unwrap();
    let job = job.to_str().unwrap();
    let gen = run_ok(&["gen", "--job", job]);
    assert!(gen.stderr.is_empty(), "quiet = true: no progress");
    let run = run_ok(&["run", "--job", job, "--no-quiet"]);
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("round 1"),
        "--no-quiet wins"
    );
    let s = summary(&dir.join("out"));
    assert_eq!(
        (s["rows_in"].as_u64(), s["crawlers"].as_u64()),
        (Some(3000), Some(3))
    );
    assert!(s["timetable"].is_object());
    assert_eq!(s["options"]["job"], job);
    let evaluate = run_ok(&["evaluate", "--job", job]);
    let e: serde_json::Value = serde_json::from_slice(&evaluate.stdout).unwrap();
    assert_eq!(e["rates_matched"], s["rows_scheduled"]);
    run_ok(&["sweep", "--job", job]);
    assert_eq!(
        summary(&dir.join("sweep"))["policies"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let simulate = run_ok(&["simulate", "--job", job]);
    let nights: Vec<serde_json::Value> = String::from_utf8_lossy(&simulate.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(nights.len(), 2, "one JSON line a night");
    assert_eq!(nights[1]["night"], 2);
    std::fs::write(
        dir.join("history.csv"),
        "url,observed_at_s,changed\nhttps://a.example/,0,false\nhttps://a.example/,86400,true\n",
    )
    .unwrap();
    let estimate = run_ok(&["estimate", "--job", job, "--no-json"]);
    assert!(String::from_utf8_lossy(&estimate.stdout).starts_with("revisit estimate: 2 rows"));
    let plan = run_ok(&["plan-crawlers", "--job", job]);
    let c: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(c["input"]["buffer"], 10);
}
