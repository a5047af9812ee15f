"""Reads of primary-key tables: one row per key, merged on read as Paimon merges (dedupe, first-row, deletes,
ties, sequence.field), filters applied after the merge, safe pruning, projections, time travel, every reader, and
the tables tablefmt refuses. Tables are written file by file in Paimon's key-value format (support/pk_tables.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.ci import optional
from support.pk_tables import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, PkTable
from support.tables import rows_of

from tableformat.errors import UnsupportedFormatError, UnsupportedTableError
from tableformat.scan.primary_key import PrimaryKeyScan
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()), pa.field("n", pa.int64())])
PART_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)


def row(id: int, v: str | None, n: int | None = None) -> dict[str, Any]:
    return {"id": id, "v": v, "n": n}


def pk(tmp_path: Path, **options: str) -> PkTable:
    return PkTable(tmp_path / "t", SCHEMA, ["id"], options=options)


# --- deduplicate ---------------------------------------------------------------------------------------------------
def test_newest_version_of_each_key_across_level0_files(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a"), row(2, "b"), row(3, "c")], [0, 1, 2])])
    t.commit([t.file([row(2, "B"), row(3, "C")], [3, 4])])
    t.commit([t.file([row(3, "CC"), row(4, "d")], [5, 6])])
    assert rows_of(t.table.to_arrow()) == [(1, "a", None), (2, "B", None), (3, "CC", None), (4, "d", None)]


def test_newest_version_across_levels(tmp_path: Path) -> None:
    """A compacted file at level 5 and newer level-0 and level-1 files: the newest version wins wherever it is."""
    t = pk(tmp_path)
    t.commit(
        [
            t.file([row(1, "old1"), row(2, "old2"), row(3, "old3")], [0, 1, 2], level=5),
            t.file([row(2, "mid2"), row(3, "mid3")], [3, 4], level=1),
            t.file([row(3, "new3")], [5], level=0),
        ]
    )
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "old1"), (2, "mid2"), (3, "new3")]


def test_bucket_at_one_level_above_zero_is_read_without_merging(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a"), row(2, "b")], [0, 1], level=3), t.file([row(5, "e")], [2], level=3)])
    scan = t.table.scan()
    assert isinstance(scan, PrimaryKeyScan)
    [plan] = scan.buckets()
    assert (len(plan.raw), len(plan.merged)) == (2, 0)
    assert rows_of(scan.to_table(["id", "v"])) == [(1, "a"), (2, "b"), (5, "e")]


def test_files_with_disjoint_key_ranges_are_not_merged(tmp_path: Path) -> None:
    """IntervalPartition: a section of one file is read as it is (less its -D records); overlapping ones merge."""
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a"), row(2, "b")], [0, 1]), t.file([row(2, "B"), row(3, "c")], [2, 3])])
    t.commit([t.file([row(10, "x"), row(11, "y")], [4, 5], [INSERT, DELETE], delete_row_count=0)])
    [plan] = t.table.scan().buckets()
    assert len(plan.raw) == 1 and len(plan.merged) == 2
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "a"), (2, "B"), (3, "c"), (10, "x")]


def test_delete_and_update_before_drop_the_key(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a"), row(2, "b"), row(3, "c"), row(4, "d")], [0, 1, 2, 3])])
    t.commit([t.file([row(1, "a"), row(2, "b"), row(4, "D")], [4, 5, 6], [DELETE, UPDATE_BEFORE, UPDATE_AFTER])])
    t.commit([t.file([row(3, "c"), row(1, "again")], [7, 8], [DELETE, INSERT])])
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "again"), (4, "D")]


def test_ignore_delete_skips_retracts_before_merging(tmp_path: Path) -> None:
    t = pk(tmp_path, **{"ignore-delete": "true"})
    t.commit([t.file([row(1, "a"), row(2, "b")], [0, 1])])
    t.commit([t.file([row(1, "a"), row(3, "c")], [2, 3], [DELETE, DELETE])])
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "a"), (2, "b")]


def test_equal_sequence_numbers_newer_file_wins_and_add_beats_retract(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit(
        [
            t.file([row(1, "compacted"), row(2, "b")], [7, 3], level=2),
            t.file([row(1, "level0"), row(2, "b")], [7, 3], [INSERT, DELETE]),
        ]
    )
    t.commit([t.file([row(2, "b2")], [3])])
    # key 1: same sequence number at level 2 and level 0: the level-0 file is newer. Key 2: three records at 3,
    # the retract sorts before the adds; of the two adds the later written file wins.
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "level0"), (2, "b2")]


def test_sequence_numbers_decide_when_file_age_disagrees(tmp_path: Path) -> None:
    """A level-0 file holding an older version than a level-1 file: the sequence numbers decide, not the levels."""
    t = pk(tmp_path)
    t.commit([t.file([row(1, "newer"), row(2, "b")], [10, 11], level=1), t.file([row(1, "older")], [5])])
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "newer"), (2, "b")]


def test_sequence_field_orders_versions_before_the_sequence_number(tmp_path: Path) -> None:
    t = pk(tmp_path, **{"sequence.field": "n"})
    t.commit([t.file([row(1, "late", 20), row(2, "x", None)], [0, 1])])
    t.commit([t.file([row(1, "early", 10), row(2, "y", 5)], [2, 3])])
    assert rows_of(t.table.to_arrow()) == [(1, "late", 20), (2, "y", 5)]  # a null sorts first


def test_sequence_field_descending_keeps_the_smallest_value(tmp_path: Path) -> None:
    t = pk(tmp_path, **{"sequence.field": "n", "sequence.field.sort-order": "descending"})
    t.commit([t.file([row(1, "small", 10)], [0])])
    t.commit([t.file([row(1, "large", 20)], [1])])
    assert rows_of(t.table.to_arrow()) == [(1, "small", 10)]


def test_postponed_bucket_files_are_not_read(tmp_path: Path) -> None:
    """bucket=-2: files not yet assigned a bucket (bucket-postpone/) are invisible to a batch read, as in Paimon."""
    t = PkTable(tmp_path / "t", SCHEMA, ["id"], buckets=-2)
    t.commit([t.file([row(1, "assigned")], [0], bucket=0, level=1), t.file([row(2, "waiting")], [0], bucket=-2)])
    assert any(p.parent.name == "bucket-postpone" for p in t.root.rglob("data-*.parquet"))
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "assigned")]


# --- first-row -----------------------------------------------------------------------------------------------------
def test_first_row_reads_only_compacted_files_and_keeps_the_oldest(tmp_path: Path) -> None:
    t = pk(tmp_path, **{"merge-engine": "first-row", "ignore-delete": "true"})
    t.commit(
        [
            t.file([row(1, "first"), row(2, "b")], [0, 1], level=2),
            t.file([row(1, "second"), row(3, "c"), row(2, "b")], [2, 3, 4], [INSERT, INSERT, DELETE], level=1),
            t.file([row(4, "level0")], [5]),
        ]
    )
    # level 0 is invisible to a batch read of a first-row table (Paimon's batchScanSkipLevel0)
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "first"), (2, "b"), (3, "c")]


def test_first_row_refuses_retracts_without_ignore_delete(tmp_path: Path) -> None:
    t = pk(tmp_path, **{"merge-engine": "first-row"})
    t.commit([t.file([row(1, "a")], [0], level=1), t.file([row(1, "a")], [1], [DELETE], level=2)])
    with pytest.raises(UnsupportedTableError, match="ignore-delete"):
        t.table.to_arrow()


# --- filters, projections, time travel --------------------------------------------------------------------------
def test_filter_on_a_value_column_applies_after_the_merge(tmp_path: Path) -> None:
    """The newest version does not match, an older one does: no row (never the older version)."""
    t = pk(tmp_path)
    t.commit([t.file([row(1, "old"), row(2, "old")], [0, 1], value_stats=True)])
    t.commit([t.file([row(1, "new")], [2], value_stats=True)])
    table = t.table
    assert rows_of(table.to_arrow(filter=pc.field("v") == "old", columns=["id", "v"])) == [(2, "old")]
    assert rows_of(table.to_arrow(filter=[("v", "=", "new")], columns=["id"])) == [(1,)]
    assert table.scan(filter=pc.field("v") == "old").stats().selected_files == 2  # the bucket's files overlap


def test_bucket_none_of_whose_files_can_match_is_pruned(tmp_path: Path) -> None:
    t = PkTable(tmp_path / "t", SCHEMA, ["id"], buckets=2)
    t.commit([t.file([row(1, "a", 1), row(3, "c", 2)], [0, 1], value_stats=True, bucket=0)])
    t.commit([t.file([row(2, "b", 50)], [0], value_stats=True, bucket=1)])
    t.commit([t.file([row(2, "b", 60)], [1], value_stats=True, bucket=1)])
    scan = t.table.scan(filter=pc.field("n") > 10)
    assert [plan.bucket for plan in scan.buckets()] == [1]
    assert rows_of(scan.to_table()) == [(2, "b", 60)]


def test_key_filter_prunes_files_by_key_statistics(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a"), row(2, "b")], [0, 1])])
    t.commit([t.file([row(10, "x"), row(11, "y")], [2, 3])])
    t.commit([t.file([row(11, "Y")], [4])])
    scan = t.table.scan(filter=pc.field("id") >= 10)
    assert scan.stats().selected_files == 2
    assert rows_of(scan.to_table(["id", "v"])) == [(10, "x"), (11, "Y")]


def test_record_ttl_filters_the_merged_rows(tmp_path: Path) -> None:
    """An expired newest version hides its key; the older, unexpired version never comes back."""
    t = pk(tmp_path, **{"record-level.expire-time": "30 d", "record-level.time-field": "n"})
    future, past = 4_000_000_000_000, 1_000_000_000_000  # epoch milliseconds: 2096, 2001
    t.commit([t.file([row(1, "kept", future), row(2, "old", future)], [0, 1])])
    t.commit([t.file([row(2, "expired", past)], [2])])
    table = t.table
    assert rows_of(table.to_arrow(columns=["id", "v"])) == [(1, "kept")]
    assert table.scan().stats().selected_files == 2  # no file is pruned by the TTL
    assert rows_of(table.to_arrow(columns=["id", "v"], include_expired=True)) == [(1, "kept"), (2, "expired")]


def test_projection_without_key_columns_still_merges(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a", 1), row(2, "b", 2)], [0, 1])])
    t.commit([t.file([row(1, "A", 10)], [2])])
    result = t.table.to_arrow(columns=["n"])
    assert result.column_names == ["n"]
    assert sorted(result.column("n").to_pylist()) == [2, 10]


def test_time_travel_reads_each_snapshot_merged(tmp_path: Path) -> None:
    t = pk(tmp_path)
    first = t.commit([t.file([row(1, "a"), row(2, "b")], [0, 1])])
    second = t.commit([t.file([row(1, "A"), row(2, "b")], [2, 3], [INSERT, DELETE])])
    table = t.table
    table.create_tag("before", first)
    assert rows_of(table.to_arrow(snapshot_id=first, columns=["id", "v"])) == [(1, "a"), (2, "b")]
    assert rows_of(table.to_arrow(tag="before", columns=["id", "v"])) == [(1, "a"), (2, "b")]
    as_of = table.snapshot(second).time_millis  # the newest snapshot at or before: the second (no later one)
    assert rows_of(table.to_arrow(as_of=as_of, columns=["id", "v"])) == [(1, "A")]
    assert rows_of(table.to_arrow(snapshot_id=second, columns=["id", "v"])) == [(1, "A")]


def test_partitioned_table_merges_per_partition(tmp_path: Path) -> None:
    t = PkTable(tmp_path / "t", PART_SCHEMA, ["id", "dt"], ["dt"], buckets=2)
    t.commit(
        [
            t.file([{"id": 1, "dt": "d1", "v": "a"}], [0], partition=["d1"], bucket=1),
            t.file([{"id": 1, "dt": "d2", "v": "b"}], [0], partition=["d2"], bucket=1),
        ]
    )
    t.commit([t.file([{"id": 1, "dt": "d1", "v": "A"}], [1], partition=["d1"], bucket=1)])
    table = t.table
    assert rows_of(table.to_arrow()) == [(1, "d1", "A"), (1, "d2", "b")]
    assert rows_of(table.to_arrow(partition_filter={"dt": "d2"})) == [(1, "d2", "b")]
    assert rows_of(table.to_arrow(filter=pc.field("dt") == "d1")) == [(1, "d1", "A")]


# --- every reader ------------------------------------------------------------------------------------------------
def test_every_reader_returns_the_merged_rows(tmp_path: Path) -> None:
    t = pk(tmp_path)
    t.commit([t.file([row(1, "a", 1), row(2, "b", 2), row(3, "c", 3)], [0, 1, 2])])
    t.commit([t.file([row(1, "A", 10), row(3, "c", 3)], [3, 4], [INSERT, DELETE])])
    table = t.table
    expected = [(1, "A", 10), (2, "b", 2)]
    for extra in ("pandas", "polars", "duckdb"):
        optional(extra)
    assert rows_of(table.to_arrow()) == expected
    assert rows_of(table.to_batches().read_all()) == expected
    assert rows_of(table.to_pyarrow_dataset().to_table()) == expected
    assert rows_of(pa.Table.from_pandas(table.to_pandas(), preserve_index=False)) == expected
    assert rows_of(table.to_polars().to_arrow()) == expected
    assert rows_of(table.to_polars(lazy=True).collect().to_arrow()) == expected
    connection = table.to_duckdb(name="t")
    assert sorted(connection.execute("select id, v, n from t").fetchall()) == expected
    assert rows_of(table.to_pyarrow_dataset(filter=pc.field("n") > 5).to_table()) == [(1, "A", 10)]


def test_deletion_vector_positions_are_dropped_before_the_merge(tmp_path: Path) -> None:
    """The read side of deletion vectors: a file's marked row positions never reach the result."""
    t = pk(tmp_path, **{"deletion-vectors.enabled": "true"})
    base = t.file([row(1, "a"), row(2, "b"), row(3, "c")], [0, 1, 2], level=1)
    t.commit([base, t.file([row(4, "level0")], [3])])
    table = t.table
    plain = table.scan()
    assert rows_of(plain.to_table(["id", "v"])) == [(1, "a"), (2, "b"), (3, "c")]  # level 0 not visible
    marked = {base.meta.file_name: [0, 2]}
    scan = PrimaryKeyScan(
        plain.io, plain.layout, plain.schema, plain.schema_loader, plain.files(),  # type: ignore[arg-type]
        snapshot=plain.snapshot, deletion_vectors=lambda e: marked.get(e.file.file_name),
    )  # fmt: skip
    assert rows_of(scan.to_table(["id", "v"])) == [(2, "b")]


def test_deletion_vectors_paimon_commits_are_applied(tmp_path: Path) -> None:
    """Deletion vectors committed as Paimon commits them (index manifest, DV index file per bucket): the latest
    read drops the marked rows of the level>0 files; time travel to before the DV commit does not."""
    from support.paimon_index import PaimonIndex

    t = PkTable(tmp_path / "t", SCHEMA, ["id"], options={"deletion-vectors.enabled": "true"}, buckets=2)
    first = t.file([row(1, "a"), row(2, "b"), row(3, "c")], [0, 1, 2], level=1)
    other = t.file([row(4, "d"), row(5, "e")], [0, 1], level=1, bucket=1)
    before = t.commit([first, other, t.file([row(9, "level0")], [3])])
    vectors = PaimonIndex(t.table).delete_rows({first.meta.file_name: [0, 2], other.meta.file_name: [1]})
    table = t.table
    assert vectors.index_manifest is not None
    assert rows_of(table.to_arrow(columns=["id", "v"])) == [(2, "b"), (4, "d")]
    assert rows_of(table.to_arrow(snapshot_id=before, columns=["id", "v"])) == [
        (1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e"),
    ]  # fmt: skip
    assert rows_of(table.to_arrow(filter=pc.field("v") != "b", columns=["id"])) == [(4,)]


def test_deletion_vectors_in_bucket_directories(tmp_path: Path) -> None:
    from support.paimon_index import PaimonIndex

    options = {"deletion-vectors.enabled": "true", "index-file-in-data-file-dir": "true"}
    t = PkTable(tmp_path / "t", SCHEMA, ["id"], options=options)
    base = t.file([row(1, "a"), row(2, "b")], [0, 1], level=2)
    t.commit([base])
    PaimonIndex(t.table, in_data_file_dir=True).delete_rows({base.meta.file_name: [1]})
    assert not (t.root / "index").exists() or not any((t.root / "index").iterdir())
    assert rows_of(t.table.to_arrow(columns=["id", "v"])) == [(1, "a")]


# --- refused -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_partial_update_and_aggregation_are_refused(tmp_path: Path, engine: str) -> None:
    t = pk(tmp_path, **{"merge-engine": engine})
    t.commit([t.file([row(1, "a")], [0])])
    with pytest.raises(UnsupportedTableError, match=f"merge-engine '{engine}'"):
        t.table.to_arrow()


def test_primary_key_tables_are_not_written(tmp_path: Path) -> None:
    t = PkTable(tmp_path / "t", SCHEMA, ["id"], buckets=-1)  # dynamic bucket: the bucket check passes
    with pytest.raises(UnsupportedFormatError, match="primary key"):
        t.table.append(pa.table({"id": [1], "v": ["a"], "n": [1]}, schema=SCHEMA))


# --- object stores -------------------------------------------------------------------------------------------------
def test_object_store_reads_merge_as_local_reads(tmp_path: Path, s3_root: tuple[str, dict[str, Any]]) -> None:
    """The object-store path (fetch_parquet: each file fetched by its recorded size, only the columns read) merges
    the same rows; the table is written locally and uploaded file by file."""
    from tableformat.io.factory import open_location

    t = pk(tmp_path)
    t.commit([t.file([row(1, "a", 1), row(2, "b", 2), row(3, "c", 3)], [0, 1, 2])])
    t.commit([t.file([row(1, "A", 10), row(3, "c", 3)], [3, 4], [INSERT, DELETE])])
    url, options = s3_root
    file_io, root = open_location(url, options)
    for path in t.root.rglob("*"):
        if path.is_file():
            file_io.write_bytes(f"{root}/{path.relative_to(t.root).as_posix()}", path.read_bytes())
    remote = Table.open(url, options)
    assert remote.context.io.is_object_store
    expected = rows_of(t.table.to_arrow())
    assert expected == [(1, "A", 10), (2, "b", 2)]
    assert rows_of(remote.to_arrow()) == expected
    assert rows_of(remote.to_batches(columns=["n", "id"]).read_all()) == [(2, 2), (10, 1)]
    assert rows_of(remote.to_arrow(filter=pc.field("v") == "b", columns=["id"])) == [(2,)]
