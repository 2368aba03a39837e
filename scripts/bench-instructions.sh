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
command -v valgrind >/dev/null || { echo "bench-instructions: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for workload in "$@"; do
  dir=$(workload_data "$workload" "$after")
  for side in before after; do
    bin=$before; [ $side = after ] && bin=$after
    rm -rf "$scratch/out"
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$scratch/$side.cg" \
      "$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" --out "$scratch/out" -w "$workers" \
      --start 2026-11-23T00:00:00Z -q >/dev/null 2>"$scratch/$side.err" \
      || { cat "$scratch/$side.err" >&2; exit 1; }
  done
  python3 - "$workload" "$workers" "$scratch/before.cg" "$scratch/after.cg" <<'PY'
import collections, json, sys
workload, workers, before, after = sys.argv[1:]

def by_function(path):
    """Instructions per function of a cachegrind output (fn= names the lines that follow)."""
    counts, fn = collections.Counter(), None
    for line in open(path):
        if line.startswith("fn="):
            fn = line[3:].strip()
        elif fn and line[:1].isdigit():
            parts = line.split()
            if len(parts) == 2:
                counts[fn] += int(parts[1])
    return counts

b, a = by_function(before), by_function(after)
total_b, total_a = sum(b.values()), sum(a.values())
moved = sorted(set(b) | set(a), key=lambda f: -abs(a[f] - b[f]))[:10]
print(json.dumps({
    "workload": workload, "workers": int(workers),
    "before_instructions": total_b, "after_instructions": total_a,
    "after_over_before": round(total_a / total_b, 5),
    "moved_most": [{"function": f[:120], "before": b[f], "after": a[f]} for f in moved],
}))
PY
done
