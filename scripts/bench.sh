#!/usr/bin/env bash
# End-to-end benchmark: generate N URLs (default 10M), then measure in one run the bare
# Parquet read + write of the same data, the revisit job, and the next night's job continuing from
# it (--previous, --timetable: the state read and joined, every URL's due time, tonight's fetches),
# on the same threads; print one JSON line.
#
#   scripts/bench.sh                 # 10M URLs, 2 workers, data in bench-data/ (kept between runs)
#   URLS=1000000 WORKERS=2 scripts/bench.sh
#   REVISIT_BIN=/path/to/older/revisit scripts/bench.sh   # the same figures for another build
set -euo pipefail
cd "$(dirname "$0")/.."
urls=${URLS:-10000000}
workers=${WORKERS:-2}
objective=${OBJECTIVE:-harmonic}
dir=${BENCH_DIR:-bench-data}/$urls
source scripts/revisit-bin.sh
if [ ! -f "$dir/hosts.parquet" ]; then
  "$bin" gen --urls "$urls" --shards 16 --row-group-rows 131072 --out "$dir" >&2
fi
rm -rf "$dir/bare" "$dir/out" "$dir/nightly"
bare=$("$bin" bench-io "$dir/pages" --out "$dir/bare" -w "$workers")
start=$(date +%s.%N)
"$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" --objective "$objective" --out "$dir/out" \
  -w "$workers" -q --start 2026-11-23T00:00:00Z >&2
end=$(date +%s.%N)
"$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" --objective "$objective" --out "$dir/nightly" \
  -w "$workers" -q --previous "$dir/out" --timetable >&2
nightly_end=$(date +%s.%N)
python3 - "$bare" "$dir/out/summary.json" "$start" "$end" "$urls" "$dir/nightly/summary.json" "$nightly_end" <<'PY'
import json, sys
bare = json.loads(sys.argv[1]); s = json.load(open(sys.argv[2]))
wall = float(sys.argv[4]) - float(sys.argv[3]); urls = int(sys.argv[5])
n = json.load(open(sys.argv[6])); nightly = float(sys.argv[7]) - float(sys.argv[4])
print(json.dumps({
    "urls": urls, "workers": s["workers"], "objective": s["objective"],
    "end_to_end_s": round(wall, 3), "job_total_s": round(s["seconds"]["total"], 3),
    "bare_io_s": round(bare["seconds"], 3), "ratio_to_bare_io": round(wall / bare["seconds"], 3),
    "rounds": s["rounds"], "solve_s": round(s["seconds"]["solve"], 3),
    "phases_s": {k: round(v, 3) for k, v in s["seconds"].items()},
    "peak_rss_bytes_per_url": round(s["peak_rss_bytes"] / urls, 1),
    "hosts": s["hosts"], "hosts_capped": s["hosts_capped"],
    "crawler_load_max_over_mean": round(s["crawler_load_max_over_mean"], 4),
    "nightly": {
        "end_to_end_s": round(nightly, 3), "ratio_to_run": round(nightly / wall, 3),
        "ratio_to_bare_io": round(nightly / bare["seconds"], 3),
        "phases_s": {k: round(v, 3) for k, v in n["seconds"].items()},
        "peak_rss_bytes_per_url": round(n["peak_rss_bytes"] / urls, 1),
        "fetches_scheduled": n["timetable"]["fetches_scheduled"],
        "fetches_dropped": n["timetable"]["fetches_dropped"],
        "urls_due_tonight": n["schedule"]["urls_due_tonight"],
    },
}))
PY
