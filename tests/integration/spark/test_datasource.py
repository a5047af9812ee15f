"""format("tablefmt") writes and reads on real Spark: append, overwrites, time travel, partition filter, types."""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.ci import optional

optional("pyspark")

from spark_support import data_files_on_disk, rows

from tableformat import CommitKind, Table
from tableformat.scan.reader import dictionary_coded_columns
from tableformat.spark import read_native

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

SCHEMA = "id long, name string, dt string"


@dataclass
class History:
    """A table written by five Spark jobs, and what each snapshot must contain."""

    path: str
    tagged_at_ms: int
    between_2_and_3_ms: int
    expected: dict[int, list[tuple[Any, ...]]]


def _frame(spark: Any, data: list[tuple[Any, ...]], schema: str = SCHEMA) -> Any:
    return spark.createDataFrame(data, schema).repartition(2)


def _load(spark: Any, path: str, **options: str) -> Any:
    reader = spark.read.format("tablefmt")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


@pytest.fixture(scope="module")
def history(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> History:
    path = str(tmp_path_factory.mktemp("history") / "events")
    first = [(i, f"n{i}", f"d{(i + 1) // 2}") for i in range(1, 7)]  # d1: 1,2  d2: 3,4  d3: 5,6
    _frame(spark, first).write.format("tablefmt").mode("append").option("partitionBy", "dt").save(path)
    Table.open(path).create_tag("first", 1)
    time.sleep(0.02)
    tagged_at = int(time.time() * 1000)
    time.sleep(0.02)

    second = [(7, "n7", "d1"), (8, "n8", "d3")]
    _frame(spark, second).write.format("tablefmt").mode("append").save(path)
    time.sleep(0.02)
    between = int(time.time() * 1000)
    time.sleep(0.02)

    # static overwrite of d1; the DataFrame has no dt column: the partition spec supplies it
    late = spark.createDataFrame([(10, "n10"), (11, "n11")], "id long, name string")
    late.write.format("tablefmt").mode("overwrite").option("partition", "dt=d1").save(path)

    # dynamic overwrite: replaces d2 only
    redo = [(20, "n20", "d2")]
    _frame(spark, redo).write.format("tablefmt").mode("overwrite").option("dynamic-partition-overwrite", "true").save(
        path
    )

    # whole-table overwrite (the default meaning of mode("overwrite"))
    _frame(spark, [(30, "n30", "d9")]).write.format("tablefmt").mode("overwrite").save(path)

    s1 = sorted(first)
    s2 = sorted(first + second)
    s3 = sorted([r for r in s2 if r[2] != "d1"] + [(10, "n10", "d1"), (11, "n11", "d1")])
    s4 = sorted([r for r in s3 if r[2] != "d2"] + redo)
    s5 = [(30, "n30", "d9")]
    return History(path, tagged_at, between, {1: s1, 2: s2, 3: s3, 4: s4, 5: s5})


def test_each_job_commits_exactly_one_snapshot(history: History) -> None:
    table = Table.open(history.path)
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == [1, 2, 3, 4, 5]
    assert [s.commit_kind for s in snapshots] == [CommitKind.APPEND, CommitKind.APPEND] + [CommitKind.OVERWRITE] * 3
    assert len({s.commit_user for s in snapshots}) == 5
    assert all(s.commit_user.startswith("spark-") for s in snapshots)
    assert table.partition_keys == ("dt",)
    for snapshot_id, expected in history.expected.items():
        got = sorted(tuple(r.values()) for r in table.to_arrow(snapshot_id=snapshot_id).to_pylist())
        assert got == expected, snapshot_id
    referenced = {f.path for s in snapshots for f in table.files(s.id)}
    assert data_files_on_disk(history.path) == referenced


def test_reads_latest_and_time_travel(spark: Any, history: History) -> None:
    assert rows(_load(spark, history.path)) == history.expected[5]
    for snapshot_id in (1, 2, 3, 4):
        assert (
            rows(_load(spark, history.path, **{"scan.snapshot-id": str(snapshot_id)})) == history.expected[snapshot_id]
        )
    assert rows(_load(spark, history.path, **{"scan.tag-name": "first"})) == history.expected[1]
    at_tag = _load(spark, history.path, **{"scan.timestamp-millis": str(history.tagged_at_ms)})
    assert rows(at_tag) == history.expected[1]
    between = _load(spark, history.path, **{"scan.timestamp-millis": str(history.between_2_and_3_ms)})
    assert rows(between) == history.expected[2]


def test_partition_filter(spark: Any, history: History) -> None:
    expected = [r for r in history.expected[4] if r[2] in ("d1", "d3")]
    both = _load(spark, history.path, **{"scan.snapshot-id": "4", "partitions": "dt=d1;dt=d3"})
    assert rows(both) == expected
    one = _load(spark, history.path, **{"scan.snapshot-id": "4", "partitions": "dt=d3"})
    assert rows(one) == [r for r in history.expected[4] if r[2] == "d3"]


def test_read_native_matches_snapshot_files(spark: Any, history: History) -> None:
    table = Table.open(history.path)
    native = read_native(spark, history.path, snapshot_id=4)
    assert {Path(p.removeprefix("file:")).as_posix() for p in native.inputFiles()} == {f.path for f in table.files(4)}
    assert rows(native) == history.expected[4]
    filtered = read_native(spark, history.path, tag="first", partition_filter={"dt": "d2"})
    assert rows(filtered) == [r for r in history.expected[1] if r[2] == "d2"]
    assert native.schema == _load(spark, history.path).schema


def test_options_are_checked_before_anything_is_written(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    frame = spark.createDataFrame([(1, "a", "d1")], SCHEMA)
    with pytest.raises(Exception, match="unknown write option"):
        frame.write.format("tablefmt").mode("overwrite").option("partiton", "dt=d1").save(path)
    with pytest.raises(Exception, match="mode\\('overwrite'\\) only"):
        frame.write.format("tablefmt").mode("append").option("partition", "dt=d1").save(path)
    assert not os.path.exists(path)


def test_types_and_session_time_zone(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "typed")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        frame = spark.sql(
            """
            select cast(1 as tinyint) b, cast(2 as smallint) s, 3 i, cast(4 as bigint) l, cast(1.5 as float) f,
                   2.5d d, cast('12.34' as decimal(10, 2)) dec, 'x' str, X'0102' bin, true flag,
                   date'2024-03-10' day, timestamp'2024-03-10 12:00:00' ts, timestamp_ntz'2024-03-10 12:00:00' ntz
            union all
            select null, null, null, null, null, null, null, null, null, null, null, null, null
            """
        )
        frame.write.format("tablefmt").mode("append").save(path)
        table = Table.open(path)
        assert [str(f.type) for f in table.schema.fields] == [
            "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "STRING", "BYTES",
            "BOOLEAN", "DATE", "TIMESTAMP_LTZ(6)", "TIMESTAMP(6)",
        ]  # fmt: skip
        stored = [r for r in table.to_arrow().to_pylist() if r["i"] is not None]
        assert stored[0]["ts"] == dt.datetime(2024, 3, 10, 16, 0, tzinfo=dt.timezone.utc)  # 12:00 EDT
        assert stored[0]["ntz"] == dt.datetime(2024, 3, 10, 12, 0)
        assert stored[0]["dec"] == Decimal("12.34")
        expected = frame.collect()
        key = lambda r: (r.i is None, r.i)  # noqa: E731
        assert sorted(_load(spark, path).collect(), key=key) == sorted(expected, key=key)
        assert sorted(read_native(spark, path).collect(), key=key) == sorted(expected, key=key)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_dictionary_coded_strings_and_binaries_read_exactly(spark: Any, tmp_path: Path) -> None:
    """Low-cardinality STRING and BYTES columns (with nulls) are stored dictionary-coded and read as dictionaries in
    the tasks: Spark still gets exactly the rows, next to a high-cardinality column stored plainly."""
    count = 20_000
    data = pa.table(
        {
            "id": pa.array(range(count), pa.int64()),
            "kind": [None if i % 5 == 0 else ("view", "click", "buy")[i % 3] for i in range(count)],
            "tag": pa.array([None if i % 11 == 0 else bytes([i % 4]) for i in range(count)], pa.binary()),
            "name": [f"name-{i:08d}" for i in range(count)],
        }
    )
    table = Table.create(str(tmp_path / "dict"), data.schema)
    table.append(data.slice(0, count // 2))
    table.append(data.slice(count // 2))
    files = Table.open(table.location).files()
    assert len(files) == 2
    assert all(dictionary_coded_columns(pq.read_metadata(f.path)) == ["kind", "tag"] for f in files)
    expected = sorted((r["id"], r["kind"], r["tag"], r["name"]) for r in data.to_pylist())
    got = sorted(
        (r.id, r.kind, None if r.tag is None else bytes(r.tag), r.name) for r in _load(spark, table.location).collect()
    )
    assert got == expected


def test_merge_schema_adds_the_dataframes_new_columns_before_its_rows(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "merged")
    _frame(spark, [(1, "a", "d1")]).write.format("tablefmt").mode("append").option("partitionBy", "dt").save(path)
    wider = _frame(spark, [(2, "b", "d1", 7)], "ID long, name string, dt string, extra int")
    with pytest.raises(Exception, match="does not exist in the table"):
        wider.write.format("tablefmt").mode("append").save(path)
    wider.write.format("tablefmt").mode("append").option("mergeSchema", "true").save(path)
    table = Table.open(path)
    assert [(f.id, f.name, str(f.type)) for f in table.schema.fields] == [
        (0, "id", "BIGINT"), (1, "name", "STRING"), (2, "dt", "STRING"), (3, "extra", "INT"),
    ]  # fmt: skip
    assert [s.schema_id for s in table.snapshots()] == [0, 1]
    assert sorted(_load(spark, path).collect()) == [(1, "a", "d1", None), (2, "b", "d1", 7)]
