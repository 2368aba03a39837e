#!/usr/bin/env bash
# NeurIPS'19 experiment 1 (Kolobov et al., §7 and supplement §9) on synthetic page sets like the
# paper's: bandwidth 20% of the URLs, 4% of URLs with complete change observations, no politeness
# (the paper has none; the polite figures are printed too). Prints J_h and J_b per URL for
#   LC (harmonic), BLC and BLC-eps as the paper ran them (binary-blind: Azar's optimum blind to
#   complete observations, --floor 0.4 the paper's best eps), revisit's binary with and without the
#   floor (the exact J_b optimum using complete observations), LCA (harmonic-approx), UC (uniform),
#   CC (change-rate).
# twice: once with the complete-observation URLs a random 4% (`gen` default), once with them the 4%
# most important URLs (`gen --complete-by importance`), because the paper's J_b claim depends on it.
#
#   scripts/neurips-exp1.sh                # 1M URLs (data in bench-data/, kept between runs)
#   URLS=100000 scripts/neurips-exp1.sh
set -euo pipefail
cd "$(dirname "$0")/.."
urls=${URLS:-1000000}
source scripts/revisit-bin.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for complete_by in random importance; do
  dir=${BENCH_DIR:-bench-data}/$urls
  [ "$complete_by" = importance ] && dir=$dir-complete-by-importance
  if [ ! -f "$dir/hosts.parquet" ]; then
    "$bin" gen --urls "$urls" --shards 16 --row-group-rows 131072 --complete-by "$complete_by" \
      --out "$dir" >&2
  fi
  common=("$dir/pages" --hosts "$dir/hosts.parquet" -q -w 2 --from 0.2 --to 0.2 --points 1)
  # Every policy at 20%, with and without politeness caps, from one load.
  "$bin" sweep "${common[@]}" --out "$work/$complete_by" \
    --policies harmonic,binary-blind,binary,harmonic-approx,uniform,change-rate,importance >/dev/null
  # BLC-eps: a non-starvation floor of eps R / |W|, blind as in the paper and with observations.
  "$bin" sweep "${common[@]}" --policies binary-blind,binary --floor 0.4 --out "$work/$complete_by-eps" \
    >/dev/null
done

python3 - "$work" "$urls" <<'PY'
import csv, sys
work, urls = sys.argv[1], int(sys.argv[2])
names = {"harmonic": "LC (harmonic)", "binary-blind": "BLC as the paper ran it (binary-blind)",
         "binary-blind-eps": "BLC-eps as the paper ran it (+ --floor 0.4)",
         "binary": "binary (exact J_b optimum)", "binary-eps": "binary --floor 0.4",
         "harmonic-approx": "LCA (harmonic-approx)", "uniform": "UC (uniform)",
         "change-rate": "CC (change-rate)", "importance": "importance"}
for complete_by in ["random", "importance"]:
    rows = {}
    def take(path, suffix=""):
        for r in csv.DictReader(open(path)):
            name = r["policy"] + suffix
            h = float(r["cost_harmonic"]) / urls if r["cost_harmonic"] else float("inf")
            rows.setdefault(name, {})[r["polite"] == "true"] = (h, float(r["cost_binary"]) / urls)
    take(f"{work}/{complete_by}/sweep.csv")
    take(f"{work}/{complete_by}-eps/sweep.csv", "-eps")
    print(f"NeurIPS'19 experiment 1: {urls} URLs, bandwidth 0.2 x URLs, complete observations: "
          f"4% by {complete_by}; costs per URL (lower is better)")
    print(f"{'policy':42} {'J_h no caps':>12} {'J_b no caps':>12} {'J_h polite':>12} {'J_b polite':>12}")
    for key in ["harmonic", "binary-blind-eps", "binary-blind", "binary-eps", "binary",
                "harmonic-approx", "importance", "uniform", "change-rate"]:
        free, polite = rows[key][False], rows[key][True]
        print(f"{names[key]:42} {free[0]:12.6f} {free[1]:12.6f} {polite[0]:12.6f} {polite[1]:12.6f}")
    lc, blc = rows["harmonic"], rows["binary-blind"]
    for polite in [False, True]:
        gap = 100 * (lc[polite][1] / blc[polite][1] - 1)
        print(f"  LC's J_b vs BLC's, {'polite' if polite else 'no caps'}: {gap:+.2f}%")
    print()
PY
