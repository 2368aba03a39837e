# Sourced by the benchmark scripts: the page sets they run on, named as workloads.
#
# zipf-N: N URLs on N/100 hosts of Zipf sizes; hosts-N: the same, with 3 in 10 URLs moved to
# hosts of one page each (the web's long tail). N is a count with an optional k, m or g suffix
# (10m, 100m). Data in BENCH_DIR (default bench-data/; zipf-N in N/, hosts-N in hosts-N/), kept
# between runs.

# workload_urls WORKLOAD: the number of URLs it names (hosts-10m -> 10000000)
workload_urls() {
  local n=${1#*-}
  n=${n,,}
  case $n in
    *k) echo $((${n%k} * 1000)) ;;
    *m) echo $((${n%m} * 1000000)) ;;
    *g) echo $((${n%g} * 1000000000)) ;;
    *[!0-9]* | '') echo "$(basename "$0"): not a count of URLs in $1" >&2; return 2 ;;
    *) echo "$n" ;;
  esac
}

# workload_dir WORKLOAD: the folder of its page set
workload_dir() {
  local urls
  urls=$(workload_urls "$1") || return
  case ${1%%-*} in
    zipf) echo "${BENCH_DIR:-bench-data}/$urls" ;;
    hosts) echo "${BENCH_DIR:-bench-data}/hosts-$urls" ;;
    *) echo "$(basename "$0"): unknown workload $1 (zipf-N or hosts-N)" >&2; return 2 ;;
  esac
}

# workload_data WORKLOAD BIN: generates its page set with BIN unless it is there; prints its folder
workload_data() {
  local dir urls single tail=() shards
  dir=$(workload_dir "$1") || return
  urls=$(workload_urls "$1")
  single=0
  [ "${1%%-*}" = hosts ] && single=$((urls * 3 / 10))
  [ "$single" = 0 ] || tail=(--single-page-hosts "$single")
  # 16 shards, or 64 at 100M: enough row groups for every worker, files of a sensible size
  shards=$(( urls / 1562500 > 16 ? urls / 1562500 : 16 ))
  if [ ! -f "$dir/hosts.parquet" ]; then
    "$2" gen --urls "$urls" "${tail[@]}" --shards "$shards" --row-group-rows 131072 \
      --out "$dir" >&2 || return
  fi
  echo "$dir"
}
