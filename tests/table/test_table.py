"""Table API on local disk: one snapshot per operation, exact rows, time travel, tags, tolerant hints, errors."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pyarrow as pa
import pytest
from support.tables import files_under

from tableformat import (
    CorruptMetadataError,
    SnapshotNotFoundError,
    Table,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagError,
    UnsupportedFormatError,
    ValidationError,
)
from tableformat.model import CommitKind

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("dt", pa.string())])


def rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def batch(ids: list[int], dt_value: str | list[str]) -> pa.Table:
    days = dt_value if isinstance(dt_value, list) else [dt_value] * len(ids)
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "dt": days}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"])


def test_each_operation_is_exactly_one_snapshot(table: Table) -> None:
    table.append(batch([1, 2], ["a", "b"]))
    table.append(batch([3], "a"))
    table.overwrite(batch([10], "a"), partition={"dt": "a"})
    table.drop_partitions([{"dt": "b"}])
    snaps = table.snapshots()
    assert [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count) for s in snaps] == [
        (1, CommitKind.APPEND, 2, 2),
        (2, CommitKind.APPEND, 3, 1),
        (3, CommitKind.OVERWRITE, 2, -1),
        (4, CommitKind.OVERWRITE, 1, -1),
    ]
    assert rows(table.to_arrow()) == [(10, "n10", "a")]
    assert rows(table.to_arrow(snapshot_id=2)) == [(1, "n1", "a"), (2, "n2", "b"), (3, "n3", "a")]
    assert rows(table.to_arrow(snapshot_id=3)) == [(2, "n2", "b"), (10, "n10", "a")]


def test_drop_is_mark_delete_only(table: Table, tmp_path: Path) -> None:
    table.append(batch([1, 2], ["a", "b"]))
    data_before = {f for f in files_under(tmp_path / "t") if f.endswith(".parquet")}
    table.drop_partitions([{"dt": "b"}])
    assert {f for f in files_under(tmp_path / "t") if f.endswith(".parquet")} == data_before
    assert table.drop_partitions([{"dt": "missing"}]) is None
    assert len(table.snapshots()) == 2


def test_overwrite_whole_table_and_dynamic(table: Table) -> None:
    table.append(batch([1, 2, 3], ["a", "b", "c"]))
    table.overwrite(batch([4], "b"), dynamic=True)
    assert rows(table.to_arrow()) == [(1, "n1", "a"), (3, "n3", "c"), (4, "n4", "b")]
    table.overwrite(batch([5], "z"))
    assert rows(table.to_arrow()) == [(5, "n5", "z")]
    assert [s.commit_kind for s in table.snapshots()] == [CommitKind.APPEND, CommitKind.OVERWRITE, CommitKind.OVERWRITE]


def test_static_overwrite_never_drops_the_spec(table: Table) -> None:
    table.append(batch([1, 2], ["a", "b"]))
    with pytest.raises(ValidationError, match="outside the overwritten partition"):
        table.overwrite(batch([9], "c"), partition={"dt": "a"})
    assert len(table.snapshots()) == 1
    parquet = [f for f in files_under(Path(table.location)) if f.endswith(".parquet")]
    assert len(parquet) == 2  # the rejected commit's data file was removed
    table.overwrite(batch([], "a")[:0], partition={"dt": "a"})  # empty data: the partition is emptied
    assert rows(table.to_arrow()) == [(2, "n2", "b")]


def test_time_travel_by_tag_and_timestamp(table: Table) -> None:
    first = table.append(batch([1], "a"))
    assert first is not None
    table.create_tag("v1")
    table.append(batch([2], "a"))
    assert rows(table.to_arrow(tag="v1")) == [(1, "n1", "a")]
    assert rows(table.to_arrow(as_of=first.time_millis)) == [(1, "n1", "a")]
    assert rows(table.to_arrow(as_of=dt.datetime.now() + dt.timedelta(days=1))) == [(1, "n1", "a"), (2, "n2", "a")]
    with pytest.raises(SnapshotNotFoundError):
        table.to_arrow(as_of=first.time_millis - 1)
    with pytest.raises(SnapshotNotFoundError):
        table.to_arrow(snapshot_id=99)
    with pytest.raises(TagError, match="already exists"):
        table.create_tag("v1")
    with pytest.raises(ValidationError):
        table.create_tag("../escape")
    assert [t.name for t in table.tags()] == ["v1"]
    table.delete_tag("v1")
    assert table.tags() == []


def test_partition_filter(table: Table) -> None:
    table.append(batch([1, 2, 3], ["a", "b", "c"]))
    assert rows(table.to_arrow(partition_filter={"dt": "b"})) == [(2, "n2", "b")]
    assert rows(table.to_arrow(partition_filter=[{"dt": "a"}, {"dt": "c"}])) == [(1, "n1", "a"), (3, "n3", "c")]


def test_hints_are_only_hints(table: Table, tmp_path: Path) -> None:
    for i in range(3):
        table.append(batch([i], "a"))
    latest = tmp_path / "t" / "snapshot" / "LATEST"
    latest.write_text("1")  # stale
    assert table.latest_snapshot().id == 3  # type: ignore[union-attr]
    latest.write_text("garbage")
    assert table.latest_snapshot().id == 3  # type: ignore[union-attr]
    latest.unlink()
    assert table.latest_snapshot().id == 3  # type: ignore[union-attr]
    (tmp_path / "t" / "snapshot" / "LATEST").write_text("77")  # past the end
    table.append(batch([9], "a"))
    assert table.latest_snapshot().id == 4  # type: ignore[union-attr]
    assert (tmp_path / "t" / "snapshot" / "LATEST").read_text() == "4"


def test_manifests_are_merged_so_the_base_list_stays_bounded(table: Table) -> None:
    for i in range(70):
        table.append(batch([i], "a"))
    latest = table.latest_snapshot()
    assert latest is not None
    base = table.context.store.read_manifest_list(latest.base_manifest_list)
    assert len(base) < 31
    assert table.to_arrow().num_rows == 70


def test_schema_errors_and_nulls(table: Table, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="NOT NULL"):
        table.append(pa.table({"id": pa.array([None], pa.int64()), "name": ["x"], "dt": ["a"]}))
    with pytest.raises(ValidationError, match="does not have"):
        table.append(pa.table({"id": [1], "bogus": [1], "dt": ["a"]}))
    with pytest.raises(ValidationError, match="cannot store"):
        table.append(pa.table({"id": ["x"], "name": ["x"], "dt": ["a"]}))
    assert table.snapshots() == []
    assert not any(f.endswith(".parquet") for f in files_under(tmp_path / "t"))


def test_create_and_open_errors(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError, match="no table at"):
        Table.open(str(tmp_path / "missing"))
    Table.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        Table.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(ValidationError, match="partition keys"):
        Table.create(str(tmp_path / "u"), SCHEMA, partition_keys=["nope"])
    with pytest.raises(ValidationError, match=r"snapshot\.num-retained\.min"):
        Table.create(str(tmp_path / "v"), SCHEMA, options={"snapshot.num-retained.min": "0"})
    assert not (tmp_path / "v").exists()


def test_corrupt_snapshot_is_a_typed_error_naming_the_file(table: Table, tmp_path: Path) -> None:
    table.append(batch([1], "a"))
    (tmp_path / "t" / "snapshot" / "snapshot-1").write_text('{"version": 3, "id": 1,')
    with pytest.raises(CorruptMetadataError, match="snapshot-1"):
        table.to_arrow()


def test_fixed_bucket_tables_are_read_only(tmp_path: Path) -> None:
    t = Table.create(str(tmp_path / "t"), SCHEMA)
    schema_file = tmp_path / "t" / "schema" / "schema-0"
    schema_file.write_text(schema_file.read_text().replace('"file.format": "parquet"', '"bucket": "2"'))
    with pytest.raises(UnsupportedFormatError, match="bucket=2"):
        Table.open(t.location).append(batch([1], "a"))


def test_schema_evolution_added_column_reads_nulls(table: Table, tmp_path: Path) -> None:
    table.append(batch([1], "a"))
    schema_dir = tmp_path / "t" / "schema"
    text = (schema_dir / "schema-0").read_text()
    evolved = text.replace('"id": 0,\n  "fields"', '"id": 1,\n  "fields"').replace(
        '"highestFieldId": 2', '"highestFieldId": 3'
    )
    evolved = evolved.replace(
        '"type": "STRING"\n    }\n  ],',
        '"type": "STRING"\n    },\n    {\n      "id": 3,\n      "name": "score",\n      "type": "DOUBLE"\n    }\n  ],',
    )
    (schema_dir / "schema-1").write_text(evolved)
    reopened = Table.open(table.location)
    assert reopened.schema.id == 1
    reopened.append(pa.table({"id": [2], "name": ["x"], "dt": ["a"], "score": [0.5]}))
    assert sorted(reopened.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "name": "n1", "dt": "a", "score": None},
        {"id": 2, "name": "x", "dt": "a", "score": 0.5},
    ]
    assert os.path.exists(schema_dir / "schema-1")
