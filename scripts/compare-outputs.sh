#!/usr/bin/env bash
# Proves that two revisit binaries show a user the same thing: runs the same commands (run with 1
# and 2 workers, with and without --timetable (cyclic and rolling), as 2 processes; the next night
# from a run's output (--previous) and with learned change rates (--history); evaluate, sweep,
# simulate's nightly loop, estimate, gen) with each binary into its own folder, then compares the
# two trees file by file (scripts/compare_outputs.py: Parquet column by column to the bit, JSON without the timings,
# every other file byte for byte). Prints one line per case and exits 1 on any difference.
#
#   scripts/compare-outputs.sh BEFORE_BIN [AFTER_BIN]   # AFTER: target/release/revisit
#   URLS=100000 WORK=/tmp/cmp scripts/compare-outputs.sh /work/baseline/revisit-before
#
# Every case runs on the sample in data/ and on a generated set of URLS URLs (default 1,000,000,
# written by BEFORE's `gen`). Scratch in WORK (default tmp/compare): inputs/, before/, after/,
# each case as SET/CASE/{stdout,stderr,rc,out/}. Needs python3 with pyarrow ($REVISIT_PYTHON, as scripts/test.sh installs into .venv).
# Builds nothing: build AFTER first (cargo build --release).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
before_bin=$(realpath -m "${1:?usage: compare-outputs.sh BEFORE_BIN [AFTER_BIN]}")
after_bin=${2:+$(realpath -m "$2")}
work=$(realpath -m "${WORK:-$repo/tmp/compare}")
urls=${URLS:-1000000}
# Relative paths above are the caller's; from here on the sample's data/pages is found from the
# repository root (it is the binaries' default input, relative to the working directory).
cd "$repo"
after_bin=${after_bin:-$(realpath -m "${CARGO_TARGET_DIR:-target}/release/revisit")}
for bin in "$before_bin" "$after_bin"; do
  [ -x "$bin" ] || { echo "compare-outputs: no executable $bin" >&2; exit 2; }
done
python=${REVISIT_PYTHON:-python3}
"$python" -c "import pyarrow" || { echo "compare-outputs: needs pyarrow (scripts/test.sh installs it into .venv; REVISIT_PYTHON=.venv/bin/python)" >&2; exit 2; }

# Both sides run in this same folder, then it is renamed to before/ or after/: paths that the
# commands print (output: ..., "out": ...) are then equal and need no masking.
cur=$work/current
inputs=$work/inputs
gen=$inputs/gen-$urls

# one NAME CMD...: runs CMD, keeping its stdout, stderr and exit code in $cur/NAME/. The timeout
# keeps a binary that hangs (e.g. a cluster process that never connects) from stalling the run.
one() {
  local dir=$cur/$1
  shift
  mkdir -p "$dir"
  local rc=0
  timeout 600 "$@" >"$dir/stdout" 2>"$dir/stderr" || rc=$?
  echo "$rc" >"$dir/rc"
}

# two_processes NAME BIN ARGS...: one `run` as two processes over localhost, -w 1 each, as
# scripts/cluster-local.sh starts it, but each process under its own timeout and output files.
two_processes() {
  local dir=$cur/$1 bin=$2
  shift 2
  mkdir -p "$dir"
  local base=$((20000 + RANDOM % 20000))
  printf '127.0.0.1:%d\n127.0.0.1:%d\n' "$base" $((base + 1)) >"$work/hostfile"
  local rc0=0 rc1=0
  timeout 600 "$bin" "$@" -w 1 -n 2 -p 1 --hostfile "$work/hostfile" \
    >"$dir/p1.stdout" 2>"$dir/p1.stderr" &
  local p1=$!
  timeout 600 "$bin" "$@" -w 1 -n 2 -p 0 --hostfile "$work/hostfile" \
    >"$dir/stdout" 2>"$dir/stderr" || rc0=$?
  wait "$p1" || rc1=$?
  echo "$rc0" >"$dir/rc"
  echo "$rc1" >"$dir/p1.rc"
}

# cases BIN SET PAGES HOSTS HISTORY: every case on one page set, written under $cur/SET/.
cases() {
  local bin=$1 set=$2 pages=$3 hosts=$4 history=$5
  local d=$cur/$set
  local p=("$pages" --hosts "$hosts")
  one "$set/run-w1" "$bin" run "${p[@]}" -q -w 1 --out "$d/run-w1/out"
  one "$set/run-w2" "$bin" run "${p[@]}" -q -w 2 --out "$d/run-w2/out"
  one "$set/run-w1-timetable" "$bin" run "${p[@]}" -q -w 1 --timetable --cyclic \
    --out "$d/run-w1-timetable/out"
  one "$set/run-w2-timetable" "$bin" run "${p[@]}" -q -w 2 --timetable \
    --out "$d/run-w2-timetable/out"
  one "$set/run-w2-timetable-start" "$bin" run "${p[@]}" -q -w 2 --timetable \
    --start 2026-11-23T00:00:00Z --out "$d/run-w2-timetable-start/out"
  two_processes "$set/run-2-processes" "$bin" run "${p[@]}" -q --timetable \
    --out "$d/run-2-processes/out"
  # the next night: the state joined by URL, last night's visits taken as the fetches made (the
  # fetch log's join), or its due times when it made no timetable; and change rates learned
  one "$set/run-w2-previous" "$bin" run "${p[@]}" -q -w 2 --timetable \
    --previous "$d/run-w2-timetable-start/out" --out "$d/run-w2-previous/out"
  one "$set/run-w1-previous-due" "$bin" run "${p[@]}" -q -w 1 \
    --previous "$d/run-w2/out" --out "$d/run-w1-previous-due/out"
  two_processes "$set/run-2-processes-previous" "$bin" run "${p[@]}" -q --timetable \
    --previous "$d/run-w2-timetable-start/out" --out "$d/run-2-processes-previous/out"
  one "$set/run-w2-learn" "$bin" run "${p[@]}" -q -w 2 --history "$history" \
    --out "$d/run-w2-learn/out"

  # --rates=PATH, not --rates PATH: --rates takes several values and would swallow the page set.
  one "$set/evaluate-rates" "$bin" evaluate --rates="$d/run-w2/out/rates" "${p[@]}" \
    -q -w 2 --json
  one "$set/evaluate-visits" "$bin" evaluate --visits="$d/run-w1-timetable/out/visits" "${p[@]}" \
    -q -w 2 --json
  one "$set/evaluate-fetch-time" "$bin" evaluate --rates="$d/run-w2/out/rates" "${p[@]}" \
    --fetch-time const:0.5 -q -w 2 --json
  one "$set/simulate" "$bin" simulate "${p[@]}" --nights 3 --failure-share 0.1 --seed 3 -q \
    --json --out "$d/simulate/out"

  one "$set/estimate" "$bin" estimate "$history" \
    --out "$d/estimate/out/change_rates.parquet" --json
  one "$set/estimate-pages" "$bin" estimate "$history" \
    --out "$d/estimate-pages/out/change_rates.parquet" \
    --pages "$pages" --out-pages "$d/estimate-pages/out/pages" --json
}

# side BIN NAME: every case with one binary, into $work/NAME/.
side() {
  local bin=$1
  rm -rf "$cur" "${work:?}/$2"
  mkdir -p "$cur"
  cases "$bin" sample data/pages data/hosts.parquet "$inputs/history-sample.parquet"
  cases "$bin" gen "$gen/pages" "$gen/hosts.parquet" "$inputs/history-gen.parquet"

  # The sample as the default input, when no page set is given.
  one sample/run-default "$bin" run -q -w 2 --out "$cur/sample/run-default/out"
  one sample/evaluate-fetch-time-default "$bin" evaluate --rates="$cur/sample/run-w2/out/rates" \
    --fetch-time const:0.5 -q -w 2 --json
  one sample/sweep-default "$bin" sweep -q -w 2 --out "$cur/sample/sweep-default/out"
  one gen/sweep "$bin" sweep "$gen/pages" --hosts "$gen/hosts.parquet" --policies harmonic,binary \
    --points 5 -q -w 2 --out "$cur/gen/sweep/out"
  # gen itself must write the same bytes (small: it is the input generator, not a workload).
  one gen/gen-20000 "$bin" gen --urls 20000 --out "$cur/gen/gen-20000/out"

  mv "$cur" "$work/$2"
}

echo "compare-outputs: $before_bin vs $after_bin, $urls generated URLs, in $work" >&2
rm -rf "$inputs"
mkdir -p "$inputs"
"$before_bin" gen --urls "$urls" --out "$gen" >/dev/null
"$python" scripts/make_crawl_history.py data/pages "$inputs/history-sample.parquet"
"$python" scripts/make_crawl_history.py "$gen/pages" "$inputs/history-gen.parquet"

side "$before_bin" before
side "$after_bin" after

status=0
"$python" scripts/compare_outputs.py "$work/before" "$work/after" || status=$?
echo "wall time: ${SECONDS} s" >&2
exit "$status"
