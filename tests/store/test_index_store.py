"""The store's index manifests, deletion-vector and hash index files and statistics files, on a real table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.paimon_index import PaimonIndex
from support.tables import ID_PART_SCHEMA, files_under, id_part_rows

from tableformat.errors import MissingMetadataError, UnsafePathError, UnsupportedFormatError
from tableformat.layout import NameFactory, TableLayout
from tableformat.model.index import DELETION_VECTORS_INDEX, HASH_INDEX, IndexManifestEntry, Statistics
from tableformat.model.manifest import FileKind
from tableformat.model.snapshot import CommitKind
from tableformat.table import Table


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Two appends of 4 rows each into partitions 0 and 1 (one data file per partition and append)."""
    table = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(id_part_rows(0, 4, parts=(0, 1)))
    table.append(id_part_rows(10, 4, parts=(0, 1)))
    return table


def data_files(index: PaimonIndex) -> list[str]:
    return sorted(index.live_files())


def test_deletion_vectors_are_read_back_per_data_file(table: Table, tmp_path: Path) -> None:
    index = PaimonIndex(table)
    first, second, third, fourth = data_files(index)
    before = files_under(tmp_path / "t")
    snapshot = index.delete_rows({first: [1, 0], second: [1]})
    store = table.context.store
    assert snapshot.id == 3 and snapshot.index_manifest is not None
    assert store.read_snapshot(3) == snapshot and store.latest_snapshot_id() == 3
    entries = store.read_index_manifest(snapshot.index_manifest)
    new_files = files_under(tmp_path / "t") - before
    index_files = {f"index/{e.index_file.file_name}" for e in entries}
    assert {f for f in new_files if f.startswith("index/")} == index_files
    assert f"manifest/{snapshot.index_manifest}" in new_files
    by_file = {name: e for e in entries for name in e.index_file.dv_data_files()}
    assert set(by_file) == {first, second}
    for name, expected in ((first, [0, 1]), (second, [1])):
        entry = by_file[name]
        assert entry.kind is FileKind.ADD and entry.index_file.index_type == DELETION_VECTORS_INDEX
        assert store.read_deletion_vector(entry.index_file, name).tolist() == expected
        assert entry.index_file.dv_range(name).cardinality == len(expected)  # type: ignore[union-attr]
        assert store.read_deletion_vectors(entry.index_file)[name].tolist() == expected
        assert store.read_deletion_vector(entry.index_file, third) is None
    assert index.live_files(snapshot).keys() == {first, second, third, fourth}  # the data files stay live


def test_a_second_delete_replaces_the_buckets_file_with_the_union(table: Table) -> None:
    index = PaimonIndex(table)
    first = data_files(index)[0]
    one = index.delete_rows({first: [0]})
    two = index.delete_rows({first: [2, 3]})
    store = table.context.store
    (old,) = [e for e in store.read_index_manifest(one.index_manifest or "") if first in e.index_file.dv_data_files()]
    entries = store.read_index_manifest(two.index_manifest or "")
    (new,) = [e for e in entries if first in e.index_file.dv_data_files()]
    assert new.index_file.file_name != old.index_file.file_name
    assert old.index_file.file_name not in {e.index_file.file_name for e in entries}
    assert store.read_deletion_vector(new.index_file, first).tolist() == [0, 2, 3]
    assert store.read_deletion_vector(old.index_file, first).tolist() == [0]  # still on disk for snapshot 3


@pytest.mark.parametrize("bitmap64", [False, True])
def test_64_bit_vectors_and_index_files_in_the_bucket_directory(table: Table, tmp_path: Path, bitmap64: bool) -> None:
    index = PaimonIndex(table, bitmap64=bitmap64, in_data_file_dir=True)
    first = data_files(index)[0]
    live = index.live_files()[first]
    snapshot = index.delete_rows({first: [3]})
    store = table.context.store
    (entry,) = store.read_index_manifest(snapshot.index_manifest or "")
    bucket_dir = index.paths.bucket_dir(live.partition, live.bucket)
    assert (tmp_path / "t" / bucket_dir / entry.index_file.file_name).is_file()
    assert not (tmp_path / "t" / "index").exists()
    assert store.read_deletion_vector(entry.index_file, first, bucket_dir).tolist() == [3]
    dv_range = entry.index_file.dv_range(first)
    assert dv_range is not None and dv_range.length == entry.index_file.file_size - 1 - (0 if bitmap64 else 8)
    with pytest.raises(MissingMetadataError, match="deletion vector file is missing"):
        store.read_deletion_vector(entry.index_file, first)  # not in index/


def test_hash_index_and_statistics_are_carried_to_later_snapshots(table: Table) -> None:
    index = PaimonIndex(table)
    store = table.context.store
    hashed = index.commit([index.hash_index_entry([7, -1, 42], partition=(1,), bucket=0)])
    (entry,) = store.read_index_manifest(hashed.index_manifest or "")
    assert entry.index_file.index_type == HASH_INDEX and entry.index_file.row_count == 3
    assert entry.index_file.dv_ranges is None and entry.partition == index.partition((1,))
    assert store.read_hash_index(entry.index_file) == [7, -1, 42]
    analyzed = index.analyze(col_stats={"id": {"colId": 0, "nullCount": 0}})
    assert analyzed.commit_kind is CommitKind.ANALYZE and analyzed.statistics is not None
    assert analyzed.index_manifest == hashed.index_manifest  # no index change: the same index manifest
    assert store.read_statistics(analyzed.statistics) == Statistics(
        snapshot_id=hashed.id,
        schema_id=0,
        merged_record_count=hashed.total_record_count,
        col_stats={"id": {"colId": 0, "nullCount": 0}},
    )
    later = index.delete_rows({data_files(index)[0]: [0]})
    assert later.statistics == analyzed.statistics
    kinds = sorted(e.index_file.index_type for e in store.read_index_manifest(later.index_manifest or ""))
    assert kinds == [DELETION_VECTORS_INDEX, HASH_INDEX]


def test_delete_entries_of_an_index_manifest_cancel_their_files(table: Table) -> None:
    index = PaimonIndex(table)
    store = table.context.store
    snapshot = index.delete_rows({data_files(index)[0]: [0]})
    (entry,) = store.read_index_manifest(snapshot.index_manifest or "")
    hashed = index.hash_index_entry([1], partition=(0,))
    name = store.write_index_manifest(
        [
            entry,
            hashed,
            IndexManifestEntry(
                kind=FileKind.DELETE, partition=entry.partition, bucket=entry.bucket, index_file=entry.index_file
            ),
        ],
        NameFactory(),
    )
    assert [e.kind for e in store.read_index_manifest_entries(name)] == [FileKind.ADD, FileKind.ADD, FileKind.DELETE]
    assert store.read_index_manifest(name) == [hashed]


def test_missing_external_and_unsafe_index_files(table: Table) -> None:
    index = PaimonIndex(table)
    store = table.context.store
    with pytest.raises(MissingMetadataError, match="index manifest is missing"):
        store.read_index_manifest("index-manifest-nope-0")
    with pytest.raises(MissingMetadataError, match="statistics file is missing"):
        store.read_statistics("stat-nope-0")
    first = data_files(index)[0]
    (entry,) = store.read_index_manifest(index.delete_rows({first: [0]}).index_manifest or "")
    external = dataclasses.replace(entry.index_file, external_path="s3://elsewhere/index-x-0")
    with pytest.raises(UnsupportedFormatError, match="external path"):
        store.read_deletion_vector(external, first)
    for bad in ("../index-x", "a/b", ""):
        with pytest.raises(UnsafePathError):
            store.read_deletion_vectors(dataclasses.replace(entry.index_file, file_name=bad))
    with pytest.raises(UnsafePathError):
        store.read_index_manifest("../manifest-x")
    with pytest.raises(UnsafePathError):
        TableLayout("/t").index_file("index-x-0", "dt=1/../../bucket-0")


def test_layout_paths_of_index_files() -> None:
    layout = TableLayout("/w/t")
    assert layout.index_manifest_file("index-manifest-u-0") == "/w/t/manifest/index-manifest-u-0"
    assert layout.index_file("index-u-0") == "/w/t/index/index-u-0"
    assert layout.index_file("index-u-0", "dt=1/bucket-0") == "/w/t/dt=1/bucket-0/index-u-0"
    assert layout.statistics_file("stat-u-0") == "/w/t/statistics/stat-u-0"
    assert (TableLayout.index_file_rel("index-u-0"), TableLayout.statistics_rel("stat-u-0")) == (
        "index/index-u-0",
        "statistics/stat-u-0",
    )
