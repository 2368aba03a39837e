#!/usr/bin/env bash
# Fault injection for cluster runs: N rounds of a 2-process `revisit run` into one output folder, each
# with a seeded fault at a random moment: process 0 or 1 killed (SIGKILL), stopped (SIGSTOP) for a
# while then continued, stopped then killed, or left alone. After every round it checks:
#   - no process hangs (each round must end within a minute);
#   - the output was published by this round  =>  its tables are byte-identical to a clean run's,
#     and every process that was not killed exited 0;
#   - it was not published                      =>  every process exited non-zero, and the previous
#     output is intact (same run, same bytes);
# and at the end, after one clean run, that no staging folder of a dead run is left beside the output.
#
#   scripts/fault-inject.sh [ROUNDS] [SEED]        # defaults: 40 rounds, seed 1; URLS=200000
set -uo pipefail
rounds=${1:-40}
seed=${2:-1}
urls=${URLS:-200000}
source "$(dirname "$0")/revisit-bin.sh"
work=$(mktemp -d)
# (no EXIT trap: bash runs it in command substitutions too; the folder is removed at the end)
"$bin" gen --urls "$urls" --hosts $((urls / 200)) --out "$work/data" > /dev/null 2>&1 || { echo "gen failed"; exit 2; }
RANDOM=$seed
port=$((30000 + seed % 20000))

# Runs the 2-process job into $1; $2 is a fault ("none", "kill P", "stop P SECONDS", "stopkill P
# SECONDS") applied after $3 seconds. Sets exit0, exit1, killed (the process killed, or -1).
job() {
  local out=$1 fault=$2 delay=$3
  port=$((port + 2)); [ $port -gt 60000 ] && port=30000
  printf "127.0.0.1:%d\n127.0.0.1:%d\n" $port $((port + 1)) > "$work/hostfile"
  local args=(run "$work/data/pages" --hosts "$work/data/hosts.parquet" --out "$out" -w 1 -q
              -n 2 --hostfile "$work/hostfile" --peer-timeout-s 2 --connect-timeout-s 20)
  "$bin" "${args[@]}" -p 0 > "$work/p0.out" 2> "$work/p0.err" & local p0=$!
  "$bin" "${args[@]}" -p 1 > "$work/p1.out" 2> "$work/p1.err" & local p1=$!
  local pids=($p0 $p1)
  killed=-1
  set -- $fault
  if [ "$1" != none ]; then
    sleep "$delay"
    local target=${pids[$2]}
    case $1 in
      kill) kill -KILL "$target" 2>/dev/null && killed=$2 ;;
      stop) kill -STOP "$target" 2>/dev/null; sleep "$3"; kill -CONT "$target" 2>/dev/null ;;
      stopkill) kill -STOP "$target" 2>/dev/null; sleep "$3"; kill -KILL "$target" 2>/dev/null && killed=$2 ;;
    esac
  fi
  # a hang is a failure: give every round a minute
  sh -c "sleep 60; kill -KILL $p0 $p1 2>/dev/null" & local watchdog=$!
  wait $p0; exit0=$?
  wait $p1; exit1=$?
  kill $watchdog 2>/dev/null; wait $watchdog 2>/dev/null
}

tables() { # the bytes of an output's tables, as one digest per file
  (cd "$1" && find rates hosts rejected -type f | sort | xargs sha256sum) 2>/dev/null
}
run_of() { grep -o '"run_id": *"[0-9a-f]*"' "$1/manifest.json" 2>/dev/null; }

started=$(date +%s%N)
job "$work/reference" none 0
# faults land anywhere in a run: delays up to 1.2 x a clean run's duration
span_ms=$(( ($(date +%s%N) - started) / 1000000 * 12 / 10 + 1 ))
[ $exit0 -eq 0 ] && [ $exit1 -eq 0 ] || { echo "the clean run failed:"; cat "$work"/p*.err; exit 2; }
reference=$(tables "$work/reference")
out="$work/out"
job "$out" none 0
published=0 failed=0 violations=0
for ((r = 1; r <= rounds; r++)); do
  before_run=$(run_of "$out"); before_tables=$(tables "$out")
  kinds=(none kill kill stop stop stopkill)
  kind=${kinds[RANDOM % ${#kinds[@]}]}
  target=$((RANDOM % 2))
  ms=$(( (RANDOM * 32768 + RANDOM) % span_ms ))
  delay=$(printf "%d.%03d" $((ms / 1000)) $((ms % 1000)))
  pause=$((RANDOM % 4))
  case $kind in none) fault=none ;; kill) fault="kill $target" ;; *) fault="$kind $target $pause" ;; esac
  job "$out" "$fault" "$delay"
  after_run=$(run_of "$out")
  verdict=ok
  if [ "$after_run" != "$before_run" ]; then
    outcome=published; published=$((published + 1))
    [ "$(tables "$out")" == "$reference" ] || verdict="VIOLATION: published tables differ from the clean run's"
    for p in 0 1; do
      e=$([ $p -eq 0 ] && echo $exit0 || echo $exit1)
      [ $p -eq $killed ] || [ "$e" -eq 0 ] || verdict="VIOLATION: published but process $p exited $e"
    done
  else
    outcome="not published"; failed=$((failed + 1))
    [ $exit0 -ne 0 ] && [ $exit1 -ne 0 ] || verdict="VIOLATION: nothing published but exits $exit0 $exit1"
    [ "$(tables "$out")" == "$before_tables" ] || verdict="VIOLATION: the previous output changed"
  fi
  [ "$verdict" == ok ] || violations=$((violations + 1))
  printf "round %3d: %-16s at %ss: %-13s exits %3d %3d  %s\n" "$r" "$fault" "$delay" "$outcome" "$exit0" "$exit1" "$verdict"
  if [ "$verdict" != ok ]; then sed 's/^/    p0: /' "$work/p0.err"; sed 's/^/    p1: /' "$work/p1.err"; fi
done
job "$out" none 0
left=$(find "$work" -maxdepth 1 -name '.out.staging-*' | wc -l)
[ $exit0 -eq 0 ] && [ $exit1 -eq 0 ] && [ "$(tables "$out")" == "$reference" ] || { echo "VIOLATION: the final clean run failed"; violations=$((violations + 1)); }
[ "$left" -eq 0 ] || { echo "VIOLATION: $left staging folders left beside the output"; violations=$((violations + 1)); }
echo "fault injection, seed $seed, $urls URLs: $rounds rounds, $published published, $failed not published, $violations violations"
[ -n "${KEEP:-}" ] || rm -rf "$work"
[ $violations -eq 0 ]
