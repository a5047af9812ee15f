"""Orphan cleanup racing commits and expiration never deletes a live file.

The cleaner lists candidates, reads the snapshots present, and only then reads their manifest lists and manifests.
If in between a writer commits and an expirer removes the snapshots the cleaner had read (and their manifest lists),
the cleaner must still learn what the newer snapshot references before deleting anything.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from support.faults import InterferingFileIO
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, context_with_io, files_under, id_part_rows

from tableformat.cleanup.check import check_table
from tableformat.io.local import LocalFileIO
from tableformat.table import Table


@pytest.mark.parametrize("trigger", ["manifest-list-", "manifest-"])
def test_snapshots_expired_and_committed_while_references_are_read(tmp_path: Path, trigger: str) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(id_part_rows(0, 4, parts=(0, 1)))  # snapshot 1: its files are three days old and live to the end
    table.append(id_part_rows(4, 4, parts=(0, 1)))  # snapshot 2
    age_files(root, 3 * DAY_S)
    old_live = {p for p in files_under(root) if "bucket-" in p or p.startswith("manifest/manifest-")}
    old_live -= {p for p in old_live if p.startswith("manifest/manifest-list-")}

    def commit_and_expire() -> None:
        other = Table.open(str(root))
        other.append(id_part_rows(8, 4, parts=(0, 1)))  # snapshot 3: still references every old data file and manifest
        result = expire_snapshots(other.context, retain_min=1, retain_max=1, time_retained=0)
        assert result.expired_snapshot_ids == (1, 2)  # with their manifest lists

    io = InterferingFileIO(LocalFileIO(), trigger, commit_and_expire)
    result = remove_orphan_files(context_with_io(root, io), older_than=dt.timedelta(hours=1))
    assert io.action is None  # the interference happened
    assert result.deleted_paths == ()
    assert old_live <= files_under(root)
    latest = Table.open(str(root))
    assert sorted(latest.to_arrow().column("id").to_pylist()) == list(range(12))
    assert check_table(latest.context).ok


def test_a_tag_created_while_references_are_read_protects_its_files(tmp_path: Path) -> None:
    """A tag made on the latest snapshot, which then is expired, still counts: it appeared before deletion."""
    root = tmp_path / "t"
    table = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(id_part_rows(0, 4, parts=(0, 1)))  # 1
    age_files(root, 3 * DAY_S)
    old_data = {p for p in files_under(root) if "bucket-" in p}

    def tag_overwrite_expire() -> None:
        other = Table.open(str(root))
        other.create_tag("keep", 1)
        other.overwrite(id_part_rows(4, 4, parts=(0, 1)))  # 2: snapshot 1's files only the tag holds now
        other.append(id_part_rows(8, 2, parts=(0, 1)))  # 3
        expired = other.maintenance.expire_snapshots(retain_min=1, retain_max=1, time_retained=0)
        assert expired.expired_snapshot_ids == (1, 2)

    io = InterferingFileIO(LocalFileIO(), "manifest-list-", tag_overwrite_expire)
    result = remove_orphan_files(context_with_io(root, io), older_than=dt.timedelta(hours=1))
    assert io.action is None
    assert result.deleted_paths == ()
    assert old_data <= files_under(root)
    reopened = Table.open(str(root))
    assert sorted(reopened.to_arrow(tag="keep").column("id").to_pylist()) == [0, 1, 2, 3]
    assert check_table(reopened.context).ok
