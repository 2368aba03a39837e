#!/usr/bin/env bash
# Two builds of revisit compared by the instructions they execute (valgrind's cachegrind): one
# JSON line per workload with each build's count, after over before, and the functions whose
# counts moved most. Wall and CPU time on this shared machine move by 6-25% between runs of one
# build; the whole run's instruction count by up to 0.2% (1 worker, 1M URLs; mostly in memcpy), a
# function's that does not copy by far less. So a change of a percent in one phase shows.
# Instructions are not time: a change that saves cache misses, not instructions, shows only in
# scripts/bench-ab.sh. About 20 s a run at 1M URLs.
#
#   scripts/bench-instructions.sh BEFORE_BIN AFTER_BIN              # hosts-1m and zipf-1m
#   WORKERS=2 scripts/bench-instructions.sh OLD NEW hosts-1m
#   PROCESSES=2 scripts/bench-instructions.sh OLD NEW zipf-1m   # 2 processes of WORKERS workers
#                                                   # on localhost, both counted (what they send
#                                                   # each other is encoded, between threads not)
#
# Workloads and their data as in scripts/bench.sh (scripts/workload.sh; generated when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/workload.sh
source scripts/two-builds.sh
two_builds "$@"
shift 2
[ $# -gt 0 ] || set -- hosts-1m zipf-1m
workers=${WORKERS:-1}
processes=${PROCESSES:-1}
command -v valgrind >/dev/null || { echo "bench-instructions: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for workload in "$@"; do
  dir=$(workload_data "$workload" "$after")
  for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    rm -rf "$scratch/out"
    args=(run "$dir/pages" --hosts "$dir/hosts.parquet" --out "$scratch/out" -w "$workers"
      --start 2026-11-23T00:00:00Z -q)
    if [ "$processes" = 1 ]; then
      valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$scratch/$side.0.cg" \
        "$bin" "${args[@]}" >/dev/null 2>"$scratch/$side.err" \
        || { cat "$scratch/$side.err" >&2; exit 1; }
    else
      # one hostfile of fresh local ports for the pair of runs' processes
      base=$((20000 + RANDOM % 20000))
      : > "$scratch/hostfile"
      for ((p = 0; p < processes; p++)); do echo "127.0.0.1:$((base + p))" >> "$scratch/hostfile"; done
      pids=()
      for ((p = 0; p < processes; p++)); do
        valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$scratch/$side.$p.cg" \
          "$bin" "${args[@]}" -n "$processes" -p "$p" --hostfile "$scratch/hostfile" \
          >/dev/null 2>"$scratch/$side.$p.err" &
        pids+=($!)
      done
      for ((p = 0; p < processes; p++)); do
        wait "${pids[$p]}" || { cat "$scratch/$side.$p.err" >&2; exit 1; }
      done
    fi
  done
  python3 - "$workload" "$workers" "$processes" "$scratch" <<'PY'
import collections, glob, json, os, sys
workload, workers, processes, scratch = sys.argv[1:]

def by_function(side):
    """Instructions per function of a side's cachegrind outputs, one per process (fn= names the
    lines that follow), summed."""
    counts = collections.Counter()
    for path in glob.glob(os.path.join(scratch, f"{side}.*.cg")):
        fn = None
        for line in open(path):
            if line.startswith("fn="):
                fn = line[3:].strip()
            elif fn and line[:1].isdigit():
                parts = line.split()
                if len(parts) == 2:
                    counts[fn] += int(parts[1])
    return counts

b, a = by_function("before"), by_function("after")
total_b, total_a = sum(b.values()), sum(a.values())
moved = sorted(set(b) | set(a), key=lambda f: -abs(a[f] - b[f]))[:10]
print(json.dumps({
    "workload": workload, "workers": int(workers), "processes": int(processes),
    "before_instructions": total_b, "after_instructions": total_a,
    "after_over_before": round(total_a / total_b, 5),
    "moved_most": [{"function": f[:120], "before": b[f], "after": a[f]} for f in moved],
}))
PY
done
