//! The nightly loop end to end: thirty nights of `simulate` checked from the visits tables alone
//! (coverage, waits, politeness and crawler pace across night boundaries, level load, freshness
//! recomputed independently); a night continuing from the last (a rate change, a removed URL, a
//! failed and a late fetch, a log with bad rows) on any number of workers; interval bounds; and a
//! `--previous` or log that cannot be used.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::*;

const DAY_S: f64 = 86_400.0;
/// The first night of these tests: 2026-11-23T00:00:00Z, microseconds since the epoch.
const START: &str = "2026-11-23T00:00:00Z";
const START_US: i64 = 1_795_392_000_000_000;
/// Times in the tables are f64 seconds, and microseconds once they cross a night boundary in a
/// log: politeness and pace hold to this.
const TOLERANCE_S: f64 = 1e-6;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Importance-weighted share of [0, window) stale, from each page's copy before the window and
/// its fetches (seconds from the first night's start): over each stretch since a fetch at f,
/// P(stale at t) = 1 - e^(-lambda (t - f)), integrated in closed form. Written here from the
/// definition, apart from the code under test.
fn realized_staleness(
    pages: &[(String, String, f64, f64, bool)],
    copies: &HashMap<String, f64>,
    fetches: &HashMap<String, Vec<f64>>,
    window: f64,
) -> f64 {
    let (mut stale, mut weight) = (0.0, 0.0);
    for (url, _, importance, change_rate, _) in pages {
        weight += importance;
        let lambda = change_rate / DAY_S;
        if lambda == 0.0 {
            continue;
        }
        // stale time in [a, b) of a copy taken at c <= a
        let since = |c: f64, a: f64, b: f64| {
            (b - a) - ((-lambda * (a - c)).exp() - (-lambda * (b - c)).exp()) / lambda
        };
        let mut copy = copies.get(url).copied();
        let mut t = 0.0;
        let mut total = 0.0;
        let mut times = fetches.get(url).cloned().unwrap_or_default();
        times.sort_by(f64::total_cmp);
        for f in times {
            total += copy.map_or(f - t, |c| since(c, t, f));
            copy = Some(f);
            t = f;
        }
        total += copy.map_or(window - t, |c| since(c, t, window));
        stale += importance * total;
    }
    stale / (weight * window)
}

#[test]
fn thirty_nights_fetch_every_url_at_its_rate_politely_and_near_the_optimum() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data, 200_000, 2_000, &[]);
    let work = tmp.path().join("work");
    let nights = 30;
    let o = run_ok(&[
        "simulate",
        path(&data.join("pages")),
        "--hosts",
        path(&data.join("hosts.parquet")),
        "--nights",
        "30",
        "--objective",
        "binary-fixed",
        "--start",
        START,
        "-w",
        "2",
        "--out",
        path(&work),
        "--json",
    ]);
    let reports: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports.len(), nights);

    let delays = read_delays(&data);
    let schedule = read_schedule(&work.join("night-001"));
    let mut by_url: HashMap<String, Vec<f64>> = HashMap::new();
    let mut by_host: HashMap<String, Vec<f64>> = HashMap::new();
    let mut by_crawler: HashMap<u32, Vec<f64>> = HashMap::new();
    let mut crawler_rate = f64::INFINITY;
    for (n, report) in reports.iter().enumerate() {
        let out = work.join(format!("night-{:03}", n + 1));
        let s = summary(&out);
        let visits = read_night(&out);
        assert_eq!(visits.len() as u64, report["fetches"].as_u64().unwrap());
        // level load from the first night on
        let bandwidth =
            s["bandwidth_used"].as_f64().unwrap() * s["horizon_s"].as_f64().unwrap() / DAY_S;
        let load = visits.len() as f64 / bandwidth - 1.0;
        assert!(load.abs() <= 0.02, "night {}: load {load:+.4}", n + 1);
        crawler_rate = crawler_rate.min(s["timetable"]["crawler_rate_per_s"].as_f64().unwrap());
        let night_us = START_US + n as i64 * 86_400_000_000;
        for v in visits {
            assert!((0.0..DAY_S).contains(&v.at_s), "{v:?} outside its night");
            assert_eq!(v.at_us, night_us + (v.at_s * 1e6).round() as i64);
            let t = n as f64 * DAY_S + v.at_s;
            by_url.entry(v.url).or_default().push(t);
            by_host.entry(v.host).or_default().push(t);
            by_crawler.entry(v.crawler).or_default().push(t);
        }
    }

    // politeness and crawler pace hold across every night boundary
    for (host, times) in by_host.iter_mut() {
        times.sort_by(f64::total_cmp);
        let delay = delays.get(host).copied().unwrap_or(15.0);
        for w in times.windows(2) {
            assert!(
                w[1] - w[0] >= delay - TOLERANCE_S,
                "{host}: fetches at {} and {} s, delay {delay} s",
                w[0],
                w[1]
            );
        }
    }
    for (crawler, times) in by_crawler.iter_mut() {
        times.sort_by(f64::total_cmp);
        for w in times.windows(2) {
            assert!(
                w[1] - w[0] >= 1.0 / crawler_rate - TOLERANCE_S,
                "crawler {crawler}: fetches at {} and {} s",
                w[0],
                w[1]
            );
        }
    }

    // coverage: every URL fetched round(30 rho) +- 1 times, none waiting longer than its
    // interval and a night
    assert!(by_url.keys().all(|u| schedule.contains_key(u)));
    for (url, s) in &schedule {
        let times = by_url.get(url).map_or(&[][..], |t| &t[..]);
        let want = (nights as f64 * s.crawl_rate).round();
        let got = times.len() as f64;
        assert!(
            (got - want).abs() <= 1.0,
            "{url}: {got} fetches at {} a day over {nights} nights",
            s.crawl_rate
        );
        let mut previous = 0.0;
        for &t in times {
            assert!(
                t - previous <= s.interval_s + DAY_S,
                "{url}: waited {} s, interval {} s",
                t - previous,
                s.interval_s
            );
            previous = t;
        }
    }

    // freshness: the realized staleness, recomputed from the visits tables, is simulate's, within
    // 2% of the evenly spaced optimum and below the same rates fetched as Poisson
    let mean = |key: &str| {
        reports
            .iter()
            .map(|r| r[key].as_f64().unwrap())
            .sum::<f64>()
            / nights as f64
    };
    let (realized, even, poisson) = (
        mean("staleness"),
        reports[0]["staleness_evenly_spaced"].as_f64().unwrap(),
        mean("staleness_poisson"),
    );
    // before the first night each copy is one interval older than its first due time (simulate's
    // steady state)
    let copies: HashMap<String, f64> = schedule
        .iter()
        .map(|(url, s)| {
            (
                url.clone(),
                (s.next_us - START_US) as f64 / 1e6 - s.interval_s,
            )
        })
        .collect();
    let recomputed =
        realized_staleness(&read_pages(&data), &copies, &by_url, nights as f64 * DAY_S);
    assert!(
        (recomputed - realized).abs() <= 1e-6 * realized,
        "simulate {realized}, recomputed {recomputed}"
    );
    assert!(
        realized <= 1.02 * even && realized < poisson,
        "realized {realized}, evenly spaced {even}, Poisson {poisson}"
    );
    assert!(work.join("simulate.svg").is_file() && work.join("simulate.csv").is_file());
}

/// A night continued from `previous` with its log, and the URLs the log plays with.
struct Continued {
    data: PathBuf,
    first: PathBuf,
    pages: PathBuf,
    log: PathBuf,
    /// A URL whose change rate went up, one removed, one whose fetch failed, one fetched late.
    faster: String,
    removed: String,
    failed: String,
    late: String,
}

const LATE_S: f64 = 7_200.0;

/// Night 1 on a generated set, and night 2's pages and log: every fetch of night 1 as it was
/// planned, but for a failed one, a late one, and one row each about a URL no page has, repeated,
/// in the future and before the epoch.
fn continued(tmp: &Path) -> Continued {
    let data = tmp.join("data");
    gen(&data, 3_000, 30, &[]);
    let first = tmp.join("night-1");
    run_ok(&[
        "run",
        path(&data.join("pages")),
        "--hosts",
        path(&data.join("hosts.parquet")),
        "--timetable",
        "--start",
        START,
        "--out",
        path(&first),
        "-q",
    ]);
    let visits = read_night(&first);
    let mut once: HashMap<&str, u32> = HashMap::new();
    for v in &visits {
        *once.entry(&v.url).or_default() += 1;
    }
    // URLs fetched once in night 1, the late one early enough to be late and still in night 1
    let single: Vec<&Visit> = visits
        .iter()
        .filter(|v| once[v.url.as_str()] == 1)
        .collect();
    let failed = single[0].url.clone();
    let late = single
        .iter()
        .find(|v| v.at_s + LATE_S < DAY_S - 600.0 && v.url != failed)
        .unwrap()
        .url
        .clone();
    let faster = single[2].url.clone();
    let removed = single[3].url.clone();

    let pages = tmp.join("pages-2/part-00000.parquet");
    let rows = read_pages(&data);
    let kept: Vec<_> = rows.iter().filter(|r| r.0 != removed).collect();
    write_pages(
        &pages,
        vec![
            (
                "url",
                strings(&kept.iter().map(|r| Some(r.0.as_str())).collect::<Vec<_>>()),
            ),
            (
                "host",
                strings(&kept.iter().map(|r| Some(r.1.as_str())).collect::<Vec<_>>()),
            ),
            (
                "importance",
                floats(&kept.iter().map(|r| Some(r.2)).collect::<Vec<_>>()),
            ),
            (
                "change_rate",
                floats(
                    &kept
                        .iter()
                        .map(|r| Some(if r.0 == faster { r.3 * 16.0 } else { r.3 }))
                        .collect::<Vec<_>>(),
                ),
            ),
        ],
    );

    let log = tmp.join("fetched.csv");
    let mut csv = String::from("url,fetched_at_s,ok\n");
    let seconds = |us: i64| us as f64 / 1e6;
    for v in &visits {
        if v.url == late {
            csv += &format!("{},{},true\n", v.url, seconds(v.at_us) + LATE_S);
        } else {
            let ok = v.url != failed;
            csv += &format!("{},{},{ok}\n", v.url, seconds(v.at_us));
        }
    }
    let any = &visits[5];
    csv += &format!("{},{},true\n", any.url, seconds(any.at_us)); // a repeat
    csv += &format!("https://nowhere.example/x,{},true\n", seconds(any.at_us));
    csv += &format!("{},{},true\n", any.url, seconds(START_US) + DAY_S + 60.0); // after night 2 starts
    csv += &format!("{},-5,true\n", any.url); // before the epoch
    std::fs::write(&log, csv).unwrap();
    Continued {
        data,
        first,
        pages,
        log,
        faster,
        removed,
        failed,
        late,
    }
}

/// Night 2's command line: its pages, night 1 and the log, `extra` options.
fn second_args(c: &Continued, out: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        path(c.pages.parent().unwrap()),
        "--hosts",
        path(&c.data.join("hosts.parquet")),
        "--timetable",
        "--previous",
        path(&c.first),
        "--fetched",
        path(&c.log),
        "--out",
        path(out),
        "-q",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Night 1's due times of a URL before night 2 starts: how many, and the last (its clock),
/// microseconds since the epoch, computed as the schedule defines them (next + k x interval).
fn night_one_due(s: &Schedule) -> (u64, f64) {
    let (next, tau) = (s.next_us as f64, s.interval_s * 1e6);
    let end = (START_US + 86_400_000_000) as f64;
    if next >= end {
        return (0, f64::NAN);
    }
    let mut k = ((end - next) / tau).ceil() - 1.0;
    if next + k * tau >= end {
        k -= 1.0;
    }
    (k as u64 + 1, next + k * tau)
}

#[test]
fn a_night_continues_from_the_last_one() {
    let tmp = tempfile::tempdir().unwrap();
    let c = continued(tmp.path());
    let second = tmp.path().join("night-2");
    run_ok(&strs(&second_args(&c, &second, &[])));
    let s = summary(&second);
    let sched = &s["schedule"];
    assert_eq!(sched["start"], "2026-11-24T00:00:00Z");
    assert_eq!(sched["start_source"], "after_previous");
    assert_eq!(sched["fetches_from"], "fetched");
    // the log's rows: each accounted for
    assert_eq!(sched["state_dropped"], 1, "{sched}");
    assert_eq!(sched["log_failed"], 1);
    // the URL no page has, and the removed one's fetch in night 1
    assert_eq!(sched["log_unknown_url"], 2);
    assert_eq!(sched["log_duplicate"], 1);
    assert_eq!(sched["log_future"], 1);
    assert_eq!(sched["log_invalid"], 1);
    let bad = &sched["first_invalid"];
    assert!(bad["file"].as_str().unwrap().ends_with("fetched.csv"));
    assert_eq!(bad["column"], "fetched_at_s");
    let log_rows = sched["log_rows"].as_u64().unwrap();
    let accounted: u64 = [
        "log_used",
        "log_failed",
        "log_unknown_url",
        "log_duplicate",
        "log_future",
        "log_invalid",
    ]
    .iter()
    .map(|k| sched[k].as_u64().unwrap())
    .sum();
    assert_eq!(log_rows, accounted);

    let before = read_schedule(&c.first);
    let after = read_schedule(&second);
    let night_one = read_night(&c.first);
    let visits = read_night(&second);
    let start2_us = START_US + 86_400_000_000;
    let tonight = start2_us..start2_us + 86_400_000_000;
    // the removed URL is gone
    assert!(!after.contains_key(&c.removed));
    // the failed fetch: never fetched, overdue, due tonight and in tonight's visits
    let failed = &after[&c.failed];
    assert_eq!(failed.last_us, None);
    assert!(tonight.contains(&failed.next_us));
    assert!(visits.iter().any(|v| v.url == c.failed));
    assert!(sched["urls_overdue"].as_u64().unwrap() >= 1);
    // the late fetch: its time is the last fetch, its clock keeps its due times
    let late = &after[&c.late];
    let served = night_one.iter().find(|v| v.url == c.late).unwrap().at_us;
    assert_eq!(late.last_us, Some(served + (LATE_S * 1e6) as i64));
    let clock = night_one_due(&before[&c.late]).1;
    let want = clock + late.interval_s * 1e6;
    assert!(
        (late.next_us as f64 - want).abs() <= 2.0,
        "late: next {} vs {want}",
        late.next_us
    );
    // the faster page: its change rate went up 16-fold, its interval is shorter
    let (was, now) = (before[&c.faster].interval_s, after[&c.faster].interval_s);
    assert!(now < was, "faster: interval {was} s, now {now} s");
    // every URL fetched in night 1 (the faster one too) counts from the due time its fetch
    // served, at its new interval; if that has passed it is due tonight
    let mut last_fetch: HashMap<&str, i64> = HashMap::new();
    for v in &night_one {
        let t = last_fetch.entry(&v.url).or_insert(v.at_us);
        *t = (*t).max(v.at_us);
    }
    let mut on_clock = 0;
    for (url, &fetched) in &last_fetch {
        if [&c.failed, &c.late, &c.removed].contains(&&url.to_string()) {
            continue;
        }
        let (was, now) = (&before[*url], &after[*url]);
        assert_eq!(now.last_us, Some(fetched), "{url}");
        let (due, clock) = night_one_due(was);
        let served = night_one.iter().filter(|v| v.url == *url).count() as u64;
        if served < due {
            continue; // night 1 could not serve all of them: overdue
        }
        let want = clock + now.interval_s * 1e6;
        if want >= start2_us as f64 {
            assert!(
                (now.next_us as f64 - want).abs() <= 2.0,
                "{url}: {} vs {want}",
                now.next_us
            );
            on_clock += 1;
        } else {
            assert!(
                tonight.contains(&now.next_us),
                "{url}: overdue, due tonight"
            );
        }
    }
    assert!(on_clock > 100, "{on_clock}");

    // the same tables on 1, 2 and 4 workers and on 2 processes
    let reference = table_contents(&second);
    for workers in ["2", "4"] {
        let out = tmp.path().join(format!("night-2-w{workers}"));
        run_ok(&strs(&second_args(&c, &out, &["-w", workers])));
        assert!(table_contents(&out) == reference, "{workers} workers");
    }
    let out = tmp.path().join("night-2-p2");
    let args = second_args(&c, &out, &["-w", "2"]);
    for o in run_cluster(2, tmp.path(), &strs(&args), &[]) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(table_contents(&out) == reference, "2 processes");

    // without a log, night 1's visits count as made: what night 1 could not serve is overdue,
    // nothing else
    let planned = tmp.path().join("night-2-planned");
    run_ok(&[
        "run",
        path(&c.data.join("pages")),
        "--hosts",
        path(&c.data.join("hosts.parquet")),
        "--timetable",
        "--previous",
        path(&c.first),
        "--out",
        path(&planned),
        "-q",
    ]);
    let p = summary(&planned);
    assert_eq!(p["schedule"]["fetches_from"], "previous_visits");
    let mut served: HashMap<&str, u64> = HashMap::new();
    for v in &night_one {
        *served.entry(&v.url).or_default() += 1;
    }
    let unserved = before
        .iter()
        .filter(|(url, s)| served.get(url.as_str()).copied().unwrap_or(0) < night_one_due(s).0)
        .count() as u64;
    assert_eq!(p["schedule"]["urls_overdue"].as_u64(), Some(unserved));
}

#[test]
fn interval_bounds_hold_or_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&["run", "--out", path(&out), "-q", "--start", START]);
    // a max interval the bandwidth cannot give every URL: an error, nothing published
    assert_fails_cleanly(
        &["run", "--max-interval", "1h", "--out", path(&out), "-q"],
        &out,
        &["--max-interval", "--bandwidth", "fetches per day"],
    );
    // a max interval the hosts' politeness cannot give: reported, the URLs counted
    let capped = tmp.path().join("capped");
    let o = run_ok(&[
        "run",
        "--max-interval",
        "2d",
        "--bandwidth",
        "20000",
        "--out",
        path(&capped),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    let s = summary(&capped)["schedule"].clone();
    let unmet = s["urls_max_interval_unmet"].as_u64().unwrap();
    assert!(unmet > 0, "{s}");
    assert!(
        text.contains("WARNING")
            && text
                .replace(',', "")
                .contains(&format!("{unmet} URLs get less")),
        "{text}"
    );
    // every URL not held back by its host is fetched at least every 2 days
    let hosts = read_hosts(&capped);
    for (url, r) in read_schedule(&capped) {
        if !hosts[&r.host].capped {
            assert!(
                r.interval_s <= 2.0 * DAY_S * (1.0 + 1e-12),
                "{url}: {}",
                r.interval_s
            );
        }
    }
    assert!(s["urls_at_max_interval"].as_u64().unwrap() > 0);

    // per-URL bounds: columns win over the options
    let pages = tmp.path().join("bounded/part-00000.parquet");
    let urls: Vec<String> = (0..4).map(|i| format!("https://b.example/{i}")).collect();
    write_pages(
        &pages,
        vec![
            (
                "url",
                strings(&urls.iter().map(|u| Some(u.as_str())).collect::<Vec<_>>()),
            ),
            (
                "importance",
                floats(&[Some(1.0), Some(1.0), Some(100.0), Some(1.0)]),
            ),
            (
                "change_rate",
                floats(&[Some(0.001), Some(0.01), Some(50.0), Some(1.0)]),
            ),
            ("min_interval_s", floats(&[None, None, Some(DAY_S), None])),
            (
                "max_interval_s",
                floats(&[Some(7.0 * DAY_S), None, None, None]),
            ),
        ],
    );
    let bounded = tmp.path().join("bounded-out");
    run_ok(&[
        "run",
        path(pages.parent().unwrap()),
        "--bandwidth",
        "3",
        "--min-delay-s",
        "1",
        "--max-interval",
        "30d",
        "--out",
        path(&bounded),
        "-q",
    ]);
    let r = read_schedule(&bounded);
    let interval = |i: usize| r[&urls[i]].interval_s;
    assert!((interval(0) - 7.0 * DAY_S).abs() <= 1e-6, "{}", interval(0));
    assert!(interval(1) <= 30.0 * DAY_S * (1.0 + 1e-12));
    assert!((interval(2) - DAY_S).abs() <= 1e-6, "{}", interval(2));
    let s = summary(&bounded)["schedule"].clone();
    assert_eq!(s["urls_at_min_interval"], 1, "{s}");
    assert!(s["urls_at_max_interval"].as_u64().unwrap() >= 1);
}

#[test]
fn a_previous_output_or_log_that_cannot_be_used_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    run_ok(&[
        "run",
        "--timetable",
        "--out",
        path(&out),
        "-q",
        "--start",
        START,
    ]);
    let night = |extra: &[&str]| {
        let mut a = vec!["run", "--timetable", "--out", path(&out), "-q"];
        a.extend(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let fails = |extra: &[&str], needles: &[&str]| {
        let args = night(extra);
        assert_fails_cleanly(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &out,
            needles,
        );
    };
    // not a revisit output
    fails(
        &["--previous", "data"],
        &["--previous", "not a published revisit output"],
    );
    // a different horizon
    let copy = tmp.path().join("copy");
    copy_dir(&out, &copy);
    fails(
        &["--previous", path(&copy), "--horizon-s", "43200"],
        &["--previous", "--horizon-s 86400"],
    );
    // half copied: a rates file missing, or cut short
    let rates = copy.join("rates/crawler=3/part-00000.parquet");
    let bytes = std::fs::read(&rates).unwrap();
    std::fs::write(&rates, &bytes[..bytes.len() / 2]).unwrap();
    fails(&["--previous", path(&copy)], &["crawler=3", "half-copied"]);
    std::fs::remove_file(&rates).unwrap();
    fails(&["--previous", path(&copy)], &["crawler=3", "is missing"]);
    // unpublished: no _SUCCESS
    let unpublished = tmp.path().join("unpublished");
    copy_dir(&out, &unpublished);
    std::fs::remove_file(unpublished.join("_SUCCESS")).unwrap();
    fails(&["--previous", path(&unpublished)], &["_SUCCESS"]);
    // a log without a time column
    let log = tmp.path().join("log.csv");
    std::fs::write(&log, "url,when\nhttps://a.example/,yesterday\n").unwrap();
    fails(
        &["--previous", path(&out), "--fetched", path(&log)],
        &["log.csv", "fetched_at"],
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}
