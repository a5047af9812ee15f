"""Reading data files on a real S3 server (SeaweedFS), requests counted at the botocore call: no HeadObject for a data
file (its manifest entry records its size), one GET for a file up to WHOLE_GET_BYTES, the tail then the column chunks
for a larger one; exact rows through schema evolution, dictionary columns, projections, filters and batches; a
damaged file fails naming it."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.s3_requests import RequestLog
from support.s3_tables import appended

from tableformat import Table
from tableformat.commit.schema_change import evolve_schema
from tableformat.errors import CorruptMetadataError, StorageError
from tableformat.model.schema import DataField
from tableformat.model.types import DataType
from tableformat.scan.reader import WHOLE_GET_BYTES

pytestmark = pytest.mark.s3

WIDE = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("blob", pa.binary()), ("part", pa.int32())])
BIG_ROWS = 80


def data_keys(log: RequestLog, operation: str) -> list[str]:
    return sorted(call.key for call in log.of(operation) if call.key.endswith(".parquet"))


def data_files(table: Table) -> list[Any]:
    return list(table.plan_scan_refs(table.latest_snapshot(), None))


def test_reading_n_small_files_sends_one_get_each_and_no_head(s3_root: tuple[str, dict[str, Any]]) -> None:
    appended(s3_root, 6)  # 6 appends x 2 partitions: 12 data files
    url, options = s3_root
    table = Table.open(url, storage_options=options)
    files = data_files(table)
    assert len(files) == 12 and all(f.file_size <= WHOLE_GET_BYTES for f in files)
    log = RequestLog().attach(table.context.io)
    result = table.to_arrow()
    assert sorted(result.column("id").to_pylist()) == list(range(48))
    reads = data_keys(log, "GetObject")
    assert len(reads) == 12 and log.read_twice() == []  # one GET per data file, each once
    assert [call for call in log.of("HeadObject") if call.key.endswith(".parquet")] == []
    log.clear()
    streamed = pa.Table.from_batches(list(table.to_batches()), schema=result.schema)
    assert streamed.equals(result)  # the same rows in the same (file) order
    assert len(data_keys(log, "GetObject")) == 12 and data_keys(log, "HeadObject") == []


def wide_rows(start: int, count: int, blob_bytes: int, part: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + count)),
            "kind": [("view", "click", "buy")[i % 3] for i in range(count)],  # dictionary-coded in the file
            "blob": [os.urandom(blob_bytes) for _ in range(count)],  # incompressible: the file is as large
            "part": [part] * count,
        },
        schema=WIDE,
    )


def evolved_table(s3_root: tuple[str, dict[str, Any]]) -> tuple[Table, pa.Table, pa.Table, pa.Table]:
    """Files under schema 0 (a small one and one above WHOLE_GET_BYTES), then "kind" renamed to "action" and a
    column "score" added, and a file under the new schema."""
    url, options = s3_root
    table = Table.create(url, WIDE, ["part"], storage_options=options)
    small, big = wide_rows(0, 300, 16, 0), wide_rows(1000, BIG_ROWS, 64 << 10, 1)
    table.append(small)
    table.append(big)

    def evolve(latest: Any) -> Any:
        fields = tuple(dataclasses.replace(f, name="action") if f.name == "kind" else f for f in latest.fields)
        score = DataField(id=latest.highest_field_id + 1, name="score", type=DataType("DOUBLE"))
        return dataclasses.replace(latest, fields=(*fields, score), highest_field_id=score.id)

    evolve_schema(table.context.store, evolve)
    table = Table.open(url, storage_options=options)
    newer = pa.table(
        {"id": [5000, 5001], "action": ["buy", "view"], "blob": [b"a", b"b"], "part": [0, 0], "score": [1.5, None]},
        schema=pa.schema(
            [
                ("id", pa.int64()),
                ("action", pa.string()),
                ("blob", pa.binary()),
                ("part", pa.int32()),
                ("score", pa.float64()),
            ]
        ),
    )
    table.append(newer)
    return Table.open(url, storage_options=options), small, big, newer


def expected(small: pa.Table, big: pa.Table, newer: pa.Table, schema: pa.Schema) -> pa.Table:
    older = [t.rename_columns(["id", "action", "blob", "part"]) for t in (small, big)]
    older = [t.append_column("score", pa.nulls(t.num_rows, pa.float64())) for t in older]
    return pa.concat_tables([t.cast(schema) for t in (*older, newer)]).sort_by("id")


def test_exact_rows_of_small_large_and_evolved_files(s3_root: tuple[str, dict[str, Any]]) -> None:
    table, small, big, newer = evolved_table(s3_root)
    sizes = sorted(f.file_size for f in data_files(table))
    assert len(sizes) == 3 and sizes[1] <= WHOLE_GET_BYTES < sizes[2]  # one file above the threshold
    log = RequestLog().attach(table.context.io)
    result = table.to_arrow()
    assert result.column_names == ["id", "action", "blob", "part", "score"]
    assert result.schema.field("action").type == pa.string()  # read as a dictionary, expanded to the table type
    assert result.sort_by("id").equals(expected(small, big, newer, result.schema))
    big_key = next(k for k in data_keys(log, "GetObject") if "part=1/" in k)
    assert data_keys(log, "HeadObject") == []
    assert len(data_keys(log, "GetObject")) == 2 + 2  # two small files whole; the large one's tail, then its chunks
    assert data_keys(log, "GetObject").count(big_key) == 2
    projected = table.to_arrow(columns=["score", "action"])
    assert projected.column_names == ["score", "action"]
    assert projected.sort_by("score").equals(result.select(["score", "action"]).sort_by("score"))
    log.clear()
    filtered = table.to_arrow(columns=["id"], filter=pc.field("action") == "buy")
    assert data_keys(log, "HeadObject") == [] and len(data_keys(log, "GetObject")) == 4  # pruning opens nothing
    want = [i for i, a in zip(result.column("id").to_pylist(), result.column("action").to_pylist()) if a == "buy"]
    assert sorted(filtered.column("id").to_pylist()) == sorted(want)
    batches = list(table.to_batches(columns=["id", "score"], filter=pc.field("id") >= 1000))
    streamed = pa.Table.from_batches(batches).sort_by("id")
    assert streamed.equals(result.filter(pc.field("id") >= 1000).select(["id", "score"]).sort_by("id"))


def test_a_projection_of_a_large_file_fetches_only_its_columns(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(url, WIDE, ["part"], storage_options=options)
    big = wide_rows(0, BIG_ROWS, 64 << 10, 1)
    table.append(big)
    table = Table.open(url, storage_options=options)
    (size,) = [f.file_size for f in data_files(table)]
    assert size > WHOLE_GET_BYTES
    io = table.context.io
    fetched: list[int] = []
    original = type(io).read_range

    def counting(self: Any, path: str, start: int, end: int) -> bytes:
        data: bytes = original(self, path, start, end)
        fetched.append(len(data))
        return data

    type(io).read_range = counting  # type: ignore[method-assign]
    try:
        result = table.to_arrow(columns=["id", "kind"])
    finally:
        type(io).read_range = original  # type: ignore[method-assign]
    assert result.equals(big.select(["id", "kind"]))
    assert len(fetched) == 2 and sum(fetched) < 128 << 10  # the tail and the small chunks: no blob bytes


@pytest.mark.parametrize(("large", "damage"), [(False, "truncated"), (True, "truncated"), (False, "overwritten")])
def test_a_damaged_data_file_fails_naming_it(s3_root: tuple[str, dict[str, Any]], large: bool, damage: str) -> None:
    url, options = s3_root
    table = Table.create(url, WIDE, ["part"], storage_options=options)
    table.append(wide_rows(0, BIG_ROWS if large else 20, 64 << 10 if large else 8, 0))
    table = Table.open(url, storage_options=options)
    (ref,) = data_files(table)
    assert (ref.file_size > WHOLE_GET_BYTES) == large
    io = table.context.io
    path = f"{table.context.layout.root}/part=0/bucket-0/{ref.file_name}"
    stored = io.read_bytes(path)
    damaged = stored[: ref.file_size // 2] if damage == "truncated" else stored[:-8] + b"\0" * 8  # same size
    io.write_bytes(path, damaged)
    for read in (table.to_arrow, lambda: pa.Table.from_batches(list(table.to_batches()))):
        with pytest.raises(CorruptMetadataError) as raised:
            read()
        assert io.url(path) in str(raised.value) and "Parquet" in str(raised.value)
        assert ("manifest records" in str(raised.value)) == (damage == "truncated")


def first_data_file(s3_root: tuple[str, dict[str, Any]]) -> tuple[Table, Any, str]:
    """A table of one append (2 data files): the table, its first data file's entry and that file's path."""
    table = appended(s3_root, 1)
    ref = data_files(table)[0]
    candidates = (f"{table.context.layout.root}/part={n}/bucket-0/{ref.file_name}" for n in (0, 1))
    return table, ref, next(p for p in candidates if table.context.io.file_exists(p))


def test_a_missing_data_file_is_reported_missing(s3_root: tuple[str, dict[str, Any]]) -> None:
    table, _, path = first_data_file(s3_root)
    io = table.context.io
    assert io.delete_files([path]) == [path]
    with pytest.raises(StorageError, match="missing") as raised:
        table.to_arrow()
    assert io.url(path) in str(raised.value)


def test_an_engine_scanning_the_dataset_sends_no_head_for_a_data_file(s3_root: tuple[str, dict[str, Any]]) -> None:
    appended(s3_root, 6)  # 12 data files
    url, options = s3_root
    table = Table.open(url, storage_options=options)
    log = RequestLog().attach(table.context.io)
    dataset = table.to_pyarrow_dataset()
    result = dataset.to_table()
    assert sorted(result.column("id").to_pylist()) == list(range(48))
    assert data_keys(log, "HeadObject") == []  # the manifest entries' sizes stand in for the HEADs
    gets = data_keys(log, "GetObject")
    assert sorted({key.rsplit("/", 1)[1] for key in gets}) == sorted(f.file_name for f in data_files(table))
    assert len(gets) == 12  # one GET per file (s3fs reads a small file's whole block at its first read)
    log.clear()  # a second scan of the same dataset (as an engine runs each query): each file once more
    assert dataset.to_table().sort_by("id").equals(result.sort_by("id"))
    again = data_keys(log, "GetObject")
    assert len(again) == len(set(again)) == 12 and data_keys(log, "HeadObject") == []
    filtered = dataset.to_table(filter=pc.field("id") < 5)  # statistics now known: files skipped unopened
    assert sorted(filtered.column("id").to_pylist()) == [0, 1, 2, 3, 4]


def test_a_missing_data_file_fails_the_dataset_scan_naming_it(s3_root: tuple[str, dict[str, Any]]) -> None:
    table, ref, path = first_data_file(s3_root)
    dataset = table.to_pyarrow_dataset()
    assert table.context.io.delete_files([path]) == [path]
    with pytest.raises(FileNotFoundError, match=ref.file_name):
        dataset.to_table()


def test_duckdb_and_polars_scanning_the_dataset_again_and_again_read_exact_rows(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """Engines scan the dataset from their own threads, with filters that skip files, query after query: the files
    read ahead (tableformat/io/arrow_fs.py) never change a row."""
    import duckdb
    import polars as pl

    appended(s3_root, 15, drop_after=5)  # 30 data files, those of partition 0 before the drop no longer live
    url, options = s3_root
    table = Table.open(url, storage_options=options)
    expected = sorted(table.to_arrow().column("id").to_pylist())
    assert len(expected) == 100 and len(data_files(table)) == 25
    connection = table.to_duckdb(duckdb.connect(), "t")
    for _ in range(3):
        assert sorted(row[0] for row in connection.sql("select id from t").fetchall()) == expected
        low = sorted(row[0] for row in connection.sql("select id from t where id < 60").fetchall())
        assert low == [i for i in expected if i < 60]
    lazy = table.to_polars(lazy=True)
    for _ in range(2):
        assert sorted(lazy.filter(pl.col("id") >= 90).collect()["id"].to_list()) == [i for i in expected if i >= 90]
        assert sorted(lazy.collect()["id"].to_list()) == expected
