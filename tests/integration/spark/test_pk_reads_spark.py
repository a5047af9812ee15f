"""Primary-key tables on Spark: ``format("tablefmt")`` and ``read_native`` return the merged rows (one per key),
splits are whole buckets, projections and time travel work, and refused engines are refused on the driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.ci import optional

optional("pyspark")

from support.pk_tables import DELETE, INSERT, PkTable
from support.tables import rows_of

from tableformat.spark import read_native
from tableformat.spark.reader import TablefmtBucketSplit

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("v", pa.string())])  # fmt: skip


def build(tmp_path: Path, **options: str) -> PkTable:
    """Two partitions x two buckets; key 1 updated, key 2 deleted, key 3 once, each bucket's files overlapping."""
    t = PkTable(tmp_path / "t", SCHEMA, ["id", "dt"], ["dt"], options=options, buckets=2)

    def rows(dt: str, values: dict[int, str]) -> list[dict[str, Any]]:
        return [{"id": i, "dt": dt, "v": v} for i, v in values.items()]

    for dt in ("d1", "d2"):
        t.commit(
            [
                t.file(rows(dt, {1: "a", 2: "b"}), [0, 1], partition=[dt], bucket=0),
                t.file(rows(dt, {3: "c"}), [0], partition=[dt], bucket=1),
            ]
        )
        t.commit([t.file(rows(dt, {1: "A", 2: "b"}), [2, 3], [INSERT, DELETE], partition=[dt], bucket=0)])
    return t


def spark_rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


def test_data_source_reads_merged_rows_bucket_by_bucket(spark: Any, tmp_path: Path) -> None:
    t = build(tmp_path)
    expected = [(1, "d1", "A"), (1, "d2", "A"), (3, "d1", "c"), (3, "d2", "c")]
    assert rows_of(t.table.to_arrow()) == expected
    frame = spark.read.format("tablefmt").option("source.split.target-size", "1").load(str(t.root))
    assert spark_rows(frame) == expected
    assert spark_rows(frame.select("v")) == [("A",), ("A",), ("c",), ("c",)]
    assert spark_rows(read_native(spark, str(t.root))) == expected
    first = spark.read.format("tablefmt").option("scan.snapshot-id", "1").load(str(t.root))
    assert spark_rows(first) == [(1, "d1", "a"), (2, "d1", "b"), (3, "d1", "c")]


def test_splits_are_whole_buckets(tmp_path: Path) -> None:
    from pyspark.sql.types import StructType

    from tableformat.spark.config import ReadConfig
    from tableformat.spark.reader import TablefmtReader
    from tableformat.spark.schema import spark_schema_of

    t = build(tmp_path)
    config = ReadConfig.parse({"path": str(t.root), "source.split.target-size": "1"})
    schema: StructType = spark_schema_of(list(t.table.schema.fields))
    splits = TablefmtReader(config, None, False, schema).partitions()
    assert all(isinstance(s, TablefmtBucketSplit) for s in splits)
    assert sorted(len(s.buckets) for s in splits) == [1, 1, 1, 1]  # type: ignore[attr-defined]
    buckets = sorted((b.bucket, len(b.entries)) for s in splits for b in s.buckets)  # type: ignore[attr-defined]
    assert buckets == [(0, 2), (0, 2), (1, 1), (1, 1)]


def test_refused_engine_is_refused_on_the_driver(spark: Any, tmp_path: Path) -> None:
    t = build(tmp_path, **{"merge-engine": "aggregation"})
    with pytest.raises(Exception, match="merge-engine 'aggregation'"):
        spark.read.format("tablefmt").load(str(t.root)).collect()


def test_deletion_vectors_are_applied_on_executors(spark: Any, tmp_path: Path) -> None:
    from support.paimon_index import PaimonIndex

    t = PkTable(tmp_path / "t", SCHEMA, ["id", "dt"], ["dt"], options={"deletion-vectors.enabled": "true"})
    base = t.file([{"id": i, "dt": "d1", "v": f"v{i}"} for i in range(4)], [0, 1, 2, 3], partition=["d1"], level=1)
    t.commit([base])
    PaimonIndex(t.table).delete_rows({base.meta.file_name: [1, 3]})
    expected = [(0, "d1", "v0"), (2, "d1", "v2")]
    assert rows_of(t.table.to_arrow()) == expected
    assert spark_rows(spark.read.format("tablefmt").load(str(t.root))) == expected
