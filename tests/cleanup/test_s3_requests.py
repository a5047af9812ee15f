"""Request counts on a real S3 server (SeaweedFS), counted at the botocore call.

Deletes: n keys cost ceil(n / 1,000) DeleteObjects, with no LIST or HEAD per batch (existence is settled by one
listing per directory, before any delete, or not at all when the operation listed or read the files itself).
Operations: expiration, orphan cleanup and a commit never fetch the same object twice.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.s3_requests import RequestLog
from support.s3_tables import SCHEMA, appended, rows

from tableformat import Table
from tableformat.cleanup.kernel import Deleter
from tableformat.io.factory import open_location
from tableformat.layout import TableLayout

pytestmark = pytest.mark.s3

DAY_MS = 86_400_000


def planted(io: Any, root: str, rels: list[str]) -> None:
    io.fs.pipe({f"{root}/{rel}": b"x" for rel in rels})


@pytest.mark.slow
def test_a_delete_of_2500_listed_keys_is_three_delete_objects_and_nothing_else(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    io, root = open_location(*s3_root)
    rels = [f"part=0/bucket-0/data-{i:05d}.parquet" for i in range(2500)]
    planted(io, root, rels)
    log = RequestLog().attach(io)
    deleter = Deleter(io, TableLayout(root), 8)
    gone = deleter.delete([(rel, 1) for rel in rels], listed=True)
    assert sorted(gone) == rels and deleter.failures == [] and deleter.absent == []
    assert sorted(call.keys for call in log.of("DeleteObjects")) == [500, 1000, 1000]
    assert log.counts() == {"DeleteObjects": 3}  # no LIST, no HEAD
    assert list(io.walk_files(root)) == []


@pytest.mark.slow
def test_a_delete_of_2500_keys_settles_existence_with_one_listing_per_directory(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    io, root = open_location(*s3_root)
    directories = [f"part={p}/bucket-0" for p in range(5)]
    rels = [f"{d}/data-{i:05d}.parquet" for d in directories for i in range(500)]
    missing = [f"{d}/data-{i:05d}-gone.parquet" for d in directories for i in (7, 250, 499, 1000)]
    planted(io, root, rels)
    log = RequestLog().attach(io)
    deleter = Deleter(io, TableLayout(root), 8)
    gone = deleter.delete([(rel, 1) for rel in rels + missing])
    assert sorted(gone) == sorted(rels) and deleter.failures == []
    assert sorted(deleter.absent) == sorted(missing)  # already gone: reported apart, never as deleted
    operations = [call.operation for call in log.calls]
    assert operations.count("DeleteObjects") == 3
    assert sorted(call.keys for call in log.of("DeleteObjects")) == [500, 1000, 1000]
    listed = [call.key for call in log.of("ListObjectsV2")]
    assert sorted(listed) == sorted(f"{root.split('/', 1)[1]}/{d}/" for d in directories)  # one per directory
    assert operations.index("DeleteObjects") == len(listed)  # every listing before the first delete
    assert "HeadObject" not in operations


def test_existence_asked_ahead_is_what_the_delete_reports(s3_root: tuple[str, dict[str, Any]]) -> None:
    io, root = open_location(*s3_root)
    rels = [f"part=0/bucket-0/data-{i:03d}.parquet" for i in range(6)] + ["manifest/manifest-a-0"]
    planted(io, root, [*rels, "part=0/bucket-0/dir/data-x.parquet"])
    deleter = Deleter(io, TableLayout(root), 8)
    asked = [(rel, 1) for rel in [*rels, "part=0/bucket-0/data-gone.parquet", "part=0/bucket-0/dir"]]
    log = RequestLog().attach(io)
    existence = deleter.ask_existence(asked)
    assert existence.present == frozenset(rels) and list(existence.unanswered) == ["part=0/bucket-0/dir"]
    assert deleter.deleted == [] and deleter.absent == [] and deleter.failures == []  # asking deletes nothing
    assert "DeleteObjects" not in log.counts()
    gone = deleter.delete(asked[1:], existence=existence)  # a subset of what was asked
    assert sorted(gone) == sorted(rels[1:]) and deleter.absent == ["part=0/bucket-0/data-gone.parquet"]
    assert len(deleter.failures) == 1 and deleter.failures[0].endswith("/part=0/bucket-0/dir: is a directory")
    assert [call.keys for call in log.of("DeleteObjects")] == [6]  # existing keys only, as listed: no new question
    left = sorted(info.path.split("/", 2)[2] for info in io.walk_files(root))
    assert left == [rels[0], "part=0/bucket-0/dir/data-x.parquet"]


def test_expiration_on_s3_reads_nothing_twice_and_deletes_in_three_requests(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    table = appended(s3_root, 24, drop_after=12)
    table.create_tag("keep", 16)
    settings: dict[str, Any] = {"retain_min": 4, "retain_max": 4, "time_retained": 0, "limit": 100}
    dry = expire_snapshots(table.context, dry_run=True, **settings)
    log = RequestLog().attach(table.context.io)
    result = expire_snapshots(table.context, **settings)
    assert sorted(result.deleted_paths) == sorted(dry.deleted_paths)
    assert result.expired_snapshot_ids == tuple(range(1, 22)) and result.deleted_data_files == 12
    assert read_twice_but_the_end(log, result) == []
    # snapshot files; data files, manifests and manifest lists in one step; the journal; the run's claim
    assert [call.keys for call in log.of("DeleteObjects")] == [21, len(result.deleted_paths) - 21, 1, 1]
    listed = [call.key.rsplit("/", 2)[-2] + "/" + call.key.rsplit("/", 1)[-1] for call in log.of("ListObjectsV2")]
    assert sorted(listed) == sorted(
        [
            "snapshot/.expire-journal-",  # pending journals, by prefix: one request whatever the history
            "snapshot/",  # no EARLIEST hint yet (the first expiration): the listing decides
            "tag/",
            "consumer/",
            "branch/",
            "changelog/",  # the main table's long-lived changelogs protect like branch roots
            "tag/",  # the re-check after the snapshot files went (the tag is not read again: same version)
            "branch/",
            "changelog/",
            "bucket-0/",  # existence of the data files and manifests: one listing per directory
            "manifest/",
            ".tablefmt/",  # the claims, once the run's own is written (tableformat/claims.py)
            "audit/",  # the audit ledger's records, pruned by maintenance.audit.time-retained (docs/audit.md)
        ]
    )
    assert log.counts()["HeadObject"] == 1  # LATEST + 1 does not exist (snapshot LATEST is read: the plan keeps it)
    assert table.to_arrow(tag="keep").num_rows == 15 * 4 + 3 * 4  # part 1 of appends 0-14, part 0 since the drop
    # with both hints present, each hint's checks go out at once: still nothing read twice, and no listing of
    # snapshot/ (EARLIEST's and LATEST's snapshots are read; EARLIEST - 1 and LATEST + 1 are HEADs; the other HEADs
    # settle the existence of the few files to delete in directories with fewer than four)
    table.append(rows(200))
    log.clear()
    again = expire_snapshots(table.context, **settings)
    assert again.expired_snapshot_ids == (22,) and read_twice_but_the_end(log, again) == []
    heads = [call.key.rsplit("/", 1)[-1] for call in log.of("HeadObject")]
    assert sorted(name for name in heads if name.startswith("snapshot-")) == [
        "snapshot-21",
        "snapshot-27",
    ]
    assert "snapshot/" not in [call.key.split("/", 1)[1] for call in log.of("ListObjectsV2")]


def test_expiration_on_s3_reads_the_latest_snapshot_once_when_it_is_also_the_earliest(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """EARLIEST and LATEST name the same snapshot (retain 1): both first reads ask for it at once, one GET serves."""
    table = appended(s3_root, 3)
    settings: dict[str, Any] = {"retain_min": 1, "time_retained": 0, "limit": 100}
    assert expire_snapshots(table.context, **settings).expired_snapshot_ids == (1, 2)
    log = RequestLog().attach(table.context.io)
    again = expire_snapshots(table.context, **settings)
    assert again.expired_snapshot_ids == () and log.read_twice() == []
    assert [call.key.rsplit("/", 1)[-1] for call in log.of("GetObject")].count("snapshot-3") == 1


def test_expiration_planning_on_s3_reads_the_deciding_manifests_before_the_last_lists(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """Manifests go ahead of lists: the dropped partition's DELETE manifest and the end snapshot's base manifests that
    may hold that partition (the protection check) are read while base lists still are, not after all of them."""
    table = appended(s3_root, 40, drop_after=12)
    settings: dict[str, Any] = {"retain_min": 4, "retain_max": 4, "time_retained": 0, "limit": 100}
    log = RequestLog().attach(table.context.io)
    dry = expire_snapshots(table.context, dry_run=True, parallelism=4, **settings)
    assert dry.expired_snapshot_ids == tuple(range(1, 38)) and dry.deleted_data_files == 12
    assert log.read_twice() == []
    names = [call.key.rsplit("/", 1)[-1] for call in log.of("GetObject")]
    manifests = [i for i, name in enumerate(names) if name.startswith("manifest-") and "-list-" not in name]
    lists = [i for i, name in enumerate(names) if name.startswith("manifest-list-")]
    assert len(manifests) >= 2  # the DELETE manifest and at least one base manifest of the end holding part 0
    assert max(manifests) < max(lists) - 4  # read while lists were still coming, not in a wave after them
    log.clear()
    result = expire_snapshots(table.context, parallelism=4, **settings)
    assert sorted(result.deleted_paths) == sorted(dry.deleted_paths)
    assert read_twice_but_the_end(log, result) == []
    assert table.to_arrow().num_rows == 40 * 8 - 12 * 4  # every append but part 0 of the first twelve


def test_expiration_planning_on_s3_reads_the_range_while_it_looks_for_the_end(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """Snapshots below retain-max's bound are expired whatever the time rule finds: they are requested as planning
    starts, not once the walk that finds where the range ends has read the end snapshot (whose lists come next)."""
    table = appended(s3_root, 24)
    log = RequestLog().attach(table.context.io)
    settings: dict[str, Any] = {"retain_min": 4, "retain_max": 4, "time_retained": 0, "limit": 100}
    dry = expire_snapshots(table.context, dry_run=True, parallelism=4, **settings)
    assert dry.expired_snapshot_ids == tuple(range(1, 21)) and log.read_twice() == []
    end = table.context.store.read_snapshot(21)
    names = [call.key.rsplit("/", 1)[-1] for call in log.of("GetObject")]
    end_lists = [names.index(end.base_manifest_list), names.index(end.delta_manifest_list)]
    assert names.index("snapshot-1") < names.index("snapshot-21") < min(end_lists)


def copied(io: Any, root: str, source: str, target: str) -> None:
    io.write_bytes(f"{root}/{target}", io.read_bytes(f"{root}/{source}"))


def test_expiration_with_branches_on_s3_reads_no_branch_root_twice(s3_root: tuple[str, dict[str, Any]]) -> None:
    table = appended(s3_root, 12)
    table.create_tag("t3", 3)
    io, root = table.context.io, table.context.layout.root
    for source, target in [
        ("snapshot/snapshot-2", "branch/branch-b/snapshot/snapshot-2"),  # a branch from snapshot 2
        ("tag/tag-t3", "branch/branch-c/tag/tag-t3"),  # a branch from tag t3 (Paimon copies tag and snapshot)
        ("snapshot/snapshot-3", "branch/branch-c/snapshot/snapshot-3"),
    ]:
        copied(io, root, source, target)
    for branch in ("b", "c"):
        copied(io, root, "schema/schema-0", f"branch/branch-{branch}/schema/schema-0")
    settings: dict[str, Any] = {"retain_min": 2, "retain_max": 2, "time_retained": 0, "limit": 100}
    log = RequestLog().attach(io)
    result = expire_snapshots(table.context, **settings)
    assert result.expired_snapshot_ids == tuple(range(1, 11))
    # the re-check lists the branches again; their unchanged roots are not read again
    assert read_twice_but_the_end(log, result) == []
    branch_reads = sorted(call.key.split("/branch/", 1)[1] for call in log.of("GetObject") if "/branch/" in call.key)
    assert branch_reads == ["branch-b/snapshot/snapshot-2", "branch-c/snapshot/snapshot-3", "branch-c/tag/tag-t3"]
    assert table.to_arrow().num_rows == 96
    assert table.to_arrow(tag="t3").num_rows == 24  # the tag's (and branch c's) files were kept


def test_orphan_cleanup_on_s3_reads_nothing_twice_and_deletes_in_one_request(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    table = appended(s3_root, 6)
    io, root = table.context.io, table.context.layout.root
    strays = [f"part={i % 2}/bucket-0/data-{uuid.uuid4()}-0.parquet" for i in range(30)]
    strays += [f"manifest/manifest-{uuid.uuid4()}-0" for _ in range(5)]
    planted(io, root, strays)
    log = RequestLog().attach(io)
    result = remove_orphan_files(table.context, now_ms=int(time.time() * 1000) + 2 * DAY_MS)
    assert sorted(result.deleted_paths) == sorted(strays)
    assert log.read_twice() == []
    # the census listed them: no HEAD, no LIST; then the run's claim (tableformat/claims.py)
    assert [call.keys for call in log.of("DeleteObjects")] == [35, 1]
    assert "HeadObject" not in log.counts()
    # the census: the root by itself, then each directory the format uses below it by one recursive listing (not
    # one listing per directory: part=0/ and part=1/ hold bucket-0/, which is never listed by itself)
    base = root.split("/", 1)[1]
    flat = sorted(call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if not call.delimiter)
    undo = 2 * [".tablefmt/undo/"]  # the undo window, before and after the roots (docs/undo.md)
    assert flat == [*undo, "manifest/", "part=0/", "part=1/", "schema/", "snapshot/"]
    by_level = [call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if call.delimiter]
    assert by_level.count("") == 1  # the root, once
    # and the roots, twice; the claims, once the run's own is written (tableformat/claims.py)
    assert sorted(by_level) == sorted(["", *2 * ["snapshot/", "tag/", "changelog/", "branch/"], ".tablefmt/"])
    assert table.to_arrow().num_rows == 48


def test_a_commit_reads_five_objects_once_each(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(url, SCHEMA, ["part"], options={"write-only": "true"}, storage_options=options)
    table.append(rows(0))
    table.append(rows(8))  # the first commit of a Table also probes the store for conditional writes
    log = RequestLog().attach(table.context.io)
    table.append(rows(16))
    reads = sorted(call.key.rsplit("/", 2)[-2] + "/" + call.key.rsplit("/", 1)[-1] for call in log.of("GetObject"))
    assert [r for r in reads if not r.startswith("manifest/")] == ["schema/schema-0", "snapshot/LATEST",
                                                                     "snapshot/snapshot-2"]
    assert len([r for r in reads if r.startswith("manifest/")]) == 2  # the base and delta lists of snapshot 2
    assert log.read_twice() == []
    assert log.counts()["HeadObject"] == 3  # snapshot 3 before, snapshots 2 and 4 after the conditional PUT
    assert log.counts()["ListObjectsV2"] == 1  # schema/ (the latest schema)
    assert table.to_arrow().num_rows == 24


def read_twice_but_the_end(log: RequestLog, result: Any) -> list[str]:
    """Keys fetched twice, but the plan's first kept snapshot: read again, once, when the run holds its claim (a
    rollback may have removed it meanwhile; docs/reliability.md, "Rollback and maintenance never overlap")."""
    end = f"/snapshot/snapshot-{result.expired_snapshot_ids[-1] + 1}"
    return [key for key in log.read_twice() if not key.endswith(end)]
