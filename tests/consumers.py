"""Reads a revisit output the way analytics engines do, without help: the same questions asked of
pyarrow and of DuckDB (and of Spark when pyspark is installed), with the types each engine infers
and the row counts the summary promises.

Usage: python3 consumers.py OUT_DIR   (OUT_DIR from `revisit run --timetable --start ...`;
exit status 0 when every check holds)
"""
import json
import sys
from datetime import datetime

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

out = sys.argv[1]
summary = json.load(open(f"{out}/summary.json"))
timetable = summary["timetable"]
con = duckdb.connect()


def duck(sql):
    return con.execute(sql.format(out=out)).fetchall()


def check(what, got, want):
    assert got == want, f"{what}: {got!r} != {want!r}"


# Tables as each engine opens them: pyarrow datasets with hive partitioning, DuckDB globs.
rates = ds.dataset(f"{out}/rates", format="parquet", partitioning="hive")
visits = ds.dataset(f"{out}/visits", format="parquet", partitioning="hive")
RATES = "read_parquet('{out}/rates/*/*.parquet', hive_partitioning = true)"
VISITS = "read_parquet('{out}/visits/*/*.parquet', hive_partitioning = true)"

# 1. Types: every column as written, and the partition column as an integer in both engines
#    (crawler=7, not crawler=007: DuckDB reads zero-padded values as VARCHAR).
want_rates = {
    "url": (pa.string(), "VARCHAR"),
    "host": (pa.string(), "VARCHAR"),
    "importance": (pa.float64(), "DOUBLE"),
    "change_rate": (pa.float64(), "DOUBLE"),
    "complete_obs": (pa.bool_(), "BOOLEAN"),
    "crawl_rate": (pa.float64(), "DOUBLE"),
    "crawl_probability": (pa.float64(), "DOUBLE"),
    "host_capped": (pa.bool_(), "BOOLEAN"),
    # the per-URL schedule: seconds between fetches, due times as UTC timestamps
    "fetch_interval_s": (pa.float64(), "DOUBLE"),
    "last_fetch_at": (pa.timestamp("us", tz="UTC"), "TIMESTAMP WITH TIME ZONE"),
    "next_fetch_at": (pa.timestamp("us", tz="UTC"), "TIMESTAMP WITH TIME ZONE"),
}
want_visits = {
    "at_s": (pa.float64(), "DOUBLE"),
    "url": (pa.string(), "VARCHAR"),
    "host": (pa.string(), "VARCHAR"),
    "fetch_at": (pa.timestamp("us", tz="UTC"), "TIMESTAMP WITH TIME ZONE"),
}
for name, dataset, table, want in [("rates", rates, RATES, want_rates), ("visits", visits, VISITS, want_visits)]:
    duck_types = {r[0]: r[1] for r in duck(f"describe select * from {table}")}
    for column, (arrow_type, duck_type) in want.items():
        check(f"{name}.{column} in pyarrow", dataset.schema.field(column).type, arrow_type)
        check(f"{name}.{column} in DuckDB", duck_types[column], duck_type)
    assert pa.types.is_integer(dataset.schema.field("crawler").type), dataset.schema.field("crawler").type
    check(f"{name}.crawler in DuckDB", duck_types["crawler"], "BIGINT")

# 2. Row counts: every scheduled URL, every planned visit, every host, every rejected row.
check("rates rows (pyarrow)", rates.count_rows(), summary["rows_scheduled"])
check("rates rows (DuckDB)", duck(f"select count(*) from {RATES}")[0][0], summary["rows_scheduled"])
check("visits rows (pyarrow)", visits.count_rows(), timetable["fetches_scheduled"])
check("visits rows (DuckDB)", duck(f"select count(*) from {VISITS}")[0][0], timetable["fetches_scheduled"])
check("hosts rows", pq.read_table(f"{out}/hosts").num_rows, summary["hosts"])
check("hosts rows (DuckDB)", duck("select count(*) from '{out}/hosts/*.parquet'")[0][0], summary["hosts"])
check("rejected rows", pq.read_table(f"{out}/rejected").num_rows, summary["rows_rejected"])

# 3. The same questions, asked of both engines.
#    Rows and bandwidth per crawler.
table = rates.to_table()
by_crawler = table.group_by("crawler").aggregate([("url", "count"), ("crawl_rate", "sum")])
arrow_rows = sorted(zip(by_crawler["crawler"].to_pylist(), by_crawler["url_count"].to_pylist()))
duck_rows = duck(f"select crawler, count(*) from {RATES} group by crawler order by crawler")
check("rows per crawler", [tuple(r) for r in duck_rows], arrow_rows)
check("crawlers", len(arrow_rows), summary["crawlers"])
total = pc.sum(table["crawl_rate"]).as_py()
assert abs(total - summary["bandwidth_used"]) <= 1e-9 * summary["bandwidth_used"], (total, summary["bandwidth_used"])
#    One crawler's partition, by the integer a person types.
seven_arrow = rates.count_rows(filter=ds.field("crawler") == 7)
seven_duck = duck(f"select count(*) from {RATES} where crawler = 7")[0][0]
check("crawler 7's rows", seven_duck, seven_arrow)
assert seven_arrow > 0, "crawler 7 has rows"
#    Tonight's first fetches: fetch_at is a plain column name in SQL, and start + at_s.
start = datetime.fromisoformat(summary["schedule"]["start"].replace("Z", "+00:00"))
#    (microseconds since the epoch: a timestamp with a time zone would need pytz in DuckDB's Python)
first_duck = duck(f"select epoch_us(fetch_at), url, at_s from {VISITS} order by fetch_at, url limit 5")
v = visits.to_table().sort_by([("fetch_at", "ascending"), ("url", "ascending")]).slice(0, 5)
micros = pc.cast(v["fetch_at"], pa.int64()).to_pylist()
first_arrow = list(zip(micros, v["url"].to_pylist(), v["at_s"].to_pylist()))
check("first fetches", [tuple(r) for r in first_duck], first_arrow)
start_us = int(start.timestamp()) * 1_000_000
for at, _, at_s in first_arrow:
    assert abs((at - start_us) / 1e6 - at_s) <= 1e-6, (at, start_us, at_s)
#    Every fetch inside the night [start, start + horizon), and the URLs due tonight are those
#    whose next_fetch_at falls in it (a first night has no last fetch).
night = f"timestamptz '{summary['schedule']['start']}' + to_seconds({summary['horizon_s']})"
check("fetches in the night", duck(f"select count(*) from {VISITS} where fetch_at >= timestamptz '{summary['schedule']['start']}' and fetch_at < {night}")[0][0], timetable["fetches_scheduled"])
check("URLs due tonight", duck(f"select count(*) from {RATES} where next_fetch_at < {night}")[0][0], summary["schedule"]["urls_due_tonight"])
check("intervals", duck(f"select count(*) from {RATES} where abs(fetch_interval_s * crawl_rate - 86400) > 1e-9 * 86400")[0][0], 0)
check("next_fetch_at nulls", rates.to_table().column("next_fetch_at").null_count, 0)
#    Politeness: no host's rates above its cap (caps are per horizon, rates per day).
per_day = 86400.0 / summary["horizon_s"]
over = duck(
    f"""select count(*) from '{{out}}/hosts/*.parquet' h
        join (select host, sum(crawl_rate) r from {RATES} group by host) x using (host)
        where x.r > h.cap * (1 + 1e-9) * {per_day}"""
)[0][0]
check("hosts over their cap", over, 0)

# 4. Provenance in every file's key-value metadata, the same as the summary's.
for path in [f"{out}/hosts/part-00000.parquet", f"{out}/rates/crawler=7/part-00000.parquet",
             f"{out}/visits/crawler=7/part-00000.parquet"]:
    meta = {k.decode(): v.decode() for k, v in pq.read_metadata(path).metadata.items()}
    for key in ["version", "command", "run_id", "started_at"]:
        check(f"{path} revisit.{key}", meta[f"revisit.{key}"], summary[key])
    check(f"{path} revisit.inputs", json.loads(meta["revisit.inputs"]), summary["inputs"])
    check(f"{path} revisit.options", json.loads(meta["revisit.options"]), summary["options"])
    check(f"{path} revisit.objective", meta["revisit.objective"], summary["objective"])
    check(f"{path} revisit.multiplier", float(meta["revisit.multiplier"]), summary["multiplier"])

# 5. Spark, when installed: the partition column inferred as an integer, the same counts.
try:
    from pyspark.sql import SparkSession
except ImportError:
    print("consumers: spark skipped (pyspark is not installed)")
else:
    spark = SparkSession.builder.master("local[1]").appName("revisit-consumers").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    r = spark.read.parquet(f"{out}/rates")
    check("rates.crawler in Spark", dict(r.dtypes)["crawler"], "int")
    check("rates rows (Spark)", r.count(), summary["rows_scheduled"])
    check("crawler 7's rows (Spark)", r.where("crawler = 7").count(), seven_arrow)
    s = spark.read.parquet(f"{out}/visits")
    check("visits.fetch_at in Spark", dict(s.dtypes)["fetch_at"], "timestamp")
    check("visits rows (Spark)", s.count(), timetable["fetches_scheduled"])
    spark.stop()
    print("consumers: spark agrees")

print("consumers: pyarrow and duckdb agree on", summary["rows_scheduled"], "rates rows and",
      timetable["fetches_scheduled"], "visits")
