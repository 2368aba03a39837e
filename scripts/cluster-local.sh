#!/usr/bin/env bash
# Runs one revisit job as N processes on this machine (timely's cluster mode over localhost), the
# way it runs on N machines: every process gets the same arguments, its own -p, and one hostfile.
#
#   scripts/cluster-local.sh 2 run data/pages --hosts data/hosts.parquet --out out -w 1
#
# On real machines: write a hostfile with one host:port per line (process 0 first), copy it to
# every machine, and start `revisit run ... -n N -p I --hostfile FILE` on machine I. The inputs and
# --out must be on a filesystem every machine sees (process 0 publishes the output).
set -euo pipefail
n=${1:?usage: cluster-local.sh N run ARGS...}
shift
source "$(dirname "$0")/revisit-bin.sh"
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
base=$((20000 + RANDOM % 20000))
for ((i = 0; i < n; i++)); do echo "127.0.0.1:$((base + i))" >> "$hostfile"; done
pids=()
for ((i = 0; i < n; i++)); do
  "$bin" "$@" -n "$n" -p "$i" --hostfile "$hostfile" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit $status
