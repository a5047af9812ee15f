"""Snapshot expiration and tag deletion never take a file a branch still uses.

Branches are made as Paimon and pypaimon 2.1.0 make them (``FileSystemBranchManager.create_branch``): the tag, the
snapshot and the schema are copied into ``branch/branch-<name>/``, so the branch's own metadata names the main
table's manifest lists, manifests and data files.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, branch_from_snapshot, branch_from_tag, files_under, rows_of

from tableformat.cleanup.check import check_table
from tableformat.errors import MaintenanceError, TagError
from tableformat.scan.reader import DataReader
from tableformat.table import Table

EVERYTHING = {"retain_min": 1, "retain_max": 1, "time_retained": 0, "limit": 1000}


def branch_rows(table: Table, branch: str) -> dict[str, list[tuple[int, int]]]:
    """Rows of every snapshot and tag of a branch, read through the main table's manifests and data files."""
    ctx = table.context
    store = ctx.store.branch_store(branch)
    reader = DataReader(ctx.io, ctx.layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec())
    roots = {f"snapshot {i}": store.read_snapshot(i) for i in store.snapshot_ids()}
    roots |= {f"tag {t.name}": t.snapshot for t in store.tags()}
    result = {}
    for label, snapshot in roots.items():
        data = reader.read_all(table.plan_files(snapshot))
        result[label] = rows_of(data)
    return result


def released_table(kit) -> tuple[Table, Path, list[tuple[int, int]]]:
    """The issue's history: snapshot 1 tagged 'release' (1 s time-retained), a branch b1 from that tag, then the
    main table overwritten and appended to. Returns the table, its root and the release rows."""
    table = kit.table()
    table.append(kit.rows(6))  # snapshot 1
    table.create_tag("release", 1, time_retained=dt.timedelta(seconds=1))
    release = rows_of(table.to_arrow(tag="release"))
    root = kit.root(table)
    branch_from_tag(root, "b1", "release", 1)
    table.overwrite(kit.rows(4))  # snapshot 2: every file of snapshot 1 retired
    table.append(kit.rows(2))  # snapshot 3
    return table, root, release


def test_expiration_keeps_what_a_branch_created_from_a_tag_uses(kit) -> None:
    table, root, release = released_table(kit)
    release_files = {p for p in files_under(root) if "bucket-" in p}
    branch_before = files_under(root / "branch")
    result = expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2)
    # The tag's time ran out, but branch b1 was created from it: kept, and said so.
    assert result.expired_tags == ()
    assert result.notes[0].startswith("tag 'release' is past its time-retained but kept: branch b1 was created from it")
    assert [t.name for t in table.tags()] == ["release"]
    assert not any(p.startswith("branch/") for p in result.deleted_paths)
    assert files_under(root / "branch") == branch_before
    assert release_files <= files_under(root)
    assert branch_rows(table, "b1") == {"snapshot 1": release, "tag release": release}
    assert check_table(table.context).ok


def test_expiration_after_the_tag_was_deleted_by_hand_still_keeps_the_branch_files(kit) -> None:
    table, root, release = released_table(kit)
    (root / "tag" / "tag-release").unlink()  # as pypaimon's delete_tag or an operator would
    snapshot_1 = table.context.store.branch_store("b1").read_snapshot(1)
    kept_lists = {f"manifest/{n}" for n in snapshot_1.manifest_lists()}
    before = files_under(root)
    result = expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2)
    deleted = set(result.deleted_paths)
    assert deleted == before - files_under(root)
    assert not any("bucket-" in p for p in deleted)  # every retired file is still the branch's
    assert not deleted & kept_lists
    assert {"snapshot/snapshot-1", "snapshot/snapshot-2"} <= deleted
    assert branch_rows(table, "b1") == {"snapshot 1": release, "tag release": release}
    assert check_table(table.context).ok


def test_dry_run_equals_the_real_run_with_branches(kit, tmp_path: Path) -> None:
    table, root, _ = released_table(kit)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    planned = expire_snapshots(Table.open(str(copy)).context, **EVERYTHING, now_ms=FAR_FUTURE_MS, dry_run=True)
    done = expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    assert planned.deleted_paths and set(planned.deleted_paths) == set(done.deleted_paths)
    assert planned.notes == done.notes


def test_branch_from_a_snapshot_protects_its_files_from_expiration(kit) -> None:
    table = kit.table()
    table.append(kit.rows(4))  # 1
    table.append(kit.rows(4))  # 2
    root = kit.root(table)
    branch_from_snapshot(root, "dev", 2)
    expected = rows_of(table.to_arrow(snapshot_id=2))
    table.drop_partitions([{"part": 0}])  # 3
    table.overwrite(kit.rows(2))  # 4
    result = expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2, 3)
    assert not any("bucket-" in p for p in result.deleted_paths)
    assert branch_rows(table, "dev") == {"snapshot 2": expected}
    assert check_table(table.context).ok


def test_deleting_a_tag_a_branch_was_created_from_is_refused(kit) -> None:
    table, root, _ = released_table(kit)
    with pytest.raises(TagError, match=r"tag 'release' is used by branch b1"):
        table.delete_tag("release")
    assert (root / "tag" / "tag-release").exists()
    table.create_tag("other", 3)
    table.delete_tag("other")  # a tag no branch uses goes as before
    assert [t.name for t in table.tags()] == ["release"]


def test_unreadable_branch_metadata_deletes_nothing(kit) -> None:
    table, root, _ = released_table(kit)
    (root / "branch" / "branch-b1" / "snapshot" / "snapshot-1").write_bytes(b"{not json")
    before = files_under(root)
    with pytest.raises(MaintenanceError, match="nothing was deleted"):
        expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    assert files_under(root) == before


def test_branch_created_during_expiration_is_honoured(kit) -> None:
    """A branch made between planning and deleting (from a snapshot being expired) keeps its files."""
    from tableformat.cleanup.snapshots import execute_expiration, plan_expiration
    from tableformat.cleanup.snapshots.config import ExpireConfig

    table = kit.table()
    table.append(kit.rows(4))  # 1
    expected = rows_of(table.to_arrow(snapshot_id=1))
    table.overwrite(kit.rows(4))  # 2
    table.append(kit.rows(2))  # 3
    root = kit.root(table)
    config = ExpireConfig.resolve(table.context.options, retain_min=1, retain_max=1, time_retained=0, limit=1000)
    plan = plan_expiration(table.context, config, FAR_FUTURE_MS)
    assert any("bucket-" in f.path for f in plan.data_files)
    branch_from_snapshot(root, "late", 1)
    result = execute_expiration(table.context, plan, config=config)
    assert not any("bucket-" in p for p in result.deleted_paths)
    assert branch_rows(table, "late") == {"snapshot 1": expected}
    assert check_table(table.context).ok
