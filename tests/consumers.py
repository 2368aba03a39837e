"""Reads a revisit output the way analytics engines do, without help: pyarrow and DuckDB.

Usage: python3 consumers.py OUT_DIR   (exit status 0 when every check holds)
"""
import json
import sys

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

out = sys.argv[1]
summary = json.load(open(f"{out}/summary.json"))

# pyarrow: hive partitions crawler=NNN become an integer column
rates = ds.dataset(f"{out}/rates", format="parquet", partitioning="hive").to_table()
assert rates.num_rows == summary["rows_scheduled"], (rates.num_rows, summary["rows_scheduled"])
want = {
    "url": pa.string(),
    "host": pa.string(),
    "importance": pa.float64(),
    "change_rate": pa.float64(),
    "complete_obs": pa.bool_(),
    "crawl_rate": pa.float64(),
    "crawl_probability": pa.float64(),
    "host_capped": pa.bool_(),
}
for name, typ in want.items():
    assert rates.schema.field(name).type == typ, (name, rates.schema.field(name).type)
assert pa.types.is_integer(rates.schema.field("crawler").type)
assert rates.column("url").null_count == 0
complete = rates.column("complete_obs").to_pylist()
probability = rates.column("crawl_probability").to_pylist()
assert all((p is None) == (not c) for c, p in zip(complete, probability)), "probability only for complete obs"
total = sum(rates.column("crawl_rate").to_pylist())
assert abs(total - summary["bandwidth_used"]) <= 1e-9 * summary["bandwidth_used"], (total, summary["bandwidth_used"])

import pyarrow.parquet as pq

meta = pq.read_metadata(f"{out}/hosts/part-00000.parquet").metadata
assert meta[b"revisit.objective"].decode() == summary["objective"]
assert float(meta[b"revisit.multiplier"].decode()) == summary["multiplier"]

hosts = pq.read_table(f"{out}/hosts")
assert hosts.num_rows == summary["hosts"]
for name, typ in {"host": pa.string(), "crawler": pa.int32(), "cap": pa.float64(), "demand": pa.float64(),
                  "budget": pa.float64(), "capped": pa.bool_(), "multiplier": pa.float64()}.items():
    assert hosts.schema.field(name).type == typ, (name, hosts.schema.field(name).type)

rejected = pq.read_table(f"{out}/rejected")
assert rejected.num_rows == summary["rows_rejected"]

# DuckDB: a glob over the partitions with hive partitioning
con = duckdb.connect()
n, s, crawlers = con.execute(
    f"select count(*), sum(crawl_rate), count(distinct crawler) from read_parquet('{out}/rates/*/*.parquet', hive_partitioning=true)"
).fetchone()
assert n == summary["rows_scheduled"], n
assert abs(s - summary["bandwidth_used"]) <= 1e-9 * summary["bandwidth_used"]
assert crawlers == summary["crawlers"], crawlers
over = con.execute(
    f"""select count(*) from read_parquet('{out}/hosts/*.parquet') h
        join (select host, sum(crawl_rate) r from read_parquet('{out}/rates/*/*.parquet') group by host) x using (host)
        where x.r > h.cap * (1 + 1e-9) * {86400.0 / summary['horizon_s']}"""
).fetchone()[0]
assert over == 0, f"{over} hosts above their cap"
types = {r[0]: r[1] for r in con.execute(f"describe select * from read_parquet('{out}/rates/*/*.parquet', hive_partitioning=true)").fetchall()}
assert types["crawl_rate"] == "DOUBLE" and types["url"] == "VARCHAR" and types["complete_obs"] == "BOOLEAN", types

# the per-URL schedule: intervals in seconds, due times as UTC timestamps (Spark and DuckDB read
# them as TIMESTAMP WITH TIME ZONE); a first night has no last fetch
utc_us = pa.timestamp("us", tz="UTC")
for name, typ in {"fetch_interval_s": pa.float64(), "last_fetch_at": utc_us, "next_fetch_at": utc_us}.items():
    assert rates.schema.field(name).type == typ, (name, rates.schema.field(name).type)
assert rates.column("next_fetch_at").null_count == 0
assert types["next_fetch_at"] == "TIMESTAMP WITH TIME ZONE", types
start = summary["schedule"]["start"]
bad_interval = con.execute(
    f"select count(*) from read_parquet('{out}/rates/*/*.parquet') where abs(fetch_interval_s * crawl_rate - 86400) > 1e-9 * 86400"
).fetchone()[0]
assert bad_interval == 0, f"{bad_interval} intervals are not 86400 / crawl_rate"
# tonight's visits: every fetch inside the night, one URL per row, its time as a timestamp
night = con.execute(
    f"""select count(*), epoch_us(min("at")), epoch_us(max("at")), count(distinct crawler)
        from read_parquet('{out}/visits/*/*.parquet', hive_partitioning=true)
        where "at" >= timestamptz '{start}' and "at" < timestamptz '{start}' + to_seconds({summary['horizon_s']})"""
).fetchone()
assert night[0] == summary["timetable"]["fetches_scheduled"], (night, summary["timetable"])
# and the URLs due tonight are the ones with a due time inside the night
due = con.execute(
    f"""select count(*) from read_parquet('{out}/rates/*/*.parquet')
        where next_fetch_at < timestamptz '{start}' + to_seconds({summary['horizon_s']})"""
).fetchone()[0]
assert due == summary["schedule"]["urls_due_tonight"], (due, summary["schedule"])
print("consumers: pyarrow and duckdb read", n, "rows and", night[0], "fetches")
