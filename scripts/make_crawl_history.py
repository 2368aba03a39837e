#!/usr/bin/env python3
"""Writes a small, seeded crawl history for `revisit estimate` (used by compare-outputs.sh).

    python3 scripts/make_crawl_history.py PAGES_DIR OUT.parquet

2,000 URLs of the page set (spread over it), 30 daily crawls each, changes drawn from each page's
own change_rate; the first 20 URLs come from a complete feed (complete_obs). A few rows exercise
the other paths of the reader: URLs no page has, and one row without `changed` (counted invalid).
The same arguments give the same rows. Format: src/io/history.rs. Needs pyarrow only.
"""
import math
import random
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

URLS, DAYS, COMPLETE, SEED = 2000, 30, 20, 7
T0 = 1_763_856_000.0  # 2025-11-23T00:00:00Z; any fixed epoch does

pages_dir, out = Path(sys.argv[1]), Path(sys.argv[2])
pages = pa.concat_tables(
    pq.read_table(f, columns=["url", "change_rate"]) for f in sorted(pages_dir.glob("*.parquet"))
)
step = max(1, pages.num_rows // URLS)
urls = pages["url"].to_pylist()[::step][:URLS]
rates = pages["change_rate"].to_pylist()[::step][:URLS]

rng = random.Random(SEED)
rows = []  # (url, observed_at_s, changed, complete_obs)
for i, (url, rate) in enumerate(zip(urls, rates)):
    # One crawl a day at a jittered hour; the page changed since the previous crawl with
    # probability 1 - exp(-rate * gap in days).
    previous = T0 - 86400.0
    for day in range(DAYS):
        at = T0 + day * 86400.0 + rng.uniform(0, 3600)
        changed = rng.random() < -math.expm1(-rate * (at - previous) / 86400.0)
        rows.append((url, at, changed, i < COMPLETE))
        previous = at

# Histories of URLs that no page has (estimate --pages counts them), and one unusable row.
for k in range(5):
    for day, changed in enumerate([False, True, False]):
        rows.append((f"https://not-in-pages.example/{k}", T0 + day * 86400.0, changed, False))
rows.append((urls[0], T0 + DAYS * 86400.0, None, False))

url, at, changed, complete = zip(*rows)
table = pa.table({
    "url": pa.array(url, pa.utf8()),
    "observed_at_s": pa.array(at, pa.float64()),
    "changed": pa.array(changed, pa.bool_()),
    "complete_obs": pa.array(complete, pa.bool_()),
})
out.parent.mkdir(parents=True, exist_ok=True)
pq.write_table(table, out)
