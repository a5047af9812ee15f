"""Steering a table: options set/unset as new schema versions (Paimon's ALTER TABLE SET/RESET), concurrent schema
changes, and rollback with Paimon's semantics on a table with tags, a branch and a consumer."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from support.processes import join_all
from support.tables import (
    age_files,
    branch_from_snapshot,
    branch_from_tag,
    files_under,
    reachable_files,
    rows_of,
)

from tableformat import SnapshotNotFoundError, Table, ValidationError
from tableformat.commit.rollback import RollbackRefusedError
from tableformat.commit.schema_change import alter_options
from tableformat.errors import UnknownOptionError
from tableformat.model.snapshot import Consumer

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.int32())])


def batch(start: int, count: int = 2, part: int = 0) -> pa.Table:
    return pa.table({"id": list(range(start, start + count)), "part": [part] * count}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    created = Table.create(str(tmp_path / "t"), SCHEMA, ["part"], options={"write-only": "true"})
    return created


def schema_doc(table: Table, schema_id: int) -> dict[str, object]:
    return json.loads((Path(table.context.layout.root) / "schema" / f"schema-{schema_id}").read_text())


# --- options -------------------------------------------------------------------------------------------------------
def test_set_and_unset_write_new_schema_versions_like_alter_table(table: Table) -> None:
    table.append(batch(0))
    before = schema_doc(table, 0)
    result = table.set_options({"snapshot.num-retained.min": "3", "snapshot.time-retained": "2 h"})
    assert (result.changed, result.previous.id, result.schema.id) == (True, 0, 1)
    after = schema_doc(table, 1)
    assert after["options"] == {
        "file.format": "parquet",
        "write-only": "true",
        "snapshot.num-retained.min": "3",
        "snapshot.time-retained": "2 h",
    }
    same = ("version", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "comment")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    assert after["id"] == 1 and after["timeMillis"] >= before["timeMillis"]  # type: ignore[operator]
    assert table.options.raw["snapshot.num-retained.min"] == "3"
    assert Table.open(table.location).options.raw["snapshot.time-retained"] == "2 h"
    result = table.unset_options(["snapshot.time-retained"])
    assert result.schema.id == 2 and "snapshot.time-retained" not in schema_doc(table, 2)["options"]  # type: ignore
    # a new snapshot records the schema it was written with; reads of old snapshots are unchanged
    table.append(batch(10))
    assert table.latest_snapshot().schema_id == 2  # type: ignore[union-attr]
    assert sorted(table.to_arrow(1).column("id").to_pylist()) == [0, 1]


def test_noop_changes_write_nothing(table: Table) -> None:
    assert table.set_options({"file.format": "parquet"}).changed is False
    assert table.unset_options(["snapshot.time-retained"]).changed is False
    assert sorted(files_under(Path(table.context.layout.root) / "schema")) == ["schema-0"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"snapshot.num-retained.min": "0"}, "must be >= 1"),
        ({"snapshot.time-retained": "soon"}, "snapshot.time-retained"),
        ({"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "5"}, "must be >= snapshot.num-retained.min"),
        ({"bucket": "4"}, "cannot be changed from or to -1"),
        ({"bucket-key": "id"}, "cannot be changed once the table has snapshots"),
        ({"data-file.path-directory": "data"}, "cannot be changed once the table has snapshots"),
        ({"type": "format-table"}, "cannot be changed"),
        ({"data-file.external-paths": "s3://elsewhere/x"}, "outside"),
    ],
)
def test_bad_option_changes_are_refused_and_write_nothing(table: Table, options: dict[str, str], message: str) -> None:
    table.append(batch(0))
    with pytest.raises(ValidationError, match=message):
        table.set_options(options)
    assert sorted(files_under(Path(table.context.layout.root) / "schema")) == ["schema-0"]


def test_unknown_names_are_refused_unless_allowed(table: Table) -> None:
    with pytest.raises(UnknownOptionError, match="snapshot.num-retained.min"):
        table.set_options({"snapshot.num-retained.mn": "3"})
    assert table.set_options({"my.own-setting": "x"}, allow_unknown_options=True).changed
    table.append(batch(0))
    with pytest.raises(ValidationError, match="cannot be reset"):
        table.unset_options(["bucket"])
    with pytest.raises(ValidationError, match="both set and unset"):
        alter_options(table.context.store, {"write-only": "false"}, ["write-only"])


def _set_option_process(path: str, index: int) -> None:
    table = Table.open(path)
    for round_ in range(5):
        table.set_options({f"tablefmt-test.p{index}": str(round_)}, allow_unknown_options=True)


@pytest.mark.slow
def test_concurrent_schema_changes_lose_nothing(table: Table) -> None:
    """Six processes, five changes each: 30 schema versions, dense ids, and the last one holds every process's
    final value (each change is applied on top of the latest schema, never on a stale copy)."""
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_set_option_process, args=(table.location, i)) for i in range(6)]
    for process in processes:
        process.start()
    join_all(processes, 300)
    assert [p.exitcode for p in processes] == [0] * 6
    ids = table.context.store.schema_ids()
    assert ids == list(range(31))
    final = table.context.store.latest_schema().options
    assert {k: v for k, v in final.items() if k.startswith("tablefmt-test.")} == {
        f"tablefmt-test.p{i}": "4" for i in range(6)
    }


# --- rollback ------------------------------------------------------------------------------------------------------
@pytest.fixture
def tagged(table: Table) -> Table:
    """Snapshots 1..6 (one append each, parts 0/1), tag t2 on 2 and tag t5 on 5."""
    for i in range(6):
        table.append(batch(i * 10, part=i % 2))
    table.create_tag("t2", 2)
    table.create_tag("t5", 5)
    return table


def ids(table: Table, **kwargs: object) -> list[int]:
    return sorted(table.to_arrow(**kwargs).column("id").to_pylist())  # type: ignore[arg-type]


def test_rollback_removes_newer_snapshots_and_tags_and_nothing_else(tagged: Table) -> None:
    root = Path(tagged.context.layout.root)
    before = files_under(root)
    planned = tagged.rollback_to(3, dry_run=True)
    assert files_under(root) == before  # a dry run changes nothing
    done = tagged.rollback_to(3)
    assert (planned.removed_snapshots, planned.removed_tags) == (done.removed_snapshots, done.removed_tags)
    assert (done.target, done.removed_snapshots, done.removed_tags) == (3, (4, 5, 6), ("t5",))
    removed = {"snapshot/snapshot-4", "snapshot/snapshot-5", "snapshot/snapshot-6", "tag/tag-t5"}
    assert files_under(root) == before - removed  # only metadata roots; data files are left to orphan cleanup
    assert (root / "snapshot" / "LATEST").read_text() == "3"
    assert ids(tagged) == [0, 1, 10, 11, 20, 21]
    assert ids(tagged, tag="t2") == [0, 1, 10, 11]
    with pytest.raises(SnapshotNotFoundError):
        tagged.to_arrow(5)
    assert tagged.append(batch(100)).id == 4  # type: ignore[union-attr]  # ids are reused, as in Paimon
    assert ids(tagged) == [0, 1, 10, 11, 20, 21, 100, 101]


def test_orphan_cleanup_after_rollback_deletes_exactly_the_rolled_back_files(tagged: Table) -> None:
    root = Path(tagged.context.layout.root)
    tagged.rollback_to(2)
    age_files(root, 3 * 86_400)
    needed = reachable_files(tagged.context)
    result = tagged.maintenance.remove_orphan_files()
    assert files_under(root) == needed  # every file of a retained snapshot or tag survives, nothing else does
    assert len(result.deleted_paths) > 0
    assert ids(tagged) == ids(tagged, tag="t2") == [0, 1, 10, 11]


def test_rollback_to_a_tag_whose_snapshot_was_expired(tagged: Table) -> None:
    tagged.maintenance.expire_snapshots(retain_min=1, retain_max=1, time_retained=0, limit=100)
    assert [s.id for s in tagged.snapshots()] == [6]
    result = tagged.rollback_to(tag="t2")
    assert (result.target, result.restored_from_tag, result.removed_snapshots, result.removed_tags) == (
        2,
        True,
        (6,),
        ("t5",),
    )
    assert [s.id for s in tagged.snapshots()] == [2]
    assert tagged.context.store.earliest_snapshot_id() == 2
    assert ids(tagged) == [0, 1, 10, 11]
    assert tagged.rollback_to(2).removed_snapshots == ()  # already there: nothing to do
    # a snapshot id that was expired but is tagged rolls back to that tag (Paimon's fallback)
    assert tagged.rollback_to(2, dry_run=True).target_label == "snapshot 2"


def test_rollback_to_time(tagged: Table) -> None:
    third = tagged.snapshot(3)
    assert tagged.rollback_to(as_of=third.time_millis, dry_run=True).target in (3, 4, 5, 6)
    exact = [s for s in tagged.snapshots() if s.time_millis <= third.time_millis][-1]
    assert tagged.rollback_to(as_of=third.time_millis).target == exact.id
    with pytest.raises(SnapshotNotFoundError, match="no snapshot committed at or before"):
        tagged.rollback_to(as_of=1000)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"snapshot_id": 99}, SnapshotNotFoundError, "does not exist"),
        ({"tag": "nope"}, SnapshotNotFoundError, "does not exist"),
        ({}, ValidationError, "exactly one"),
        ({"snapshot_id": 2, "tag": "t2"}, ValidationError, "exactly one"),
    ],
)
def test_missing_targets_change_nothing(tagged: Table, kwargs: dict[str, object], error: type, message: str) -> None:
    root = Path(tagged.context.layout.root)
    before = files_under(root)
    with pytest.raises(error, match=message):
        tagged.rollback_to(**kwargs)  # type: ignore[arg-type]
    assert files_under(root) == before


def test_rollback_with_a_branch(tagged: Table) -> None:
    """A branch created from a tag or snapshot the rollback would remove blocks it (Paimon refuses to delete such
    a tag too); a branch created from an older one stays readable through and after the rollback."""
    root = Path(tagged.context.layout.root)
    branch_from_tag(root, "old", "t2", 2)
    branch_from_tag(root, "new", "t5", 5)
    before = files_under(root)
    with pytest.raises(RollbackRefusedError, match="branch new was created from tag 't5'; delete the branch first"):
        tagged.rollback_to(3)
    assert files_under(root) == before
    shutil.rmtree(root / "branch" / "branch-new")
    branch_from_snapshot(root, "snap", 6)
    with pytest.raises(RollbackRefusedError, match="branch snap was created from snapshot 6"):
        tagged.rollback_to(3)
    shutil.rmtree(root / "branch" / "branch-snap")
    tagged.rollback_to(3)
    branch = tagged.context.store.branch_store("old")
    assert [t.name for t in branch.tags()] == ["t2"]
    age_files(root, 3 * 86_400)
    tagged.maintenance.remove_orphan_files()
    # the branch's tag reads in full after orphan cleanup (its files are shared with the main table)
    old = tagged.context.store.branch_store("old").read_tag("t2").snapshot
    assert len(tagged.plan_files(old)) == 2 and ids(tagged, tag="t2") == [0, 1, 10, 11]
    assert ids(tagged) == [0, 1, 10, 11, 20, 21]


def test_rollback_is_refused_while_a_consumer_has_read_past_the_target(tagged: Table) -> None:
    store = tagged.context.store
    store.write_consumer(Consumer(consumer_id="stream", next_snapshot=6))
    with pytest.raises(RollbackRefusedError, match="consumer 'stream' has read up to snapshot 5"):
        tagged.rollback_to(3)
    store.write_consumer(Consumer(consumer_id="stream", next_snapshot=4))
    assert tagged.rollback_to(3).removed_snapshots == (4, 5, 6)


def test_rollback_is_refused_while_an_expiration_journal_is_pending(tagged: Table) -> None:
    store = tagged.context.store
    path = store.write_expire_journal("pending", {"version": 1})
    with pytest.raises(RollbackRefusedError, match="interrupted expiration"):
        tagged.rollback_to(3)
    store.delete_expire_journal(path)


def test_rows_after_rollback_equal_the_target_before(tagged: Table) -> None:
    expected = rows_of(tagged.to_arrow(4))
    tagged.rollback_to(4)
    assert rows_of(tagged.to_arrow()) == expected
