#!/usr/bin/env bash
# End-to-end benchmark, one JSON line per workload. For each workload: generate its page set once,
# then measure in one invocation, on the same threads and data, the bare Parquet read + write
# (`revisit bench-io`), the revisit job, and the next night's job continuing from it (--previous,
# --timetable: the state read and joined, every URL's due time, tonight's fetches). With
# SCALING=1 also the same job on 1 worker (the solve's speed-up from 1 to 2 workers) and as 2
# processes of 1 worker on localhost (against 2 threads of one process). Runs are one after
# another, never two at once. Each line says which of the project's targets it meets.
#
#   scripts/bench.sh                      # zipf-10m: 10M URLs on 100k Zipf hosts, 2 workers
#   scripts/bench.sh zipf-10m hosts-10m   # and 10M URLs of which 3M on single-page hosts
#   NIGHTLY=0 scripts/bench.sh zipf-100m  # 100M URLs on 1M hosts (about 12 GB of data), no night
#   SCALING=1 scripts/bench.sh zipf-10m   # with the 1-worker and 2-process runs
#   URLS=1000000 OBJECTIVE=binary scripts/bench.sh   # no workload named: zipf with URLS URLs
#   REVISIT_BIN=/path/to/older/revisit scripts/bench.sh   # the same figures for another build
#   REPS=3 SCALING=1 scripts/bench.sh zipf-10m   # every run three times: each ratio the median
#                                                # of its three, the phases those of the median run
#
# Workloads: zipf-N (N URLs on N/100 hosts of Zipf sizes) and hosts-N (the same, with 3 in 10
# URLs moved to hosts of one page each: the web's long tail); see scripts/workload.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${WORKERS:-2}
objective=${OBJECTIVE:-harmonic}
nightly=${NIGHTLY:-1}
scaling=${SCALING:-0}
reps=${REPS:-1}
source scripts/revisit-bin.sh
source scripts/workload.sh
[ $# -gt 0 ] || set -- "zipf-${URLS:-10000000}"

# seconds CMD...: runs CMD (its summary text dropped: the figures are read from summary.json),
# prints its wall time in seconds
seconds() {
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}

for workload in "$@"; do
  urls=$(workload_urls "$workload")
  dir=$(workload_data "$workload" "$bin")
  args=("$dir/pages" --hosts "$dir/hosts.parquet" --objective "$objective" -q)
  # each repetition's figures: the wall times on one line of reps.jsonl, the summaries kept by rep
  rm -rf "$dir/reps"
  mkdir -p "$dir/reps"
  for rep in $(seq "$reps"); do
    rm -rf "$dir/bare" "$dir/out" "$dir/nightly" "$dir/w1" "$dir/p2"
    bare=$("$bin" bench-io "$dir/pages" --out "$dir/bare" -w "$workers")
    rm -rf "$dir/bare"
    run_s=$(seconds "$bin" run "${args[@]}" --out "$dir/out" -w "$workers" \
      --start 2026-11-23T00:00:00Z)
    nightly_s=null
    if [ "$nightly" = 1 ]; then
      nightly_s=$(seconds "$bin" run "${args[@]}" --out "$dir/nightly" -w "$workers" \
        --previous "$dir/out" --timetable)
    fi
    w1_s=null p2_s=null
    if [ "$scaling" = 1 ]; then
      w1_s=$(seconds "$bin" run "${args[@]}" --out "$dir/w1" -w 1 --start 2026-11-23T00:00:00Z)
      p2_s=$(seconds env REVISIT_BIN="$bin" scripts/cluster-local.sh 2 run "${args[@]}" \
        --out "$dir/p2" -w 1 --start 2026-11-23T00:00:00Z)
    fi
    for name in out nightly w1 p2; do
      [ ! -f "$dir/$name/summary.json" ] || cp "$dir/$name/summary.json" "$dir/reps/$rep-$name.json"
    done
    echo "{\"bare\": $bare, \"run_s\": $run_s, \"nightly_s\": $nightly_s, \"w1_s\": $w1_s, \"p2_s\": $p2_s}" \
      >> "$dir/reps/reps.jsonl"
  done
  python3 - "$workload" "$urls" "$dir/reps" <<'PY'
import json, os, statistics, sys
workload, urls, reps_dir = sys.argv[1:]
urls = int(urls)
reps = [json.loads(l) for l in open(os.path.join(reps_dir, "reps.jsonl"))]
summary = lambda rep, name: json.load(open(os.path.join(reps_dir, f"{rep}-{name}.json")))
median = statistics.median_low
# every ratio is taken within a repetition (its runs saw the same machine), then the median over
# the repetitions; the phases and the other figures are those of the median repetition's run
ratios = [r["run_s"] / r["bare"]["seconds"] for r in reps]
ratio = median(ratios)
k = sorted(range(len(reps)), key=lambda i: ratios[i])[(len(reps) - 1) // 2]
rep, s = reps[k], summary(k + 1, "out")
run_s, bare = rep["run_s"], rep["bare"]
rss = max(summary(i + 1, "out")["peak_rss_bytes"] for i in range(len(reps))) / urls
line = {
    "workload": workload, "urls": urls, "hosts": s["hosts"], "workers": s["workers"],
    "objective": s["objective"], "repetitions": len(reps),
    "end_to_end_s": round(run_s, 3), "job_total_s": round(s["seconds"]["total"], 3),
    "bare_io_s": round(bare["seconds"], 3),
    "bare_read_s": round(bare["read_seconds"], 3), "bare_write_s": round(bare["write_seconds"], 3),
    "ratio_to_bare_io": round(ratio, 3),
    "ratios_to_bare_io": [round(r, 3) for r in ratios],
    "rounds": s["rounds"], "solve_s": round(s["seconds"]["solve"], 3),
    "phases_s": {k: round(v, 3) for k, v in s["seconds"].items()},
    "phases_cpu_s": {k: round(v, 3) for k, v in s.get("seconds_cpu", {}).items()},
    "peak_rss_bytes_per_url": round(rss, 1),
    "hosts_capped": s["hosts_capped"],
    "crawler_load_max_over_mean": round(s["crawler_load_max_over_mean"], 4),
    "worker_pages_max_over_mean": round(s.get("worker_pages_max_over_mean", 0), 4),
}
# the run's CPU seconds against bare I/O's, within each repetition: both keep every core busy, so
# it says what the wall ratio does, and moves less from run to run (an older build's bench-io may
# not say its CPU)
if all("cpu_seconds" in r["bare"] for r in reps):
    cpu_ratios = [summary(i + 1, "out")["seconds_cpu"]["total"] / r["bare"]["cpu_seconds"]
                  for i, r in enumerate(reps)]
    line["bare_io_cpu_s"] = round(bare["cpu_seconds"], 3)
    line["cpu_ratio_to_bare_io"] = round(median(cpu_ratios), 3)
    line["cpu_ratios_to_bare_io"] = [round(r, 3) for r in cpu_ratios]
targets = {"ratio_to_bare_io <= 1.5": ratio <= 1.5}
# the memory target is set at 100M URLs (so that 300M fit the machine); below, the fixed part of a
# run's memory weighs on every URL
if urls >= 100_000_000:
    targets["peak_rss_bytes_per_url <= 64"] = rss <= 64
if rep["nightly_s"] is not None:
    n, nightly = summary(k + 1, "nightly"), rep["nightly_s"]
    line["nightly"] = {
        "end_to_end_s": round(nightly, 3), "ratio_to_run": round(nightly / run_s, 3),
        "ratio_to_bare_io": round(nightly / bare["seconds"], 3),
        "phases_s": {k: round(v, 3) for k, v in n["seconds"].items()},
        "peak_rss_bytes_per_url": round(n["peak_rss_bytes"] / urls, 1),
        "fetches_scheduled": n["timetable"]["fetches_scheduled"],
        "fetches_dropped": n["timetable"]["fetches_dropped"],
        "urls_due_tonight": n["schedule"]["urls_due_tonight"],
    }
if rep["w1_s"] is not None:
    solve = lambda i, name: summary(i + 1, name)["seconds"]["solve"]
    speedups = [solve(i, "w1") / solve(i, "out") for i in range(len(reps))]
    over = [r["p2_s"] / r["run_s"] for r in reps]
    speedup, over_threads = median(speedups), median(over)
    line["scaling"] = {
        "one_worker_end_to_end_s": round(rep["w1_s"], 3),
        "one_worker_solve_s": round(solve(k, "w1"), 3),
        "solve_speedup_2_workers_over_1": round(speedup, 3),
        "solve_speedups": [round(x, 3) for x in speedups],
        "two_processes_end_to_end_s": round(rep["p2_s"], 3),
        "two_processes_over_two_threads": round(over_threads, 3),
        "two_processes_over_two_threads_each": [round(x, 3) for x in over],
        "two_processes_phases_s": {k: round(v, 3) for k, v in summary(k + 1, "p2")["seconds"].items()},
    }
    targets["solve_speedup_2_workers_over_1 >= 1.8"] = speedup >= 1.8
    targets["two_processes_over_two_threads <= 1.2"] = over_threads <= 1.2
line["targets_met"] = targets
print(json.dumps(line), flush=True)
PY
done
