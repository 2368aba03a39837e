#!/usr/bin/env bash
# Two builds of revisit side by side: runs BEFORE and AFTER in turn on each workload, REPS times
# (BEFORE first in odd reps, AFTER first in even ones), in one invocation (so both see the same
# machine), with the bare I/O measured before each pair, and prints one JSON line per run plus one
# summary line per workload with the medians, of wall time and of CPU time (`cpu_s`, user + system
# of all the run's threads; per phase from the summary's `seconds_cpu`). On this shared machine
# absolute times move by 2-4x between invocations; only figures from one invocation compare.
#
#   scripts/bench-ab.sh BEFORE_BIN AFTER_BIN                       # zipf-10m and hosts-10m, 3 reps
#   REPS=5 scripts/bench-ab.sh /path/old/revisit target/release/revisit hosts-10m
#   BARE=0 REPS=9 WORKERS=1 scripts/bench-ab.sh OLD NEW zipf-10m   # many pairs, no bare I/O
#
# A change to one phase shows in that phase's CPU seconds long before it shows end to end: the
# summary gives, per phase, the ratio of the medians and in how many pairs (one rep: one run of
# each build, back to back) the after build spent less. Nine pairs on one worker take about
# three minutes at 10M URLs; BARE=0 leaves out the bare I/O run each rep otherwise starts with.
#
# Workloads and their data as in scripts/bench.sh (scripts/workload.sh; generated when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/workload.sh
source scripts/two-builds.sh
two_builds "$@"
shift 2
[ $# -gt 0 ] || set -- zipf-10m hosts-10m
reps=${REPS:-3}
workers=${WORKERS:-2}
bare_io=${BARE:-1}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
lines=$scratch/lines.jsonl
for rep in $(seq "$reps"); do
  for workload in "$@"; do
    n=$(workload_urls "$workload")
    dir=$(workload_data "$workload" "$after")
    bare='{"seconds": null}'
    if [ "$bare_io" = 1 ]; then
      bare=$("$after" bench-io "$dir/pages" --out "$scratch/bare" -w "$workers")
      rm -rf "$scratch/bare"
    fi
    # ABBA: the builds take turns going first, so that a drift of the machine during a pair
    # (other jobs starting or ending) falls on both alike
    sides="before after"; [ $((rep % 2)) -eq 0 ] && sides="after before"
    for side in $sides; do
      bin=$before; [ $side = after ] && bin=$after
      rm -rf "$scratch/out"
      # wall seconds, and the CPU seconds (user + system) of the run's threads: steadier than
      # wall time on this shared machine (runs of one build on 8 shards of the 100M set spread by
      # 6% in CPU time, by a quarter in the read phase's wall time), though other jobs' use of
      # the caches still shows in it
      timing=$(python3 - "$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" \
        --out "$scratch/out" -w "$workers" --start 2026-11-23T00:00:00Z -q <<'PY'
import resource, subprocess, sys, time
start = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.monotonic() - start, used.ru_utime + used.ru_stime)
PY
)
      python3 - "$workload" "$side" "$rep" "$timing" "$bare" "$scratch/out/summary.json" \
        "$n" <<'PY' | tee -a "$lines"
import json, sys
workload, side, rep, timing, bare, summary, urls = sys.argv[1:]
wall, cpu = map(float, timing.split())
s = json.load(open(summary))
print(json.dumps({
    "workload": workload, "side": side, "rep": int(rep),
    "end_to_end_s": round(wall, 3), "cpu_s": round(cpu, 3),
    "bare_io_s": None if json.loads(bare)["seconds"] is None else round(json.loads(bare)["seconds"], 3),
    "phases_s": {k: round(v, 3) for k, v in s["seconds"].items()},
    # the CPU seconds of each phase (builds before seconds_cpu have none)
    "phases_cpu_s": {k: round(v, 3) for k, v in s.get("seconds_cpu", {}).items()},
    "peak_rss_bytes_per_url": round(s["peak_rss_bytes"] / int(urls), 1),
}))
PY
    done
  done
done
python3 - "$lines" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
for w in dict.fromkeys(r["workload"] for r in runs):
    med = lambda side, f: statistics.median(f(r) for r in runs if r["workload"] == w and r["side"] == side)
    line = {"workload": w, "medians_of": sum(r["workload"] == w for r in runs) // 2,
            "bare_io_s": None if runs[0]["bare_io_s"] is None
            else med("before", lambda r: r["bare_io_s"])}
    for side in ("before", "after"):
        line[side] = {"end_to_end_s": med(side, lambda r: r["end_to_end_s"]),
                      "cpu_s": med(side, lambda r: r["cpu_s"]),
                      "write_s": med(side, lambda r: r["phases_s"]["write"]),
                      "peak_rss_bytes_per_url": med(side, lambda r: r["peak_rss_bytes_per_url"])}
        phases = [r["phases_cpu_s"] for r in runs if r["workload"] == w and r["side"] == side]
        if all(phases):
            line[side]["phases_cpu_s"] = {p: statistics.median(x[p] for x in phases)
                                          for p in ("read", "exchange", "solve", "value", "write")}
    line["after_over_before"] = round(line["after"]["end_to_end_s"] / line["before"]["end_to_end_s"], 3)
    line["cpu_after_over_before"] = round(line["after"]["cpu_s"] / line["before"]["cpu_s"], 3)
    # per phase: the ratio of the CPU medians, and the pairs (runs of one rep) the after build won
    pairs = {}
    for r in runs:
        if r["workload"] == w and r["phases_cpu_s"]:
            pairs.setdefault(r["rep"], {})[r["side"]] = r
    pairs = [p for p in pairs.values() if len(p) == 2]
    if "phases_cpu_s" in line["before"] and "phases_cpu_s" in line["after"] and pairs:
        phases = ("read", "exchange", "solve", "value", "write", "total")
        line["phases_cpu_after_over_before"] = {
            p: round(statistics.median(x["after"]["phases_cpu_s"][p] for x in pairs)
                     / statistics.median(x["before"]["phases_cpu_s"][p] for x in pairs), 3)
            for p in phases}
        line["phases_cpu_after_faster_in"] = {
            p: f'{sum(x["after"]["phases_cpu_s"][p] < x["before"]["phases_cpu_s"][p] for x in pairs)} of {len(pairs)}'
            for p in phases}
    print(json.dumps(line))
PY
