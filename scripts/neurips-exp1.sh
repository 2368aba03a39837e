#!/usr/bin/env bash
# NeurIPS'19 experiment 1 (Kolobov et al., §7 and supplement §9) on a synthetic page set like the
# paper's: bandwidth 20% of the URLs, 4% of URLs with complete change observations, no politeness
# (the paper has none; the polite figures are printed too). Prints J_h and J_b per URL for
#   LC (harmonic), BLC-eps (binary --floor 0.4, the paper's best eps), BLC as the paper ran it
#   (Azar's binary optimum, blind to complete observations), revisit's binary (the exact J_b optimum
#   with complete observations), LCA (harmonic-approx), UC (uniform), CC (change-rate).
#
#   scripts/neurips-exp1.sh                # 1M URLs (data in bench-data/, kept between runs)
#   URLS=100000 scripts/neurips-exp1.sh
set -euo pipefail
cd "$(dirname "$0")/.."
urls=${URLS:-1000000}
dir=${BENCH_DIR:-bench-data}/$urls
cargo build --release --quiet
bin=target/release/revisit
if [ ! -f "$dir/hosts.parquet" ]; then
  "$bin" gen --urls "$urls" --shards 16 --row-group-rows 131072 --out "$dir" >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=("$dir/pages" --hosts "$dir/hosts.parquet" -q -w 2)

# Every policy at 20%, with and without politeness caps, from one load.
"$bin" sweep "${common[@]}" --from 0.2 --to 0.2 --points 1 \
  --policies harmonic,binary,harmonic-approx,uniform,change-rate,importance --out "$work/sweep" >/dev/null
# BLC-eps: binary with a non-starvation floor of eps R / |W|.
"$bin" sweep "${common[@]}" --from 0.2 --to 0.2 --points 1 --policies binary --floor 0.4 \
  --out "$work/blc-eps" >/dev/null
# BLC as the paper ran it: Azar's optimum computed as if no change were observed, then valued on the
# true pages (where complete-observation URLs are fresh exactly when crawled after a change).
python3 - "$dir/pages" "$work/blind" <<'PY'
import os, sys, pyarrow.parquet as pq
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
for name in sorted(os.listdir(src)):
    t = pq.read_table(os.path.join(src, name))
    pq.write_table(t.drop(["complete_obs"]), os.path.join(out, name))
PY
for polite in true false; do
  delay=()
  [ "$polite" = false ] && delay=(--min-delay-s 1e-9) # a cap far above any demand: no politeness
  hosts=(--hosts "$dir/hosts.parquet")
  [ "$polite" = false ] && hosts=()
  "$bin" run "$work/blind" "${hosts[@]}" "${delay[@]}" --objective binary --bandwidth-fraction 0.2 \
    -q -w 2 --out "$work/blind-out-$polite" >/dev/null
  "$bin" evaluate "$dir/pages" "${hosts[@]}" "${delay[@]}" --rates "$work/blind-out-$polite/rates" \
    --json -q -w 2 >"$work/blind-$polite.json"
done
python3 - "$work" "$urls" <<'PY'
import csv, json, sys
work, urls = sys.argv[1], int(sys.argv[2])
rows = {}
def take(path, rename=None):
    for r in csv.DictReader(open(path)):
        name = rename or r["policy"]
        h = float(r["cost_harmonic"]) / urls if r["cost_harmonic"] else float("inf")
        rows.setdefault(name, {})[r["polite"] == "true"] = (h, float(r["cost_binary"]) / urls)
take(f"{work}/sweep/sweep.csv")
take(f"{work}/blc-eps/sweep.csv", "BLC-eps (binary --floor 0.4)")
for polite in ["true", "false"]:
    v = json.load(open(f"{work}/blind-{polite}.json"))["value"]
    h = v["cost_harmonic"] / urls if v["cost_harmonic"] is not None else float("inf")
    rows.setdefault("BLC as in the paper (obs.-blind binary)", {})[polite == "true"] = (h, v["cost_binary"] / urls)
names = {"harmonic": "LC (harmonic)", "binary": "binary (exact J_b optimum)", "harmonic-approx": "LCA (harmonic-approx)",
         "uniform": "UC (uniform)", "change-rate": "CC (change-rate)", "importance": "importance"}
print(f"NeurIPS'19 experiment 1: {urls} URLs, bandwidth 0.2 x URLs; costs per URL (lower is better)")
print(f"{'policy':42} {'J_h no caps':>12} {'J_b no caps':>12} {'J_h polite':>12} {'J_b polite':>12}")
for key, r in rows.items():
    free, polite = r[False], r[True]
    print(f"{names.get(key, key):42} {free[0]:12.6f} {free[1]:12.6f} {polite[0]:12.6f} {polite[1]:12.6f}")
PY
