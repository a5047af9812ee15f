"""A tablefmt commit keeps the table's deletion vectors and statistics (Paimon's FileStoreCommitImpl): an append
names the latest index manifest and statistics again, a partition drop or overwrite removes only the index files of
the partitions it replaces, and statistics of an older schema are not carried over. Index files and statistics are
written in Paimon's format by tests/support/paimon_index.py."""

from __future__ import annotations

from pathlib import Path

from support.paimon_index import PaimonIndex
from support.tables import ID_PART_SCHEMA, id_part_rows

from tableformat.table import Table


def _table_with_vectors(tmp_path: Path) -> tuple[Table, PaimonIndex, dict[int, str]]:
    table = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, ["part"], options={"write-only": "true"})
    table.append(id_part_rows(0, 8, parts=(0, 1)))
    index = PaimonIndex(table)
    files = {e.partition: name for name, e in index.live_files().items()}
    by_part = {part: files[index.partition([part])] for part in (0, 1)}
    index.delete_rows({by_part[0]: [0], by_part[1]: [1, 2]})
    index.analyze()
    return table, index, by_part


def test_an_append_keeps_the_index_manifest_and_the_statistics(tmp_path: Path) -> None:
    table, index, _ = _table_with_vectors(tmp_path)
    before = index.latest()
    assert before.index_manifest is not None and before.statistics is not None
    after = table.append(id_part_rows(100, 4, parts=(0, 1)))
    assert after is not None and after.id == before.id + 1
    assert (after.index_manifest, after.statistics) == (before.index_manifest, before.statistics)


def test_a_partition_drop_removes_only_that_partitions_index_files(tmp_path: Path) -> None:
    table, index, by_part = _table_with_vectors(tmp_path)
    before = index.index_entries()
    previous = index.latest().index_manifest
    assert sorted(e.index_file.dv_data_files() for e in before) == [(by_part[0],), (by_part[1],)]
    dropped = table.drop_partitions([{"part": 0}])
    assert dropped is not None and dropped.index_manifest not in (None, previous)  # a new one, without part 0
    kept = index.index_entries(dropped)
    assert [e.index_file.dv_data_files() for e in kept] == [(by_part[1],)]
    assert kept == [e for e in before if e.partition == index.partition([1])]
    assert dropped.statistics == index.store.read_snapshot(dropped.id - 1).statistics
    emptied = table.drop_partitions([{"part": 1}])
    assert emptied is not None and emptied.index_manifest is None


def test_statistics_of_an_older_schema_are_not_carried_over(tmp_path: Path) -> None:
    table, index, _ = _table_with_vectors(tmp_path)
    table.set_options({"snapshot.num-retained.min": "3"})  # schema 1: the statistics were computed on schema 0
    after = Table.open(table.location).append(id_part_rows(200, 2, parts=(0, 1)))
    assert after is not None and after.schema_id == 1
    assert after.statistics is None
    assert after.index_manifest == index.store.read_snapshot(after.id - 1).index_manifest
