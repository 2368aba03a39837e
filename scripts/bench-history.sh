#!/usr/bin/env bash
# Benchmark of learning change rates inside the job: generate N URLs (default 10M) with a D-day
# daily crawl history (default 30: 300M rows, kept between runs), then measure in one run the bare
# Parquet read + write of the pages, the plain job, and the job reading the history
# (run --history) on the same pages and threads; print one JSON line: wall times, their ratios, and
# peak memory per URL and per history row.
#
#   scripts/bench-history.sh                      # 10M URLs x 30 days, 2 workers, in bench-data/
#   URLS=100000 DAYS=30 WORKERS=2 scripts/bench-history.sh
#   WINDOW_DAYS=14 scripts/bench-history.sh       # run --history --window-days 14
#   GEN_ONLY=1 scripts/bench-history.sh           # generate (or check) the data only
#   REVISIT_BIN=/path/to/older/revisit scripts/bench-history.sh
set -euo pipefail
cd "$(dirname "$0")/.."
urls=${URLS:-10000000}
days=${DAYS:-30}
workers=${WORKERS:-2}
objective=${OBJECTIVE:-harmonic}
# the night after the history, as in scripts/bench.sh
start=2026-11-23T00:00:00Z
# the same folder and pages as scripts/bench.sh (same gen options): the history is added to them
dir=${BENCH_DIR:-bench-data}/$urls
source scripts/revisit-bin.sh
# _history-done: written once the history is whole (a gen killed midway leaves no marker); it
# names the days and end the history was made for, and its rows and bytes
marker="$dir/history/_history-done"
want="days=$days end=$start"
if [ ! -f "$marker" ] || [ "$(head -1 "$marker")" != "$want" ]; then
  rm -f "$marker"
  mkdir -p "$dir"
  gen_start=$(date +%s.%N)
  "$bin" gen --urls "$urls" --shards 16 --row-group-rows 131072 --out "$dir" \
    --history-days "$days" --history-end "$start" 2>&1 | tee "$dir/history-gen.log" >&2
  gen_end=$(date +%s.%N)
  rows=$(sed -n 's/.*history: \([0-9]*\) rows.*/\1/p' "$dir/history-gen.log")
  bytes=$(du -sb "$dir/history" | cut -f1)
  printf '%s\nrows=%s bytes=%s gen_s=%s\n' "$want" "$rows" "$bytes" \
    "$(echo "$gen_end - $gen_start" | bc)" >"$marker"
fi
facts=$(sed -n 2p "$marker")
echo "history: $want $facts" >&2
if [ -n "${GEN_ONLY:-}" ]; then
  exit 0
fi
window=()
if [ -n "${WINDOW_DAYS:-}" ]; then
  window=(--window-days "$WINDOW_DAYS")
fi
rm -rf "$dir/bare" "$dir/out" "$dir/learned"
bare=$("$bin" bench-io "$dir/pages" --out "$dir/bare" -w "$workers")
t0=$(date +%s.%N)
"$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" --objective "$objective" --out "$dir/out" \
  -w "$workers" -q --start "$start" >&2
t1=$(date +%s.%N)
"$bin" run "$dir/pages" --hosts "$dir/hosts.parquet" --objective "$objective" \
  --out "$dir/learned" -w "$workers" -q --start "$start" \
  --history "$dir/history" "${window[@]}" >&2
t2=$(date +%s.%N)
python3 - "$bare" "$dir/out/summary.json" "$dir/learned/summary.json" "$t0" "$t1" "$t2" \
  "$urls" "$days" "$facts" <<'PY'
import json, sys
bare = json.loads(sys.argv[1])
plain, learned = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
t0, t1, t2 = map(float, sys.argv[4:7])
urls, days = int(sys.argv[7]), int(sys.argv[8])
facts = dict(kv.split("=") for kv in sys.argv[9].split())
rows = int(facts["rows"])
plain_s, learned_s, bare_s = t1 - t0, t2 - t1, bare["seconds"]
print(json.dumps({
    "urls": urls, "workers": plain["workers"], "objective": plain["objective"],
    "history_days": days, "history_rows": rows, "history_bytes": int(facts["bytes"]),
    "bare_io_s": round(bare_s, 3),
    "plain": {
        "end_to_end_s": round(plain_s, 3), "ratio_to_bare_io": round(plain_s / bare_s, 3),
        "peak_rss_bytes": plain["peak_rss_bytes"],
        "peak_rss_bytes_per_url": round(plain["peak_rss_bytes"] / urls, 1),
    },
    "history": {
        "end_to_end_s": round(learned_s, 3), "ratio_to_plain": round(learned_s / plain_s, 3),
        "ratio_to_bare_io": round(learned_s / bare_s, 3),
        "phases_s": {k: round(v, 3) for k, v in learned["seconds"].items()},
        "peak_rss_bytes": learned["peak_rss_bytes"],
        "peak_rss_bytes_per_url": round(learned["peak_rss_bytes"] / urls, 1),
        "peak_rss_bytes_per_history_row": round(learned["peak_rss_bytes"] / rows, 2),
        # what reading the history adds to the plain run's peak, per row
        "extra_peak_rss_bytes_per_history_row":
            round((learned["peak_rss_bytes"] - plain["peak_rss_bytes"]) / rows, 2),
    },
}))
PY
