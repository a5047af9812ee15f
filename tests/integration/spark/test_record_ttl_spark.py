"""Record-level TTL on Spark's read paths: the ``tablefmt`` data source and ``read_native`` never return an expired
row (``scan.include-expired`` / ``include_expired`` opt out), and the Spark condition read_native adds keeps
exactly the rows the Arrow rule keeps, at the edges of the cutoff, for every type Spark reads natively."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.ci import optional

optional("pyspark")


from tableformat import Table
from tableformat.scan.record_ttl import RecordTTL
from tableformat.spark import read_native
from tableformat.spark.fast_read import keep_condition

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

OLD = dt.datetime(2020, 1, 1)
NEW = dt.datetime(2037, 1, 1)  # within INT epoch seconds
TYPES = {
    "int": (pa.int32(), lambda t: int((t - dt.datetime(1970, 1, 1)).total_seconds())),
    "bigint": (pa.int64(), lambda t: int((t - dt.datetime(1970, 1, 1)).total_seconds() * 1000)),
    "timestamp": (pa.timestamp("us"), lambda t: t),
    "timestamp_ltz": (pa.timestamp("us", tz="UTC"), lambda t: t.replace(tzinfo=dt.timezone.utc)),
    "date": (pa.date32(), lambda t: t.date()),
}


@pytest.mark.parametrize("name", sorted(TYPES))
def test_data_source_and_read_native_hide_expired_rows(spark: Any, tmp_path: Path, name: str) -> None:
    arrow_type, value = TYPES[name]
    schema = pa.schema([("id", pa.int64()), ("ts", arrow_type)])
    options = {"record-level.expire-time": "30 d", "record-level.time-field": "ts", "write-only": "true"}
    table = Table.create(str(tmp_path / "t"), schema, options=options)
    table.append(pa.table({"id": [0, 1], "ts": [value(OLD), value(OLD)]}, schema=schema))  # fully expired
    table.append(pa.table({"id": [2, 3, 4], "ts": [value(OLD), None, value(NEW)]}, schema=schema))  # partly
    table.append(pa.table({"id": [5], "ts": [value(NEW)]}, schema=schema))
    kept = [3, 4, 5]
    source = spark.read.format("tablefmt").load(table.location)
    assert sorted(r.id for r in source.collect()) == kept
    audit = spark.read.format("tablefmt").option("scan.include-expired", "true").load(table.location)
    assert sorted(r.id for r in audit.collect()) == [0, 1, 2, 3, 4, 5]
    assert sorted(r.id for r in read_native(spark, table.location).collect()) == kept
    assert sorted(r.id for r in read_native(spark, table.location, include_expired=True).collect()) == list(range(6))


@pytest.mark.parametrize("name", sorted(TYPES))
def test_the_spark_condition_keeps_exactly_what_the_arrow_rule_keeps(spark: Any, name: str) -> None:
    arrow_type, value = TYPES[name]
    root = {"int": "INT", "bigint": "BIGINT", "timestamp": "TIMESTAMP", "timestamp_ltz": "TIMESTAMP_LTZ",
            "date": "DATE"}[name]
    now = dt.datetime(2026, 3, 10, 12, 34, 56, 789000)
    ttl = RecordTTL(1, "ts", root, 30 * 86_400_000, int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000))
    cutoff = now - dt.timedelta(days=30)
    moments = [cutoff + dt.timedelta(microseconds=d) for d in (-86_400_000_000, -1000, -1, 0, 1, 999, 1000, 10**9)]
    values = [value(m) for m in moments] + [None]
    data = pa.table({"id": list(range(len(values))), "ts": pa.array(values, arrow_type)})
    expected = [i for i, keep in enumerate(ttl.keep_mask(data.column("ts")).to_pylist()) if keep]
    ddl = {"int": "int", "bigint": "bigint", "timestamp": "timestamp_ntz", "timestamp_ltz": "timestamp",
           "date": "date"}[name]
    frame = spark.createDataFrame(list(enumerate(values)), f"id long, ts {ddl}")
    got = sorted(r.id for r in frame.where(keep_condition(ttl)).collect())
    assert got == expected and 0 not in got and len(values) - 1 in got
