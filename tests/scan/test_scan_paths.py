"""The two ways a scan is planned and read give the same rows.

* Planning: without a row filter or record TTL a scan plans with ScanRefs (no statistics decoded); with one, with
  full entries. Both list the same files.
* Reading (``to_table`` without a row filter): partition columns are read as the files store them, and when a file
  does not store them (or a partition value is null) the rows are read again with the partition values filled in
  from the fragments' partition expressions, as the lazy dataset always does.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tableformat import Table
from tableformat.codec.avro_projection import ScanRef
from tableformat.model.manifest import ManifestEntry
from tableformat.scan.dataset import TableScan

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("region", pa.string()), ("v", pa.float64())])
D1, D2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)


def rows(ids: range, day: dt.date | None, region: str | None) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "day": pa.array([day] * n, pa.date32()),
            "region": pa.array([region] * n, pa.string()),
            "v": pa.array([i / 4 for i in ids], pa.float64()),
        }
    )


def sorted_rows(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type,return-value]


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = Table.create(str(tmp_path / "t"), SCHEMA, ["day", "region"], {"write-only": "true"})
    t.append(pa.concat_tables([rows(range(5), D1, "eu"), rows(range(5, 9), D2, "us")]))
    t.append(rows(range(9, 12), D1, "us"))
    t.overwrite(rows(range(20, 23), D2, "us"), {"day": "2026-11-02", "region": "us"})
    return t


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each dataset read's ``guarantees`` flag (False: partition columns as stored), in order."""
    seen: list[bool] = []
    original = TableScan._unfiltered

    def spy(self: TableScan, guarantees: bool = True) -> object:
        seen.append(guarantees)
        return original(self, guarantees)

    monkeypatch.setattr(TableScan, "_unfiltered", spy)
    return seen


def append_without_partition_columns(table: Table, data: pa.Table) -> None:
    """Commit ``data`` in files that do not store the partition columns (as some writers may write them)."""
    files = table.write_files(data)
    rewritten = []
    for new in files:
        stored = pq.read_table(new.path).drop_columns(list(table.partition_keys))
        pq.write_table(stored, new.path)
        size = Path(new.path).stat().st_size
        rewritten.append(dataclasses.replace(new, meta=dataclasses.replace(new.meta, file_size=size)))
    table.commit_files(rewritten)


def test_light_and_full_plans_list_the_same_files(table: Table) -> None:
    light = table.scan()
    full = table.scan(filter=pc.field("id") >= 0)
    assert light.files() and all(isinstance(e, ScanRef) for e in light.files())
    assert all(isinstance(e, ManifestEntry) for e in full.files())
    assert [light.path_of(e) for e in light.files()] == [full.path_of(e) for e in full.files()]
    assert [(e.partition, e.bucket, e.file.file_size, e.file.schema_id) for e in light.files()] == [
        (e.partition, e.bucket, e.file.file_size, e.file.schema_id) for e in full.files()
    ]
    assert sorted_rows(light.to_table()) == sorted_rows(full.to_table())
    spec = {"day": "2026-11-01", "region": "us"}
    assert [light.path_of(e) for e in table.scan(partition_filter=spec).files()] == [
        full.path_of(e) for e in table.scan(partition_filter=spec, filter=pc.field("id") >= 0).files()
    ]
    assert table.to_arrow(partition_filter=spec).column("id").to_pylist() == [9, 10, 11]


def test_rows_read_as_stored_equal_the_dataset_read(table: Table, reads: list[bool]) -> None:
    expected = sorted_rows(table.to_pyarrow_dataset().to_table())
    assert [r["id"] for r in expected] == [0, 1, 2, 3, 4, 9, 10, 11, 20, 21, 22]
    del reads[:]
    assert sorted_rows(table.to_arrow()) == expected
    assert reads == [False]  # one read, as stored
    assert table.to_arrow().schema == SCHEMA
    projected = table.to_arrow(columns=["v", "day"])
    assert projected.column_names == ["v", "day"]
    assert sorted(projected.to_pylist(), key=lambda r: r["v"]) == [{"v": r["v"], "day": r["day"]} for r in expected]


def test_files_without_partition_columns_are_filled_from_the_partition(table: Table, reads: list[bool]) -> None:
    append_without_partition_columns(
        table, pa.concat_tables([rows(range(30, 33), D2, "eu"), rows(range(33, 35), D1, "eu")])
    )
    paths = [table.scan().path_of(e) for e in table.scan().files()]
    assert sum("day" not in pq.read_schema(p).names for p in paths) == 2
    del reads[:]
    got = sorted_rows(table.to_arrow())
    assert reads == [False, True]  # nulls in the partition columns: read again with the partition values
    assert [(r["id"], r["day"], r["region"]) for r in got if r["id"] >= 30] == [
        (30, D2, "eu"),
        (31, D2, "eu"),
        (32, D2, "eu"),
        (33, D1, "eu"),
        (34, D1, "eu"),
    ]
    assert got == sorted_rows(table.to_pyarrow_dataset().to_table())
    assert got == sorted_rows(pa.Table.from_batches(list(table.to_batches())))
    regions = table.to_arrow(columns=["id", "region"])
    assert dict(zip(regions.column("id").to_pylist(), regions.column("region").to_pylist()))[31] == "eu"
    del reads[:]
    assert table.to_arrow(columns=["id"]).num_rows == len(got)
    assert reads == [False]  # no partition column read: nothing to fill


def test_null_partition_values_read_as_nulls(table: Table, reads: list[bool]) -> None:
    table.append(rows(range(40, 42), None, "eu"))
    append_without_partition_columns(table, rows(range(42, 44), D1, None))
    del reads[:]
    got = {r["id"]: (r["day"], r["region"]) for r in table.to_arrow().to_pylist()}
    assert reads == [True]  # a null partition value: read with the partition expressions at once
    assert got[40] == got[41] == (None, "eu")
    assert got[42] == got[43] == (D1, None)
    assert sorted_rows(table.to_arrow()) == sorted_rows(table.to_pyarrow_dataset().to_table())
