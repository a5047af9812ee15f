"""The undo window (``maintenance.undo-window``, docs/undo.md): what maintenance takes stays until the window ends,
orphan cleanup leaves it alone, a later run deletes it once due, and ``undo`` gives a run's state back exactly."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.operations import compact, expire_snapshots, remove_orphan_files
from support.partition_tables import fill, partitioned_table
from support.tables import FAR_FUTURE_MS, files_under
from support.warehouses import table_with_commits

from tableformat.audit import AuditQuery, audit_run_files, audit_runs, iso
from tableformat.errors import UndoRefusedError
from tableformat.model.audit import DEFERRED, DELETED, RESTORED
from tableformat.table import Table

DAY_MS = 86_400_000
WINDOW = {"maintenance.undo-window": "1 d", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
EXPIRE_AT = FAR_FUTURE_MS - 30 * DAY_MS
"""Expirations run here: every snapshot and tag is old, and the window (1 d) ends well before FAR_FUTURE_MS."""


def _rows(table: Table, **at: object) -> list[int]:
    return sorted(table.to_arrow(**at)["id"].to_pylist())


def _snapshot_files(root: Path) -> set[str]:
    return {p for p in files_under(root) if p.startswith("snapshot/snapshot-")}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    made = table_with_commits(tmp_path / "t", 5, **WINDOW)
    made.create_tag("t2", 2, time_retained=dt.timedelta(seconds=1))
    return made


def test_expiration_keeps_every_file_but_the_snapshots_and_undo_reads_them_again(table: Table) -> None:
    root = Path(table.location)
    before = {i: _rows(table, snapshot_id=i) for i in range(1, 6)}
    tagged = _rows(table, tag="t2")
    files_before = files_under(root)
    result = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    assert result.expired_snapshot_ids == (1, 2, 3, 4) and result.expired_tags == ("t2",)
    # the snapshot and tag files went (copies saved); every other file stays, held until the window ends
    gone = {f"snapshot/snapshot-{i}" for i in range(1, 5)} | {"tag/tag-t2"}
    table_files = {p for p in files_under(root) if not p.startswith(".tablefmt/undo/")}
    assert files_before - table_files == gone
    assert result.deleted_data_files == 0 and set(result.deleted_paths) == gone
    assert result.deferred_paths
    assert set(result.deferred_paths) <= table_files and result.deferred_bytes == sum(
        (root / p).stat().st_size for p in result.deferred_paths
    )
    assert result.undo_until_ms == EXPIRE_AT + DAY_MS
    assert f"tablefmt undo <table> {result.run_id}" in result.notes[-1]
    held = {p for p in files_under(root) if p.startswith(f".tablefmt/undo/{result.run_id}/saved/")}
    assert held == {f".tablefmt/undo/{result.run_id}/saved/{p}" for p in gone}
    # the ledger: snapshot and tag files deleted, every other file deferred with the window's end
    rows = audit_run_files(table.context.store, result.run_id)
    assert {r.path for r in rows if r.state == DELETED} == gone
    assert {r.path for r in rows if r.state == DEFERRED} == set(result.deferred_paths)
    assert {r.due_ms for r in rows if r.state == DEFERRED} == {EXPIRE_AT + DAY_MS}

    dry = table.maintenance.undo(result.run_id, dry_run=True, now_ms=EXPIRE_AT + 1000)
    assert dry.dry_run and dry.restored_snapshots == (1, 2, 3, 4) and dry.restored_tags == ("t2",)
    assert files_under(root) - table_files == held | {p for p in files_under(root) if "/held-" in p or "/pending-" in p}
    undone = table.maintenance.undo(result.run_id, now_ms=EXPIRE_AT + 1000)
    assert undone.to_json() | {"run_id": None} == dry.to_json() | {"dry_run": False, "run_id": None}
    assert {p for p in files_under(root) if not p.startswith(".tablefmt/")} == {
        p for p in files_before if not p.startswith(".tablefmt/")
    } | {"snapshot/EARLIEST"}
    assert not (root / ".tablefmt" / "undo" / result.run_id).exists()
    assert {i: _rows(table, snapshot_id=i) for i in range(1, 6)} == before
    assert _rows(table, tag="t2") == tagged and table.context.store.earliest_snapshot_id() == 1
    assert table.maintenance.check().ok
    record = next(s.run for s in audit_runs(table.context.store, AuditQuery()) if s.run.run_id == undone.run_id)
    assert record.undoes == result.run_id and record.operation == "undo"
    assert {r.path for r in audit_run_files(table.context.store, undone.run_id) if r.state == RESTORED} == set(
        result.deferred_paths
    )
    with pytest.raises(UndoRefusedError, match=f"it was undone already by run {undone.run_id}"):
        table.maintenance.undo(result.run_id, now_ms=EXPIRE_AT + 2000)


def test_orphan_cleanup_leaves_held_files_alone_until_the_window_ends(table: Table) -> None:
    root = Path(table.location)
    result = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    inside = remove_orphan_files(table.context, now_ms=EXPIRE_AT + DAY_MS - 1)
    assert inside.deleted_paths == () and inside.orphan_files == 0
    assert set(result.deferred_paths) <= files_under(root)
    # once the window is over they are orphans like any other (also when no run purges: the window turned off)
    table.set_options({"maintenance.undo-window": "0 ms"})
    after = remove_orphan_files(table.context, now_ms=EXPIRE_AT + DAY_MS)
    assert set(after.deleted_paths) == set(result.deferred_paths)


def test_a_later_run_deletes_held_files_once_the_window_ends_and_records_it(table: Table) -> None:
    root = Path(table.location)
    first = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    table.append(pa.table({"id": [99]}, schema=table.arrow_schema))
    early = expire_snapshots(table.context, now_ms=EXPIRE_AT + DAY_MS - 1)
    assert set(first.deferred_paths) <= files_under(root)  # not due yet: still held
    assert not any("held file(s)" in note for note in early.notes)
    late = expire_snapshots(table.context, now_ms=EXPIRE_AT + DAY_MS)
    assert not set(first.deferred_paths) & files_under(root)
    assert not (root / ".tablefmt" / "undo" / first.run_id).exists()
    purge = [s.run for s in audit_runs(table.context.store, AuditQuery()) if s.run.operation == "purge-held"]
    assert len(purge) == 1 and purge[0].counts.deleted_files == len(set(first.deferred_paths))
    assert any("held file(s)" in note and first.run_id in note for note in late.notes)
    reasons = {r.reason for r in audit_run_files(table.context.store, purge[0].run_id)}
    assert reasons == {f"undo window of run {first.run_id} ended {_iso(EXPIRE_AT + DAY_MS)}"}
    with pytest.raises(UndoRefusedError, match="its undo window ended at"):
        table.maintenance.undo(first.run_id, now_ms=EXPIRE_AT + DAY_MS + 1)
    assert _rows(table) == [0, 1, 2, 3, 4, 99] and table.maintenance.check().ok


def _iso(ms: int) -> str:
    return str(iso(ms))


def test_undo_after_a_later_expiration_is_refused_until_that_one_is_undone(table: Table) -> None:
    first = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    table.append(pa.table({"id": [5]}, schema=table.arrow_schema))
    second = expire_snapshots(table.context, now_ms=EXPIRE_AT + 1)
    assert second.expired_snapshot_ids == (5,)
    with pytest.raises(UndoRefusedError, match=r"snapshots 5\.\.5 were expired by a later run; undo that run first"):
        table.maintenance.undo(first.run_id, now_ms=EXPIRE_AT + 2)
    table.maintenance.undo(second.run_id, now_ms=EXPIRE_AT + 2)
    table.maintenance.undo(first.run_id, now_ms=EXPIRE_AT + 3)
    assert table.context.store.snapshot_ids() == [1, 2, 3, 4, 5, 6]
    assert [_rows(table, snapshot_id=i) for i in (1, 5, 6)] == [[0], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5]]


def test_undo_of_a_compaction_commits_the_files_it_replaced_back(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 4, **WINDOW, **{"compaction.min.file-num": "2"})
    before_files = _live(table)
    compacted = compact(table.context)
    assert compacted.snapshot_ids and _live(table) != before_files
    now = int(time.time() * 1000)
    expired = expire_snapshots(table.context, time_retained=0, now_ms=now)  # holds the replaced files
    assert set(expired.deferred_paths) >= before_files
    # the compaction's undo puts its files back in a new commit, and releases them from the expiration's window
    undone = table.maintenance.undo(compacted.run_id, now_ms=now + 1)
    assert undone.snapshot_id == 6 and set(undone.restored_files) == before_files
    assert set(undone.removed_files) == set(compacted.written_files) and _live(table) == before_files
    assert _rows(table) == [0, 1, 2, 3]
    purged = expire_snapshots(table.context, time_retained=0, now_ms=now + 2 * DAY_MS)  # that window ends
    assert not set(purged.deleted_paths) & before_files
    assert any("held file(s)" in note for note in purged.notes)
    assert before_files <= files_under(Path(table.location))
    assert _rows(table) == [0, 1, 2, 3] and table.maintenance.check().ok


def _live(table: Table) -> set[str]:
    return set(table.inspect.files()["file_path"].to_pylist())


def test_erasure_never_waits_for_the_window(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 3, **WINDOW)
    result = table.maintenance.run("erase", where="id = 1", purge=True, now_ms=EXPIRE_AT)
    assert result.deferred_paths == () and result.deleted_paths
    assert not (Path(table.location) / ".tablefmt" / "undo").exists()
    with pytest.raises(UndoRefusedError, match="an erasure is never undone"):
        table.maintenance.undo(result.run_id, now_ms=EXPIRE_AT + 1)


def test_an_unknown_run_is_refused_in_one_line(table: Table) -> None:
    with pytest.raises(UndoRefusedError) as caught:
        table.maintenance.undo("20990101T000000.000Z-000000000000")
    assert str(caught.value) == (
        "cannot undo run 20990101T000000.000Z-000000000000: no such run in the audit ledger or the undo window; "
        "nothing was changed"
    )


def test_undo_of_a_rollback_brings_the_newer_snapshots_and_tags_back(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 5, **WINDOW)
    table.create_tag("late", 4)
    before = {i: _rows(table, snapshot_id=i) for i in range(1, 6)}
    rolled = table.rollback_to(snapshot_id=2)
    assert table.context.store.snapshot_ids() == [1, 2]
    # what only snapshots 3-5 used is no orphan while the window lasts (their saved copies are roots)
    now = int(time.time() * 1000)
    kept = remove_orphan_files(table.context, now_ms=now + DAY_MS - 60_000, older_than="1h")
    assert kept.deleted_paths == ()
    run_id = next(s.run.run_id for s in audit_runs(table.context.store, AuditQuery()) if s.run.operation == "rollback")
    undone = table.maintenance.undo(run_id)
    assert undone.restored_snapshots == (3, 4, 5) and undone.restored_tags == ("late",) and rolled.removed_tags
    assert table.context.store.snapshot_ids() == [1, 2, 3, 4, 5] and table.latest_snapshot().id == 5
    assert {i: _rows(table, snapshot_id=i) for i in range(1, 6)} == before and _rows(table, tag="late") == before[4]
    assert table.maintenance.check().ok


def test_undo_of_a_rollback_is_refused_once_a_commit_reused_its_ids(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 4, **WINDOW)
    table.rollback_to(snapshot_id=2)
    table.append(pa.table({"id": [50]}, schema=table.arrow_schema))  # takes id 3 again
    run_id = next(s.run.run_id for s in audit_runs(table.context.store, AuditQuery()) if s.run.operation == "rollback")
    with pytest.raises(UndoRefusedError, match="snapshot/snapshot-3 exists again with other content"):
        table.maintenance.undo(run_id)
    assert _rows(table) == [0, 1, 50]


def test_undo_of_a_partition_drop_commits_its_files_back(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    table = Table.create(str(tmp_path / "p"), schema, partition_keys=["day"], options=WINDOW)
    table.append(pa.table({"id": [1, 2], "day": ["a", "b"]}, schema=schema))
    table.drop_partitions([{"day": "a"}])
    assert _rows(table) == [2]
    run_id = next(s.run for s in audit_runs(table.context.store, AuditQuery()) if s.run.operation == "drop-partition")
    undone = table.maintenance.undo(run_id.run_id)
    assert undone.snapshot_id == 3 and len(undone.restored_files) == 1 and _rows(table) == [1, 2]
    with pytest.raises(UndoRefusedError, match="it was undone already"):
        table.maintenance.undo(run_id.run_id)


def test_a_run_that_deleted_at_once_cannot_be_undone(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 3, **{**WINDOW, "maintenance.undo-window": "0 ms"})
    result = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    with pytest.raises(UndoRefusedError, match=r"it deleted its files at once \(maintenance.undo-window was 0\)"):
        table.maintenance.undo(result.run_id, now_ms=EXPIRE_AT + 1)


def test_orphans_wait_out_the_window_too_and_an_undo_keeps_them(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 2, **WINDOW)
    root = Path(table.location)
    strays = [root / "bucket-0" / f"data-{i}-0.parquet" for i in range(3)]
    for stray in strays:
        stray.write_bytes(b"x" * 10)
    now = int(time.time() * 1000) + 2 * DAY_MS  # the strays are 2 days old by then
    first = remove_orphan_files(table.context, now_ms=now)
    names = sorted(f"bucket-0/{s.name}" for s in strays)
    assert first.deleted_paths == () and sorted(first.deferred_paths) == names and first.deferred_bytes == 30
    again = remove_orphan_files(table.context, now_ms=now + 1)
    assert again.orphan_files == 0 and any(
        "3 unreferenced file(s) are kept by the undo window" in n for n in again.notes
    )
    undone = table.maintenance.undo(first.run_id, now_ms=now + 2)
    assert sorted(undone.restored_files) == names and all(s.exists() for s in strays)
    # given back, they are orphans again: the next cleanup holds them once more, and its window's end deletes them
    held = remove_orphan_files(table.context, now_ms=now + 3)
    assert sorted(held.deferred_paths) == names
    expire_snapshots(table.context, now_ms=now + 3 + DAY_MS)
    assert not any(s.exists() for s in strays)


def test_check_and_describe_count_what_the_window_holds_once(table: Table) -> None:
    result = expire_snapshots(table.context, now_ms=EXPIRE_AT)
    checked = table.maintenance.check(now_ms=EXPIRE_AT + 1)
    assert checked.ok and checked.orphan_files == 0
    assert (checked.held_files, checked.held_bytes) == (len(result.deferred_paths), result.deferred_bytes)
    assert f"held by the undo window: {checked.held_files} file(s)" in "\n".join(checked.summary())
    sizes = table.inspect.describe().sizes
    assert sizes is not None and sizes["held_bytes"] == result.deferred_bytes
    assert sizes["total_bytes"] == sizes["referenced_bytes"] + sizes["orphan_bytes"] + result.deferred_bytes


def test_erase_purge_deletes_held_files_with_erased_rows_and_their_run_cannot_be_undone(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 4, **WINDOW)
    table.overwrite(pa.table({"id": [1, 2, 3]}, schema=table.arrow_schema))  # every earlier file is retired
    expired = expire_snapshots(table.context, now_ms=EXPIRE_AT)  # and held: they hold the rows 0..3
    held_data = {p for p in expired.deferred_paths if p.endswith(".parquet")}
    assert len(held_data) == 4
    assert table.maintenance.verify_erasure("id = 1").matches == 2  # the live file and a held one
    dry = table.maintenance.run("erase", where="id = 1", purge=True, dry_run=True, now_ms=EXPIRE_AT + 1)
    with_one = {p for p in held_data if 1 in pq.read_table(Path(table.location) / p)["id"].to_pylist()}
    assert len(with_one) == 1 and with_one <= set(dry.deleted_paths)
    real = table.maintenance.run("erase", where="id = 1", purge=True, now_ms=EXPIRE_AT + 1)
    assert with_one <= set(real.deleted_paths) and any("the undo window held" in n for n in real.notes)
    assert table.maintenance.verify_erasure("id = 1").certified
    assert held_data - with_one <= files_under(Path(table.location))  # the others stay held
    with pytest.raises(UndoRefusedError, match="snapshots 5..5 were expired by a later run"):  # the purge's
        table.maintenance.undo(expired.run_id, now_ms=EXPIRE_AT + 2)


def test_undo_of_a_partition_expiration_brings_the_partitions_back(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "p", [("dt", pa.date32())], ["dt"], **{"maintenance.undo-window": "7 d"})
    fill(table, [{"dt": dt.date(2020, 1, 1)}, {"dt": dt.date(2020, 1, 2)}, {"dt": dt.date(2099, 1, 1)}])
    before = sorted(table.to_arrow()["id"].to_pylist())
    expired = table.maintenance.expire_partitions(expiration_time="30d")
    assert len(expired.expired_partitions) == 2 and len(_rows(table)) == 2
    undone = table.maintenance.undo(expired.run_id)
    assert undone.snapshot_id == 5 and len(undone.restored_files) == 2
    assert sorted(table.to_arrow()["id"].to_pylist()) == before


def test_a_held_orphan_a_writer_commits_later_is_kept_by_the_purge(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 2, **WINDOW)
    root = Path(table.location)
    late = table.write_files(pa.table({"id": [77]}, schema=table.arrow_schema))  # written, not committed yet
    path = late[0].path[len(str(root)) + 1 :]
    now = int(time.time() * 1000) + 2 * DAY_MS  # the writer is slow: its file is 2 days old by then
    cleaned = remove_orphan_files(table.context, now_ms=now)
    assert path in cleaned.deferred_paths and (root / path).exists()
    table.commit_files(late)  # the writer commits after all
    purged = expire_snapshots(table.context, now_ms=now + 2 * DAY_MS)  # past the window: the purge runs
    assert any("kept 1 held orphan(s) a commit references now" in note for note in purged.notes)
    assert (root / path).exists() and 77 in table.to_arrow()["id"].to_pylist()
    assert not (root / ".tablefmt" / "undo" / cleaned.run_id).exists() and table.maintenance.check().ok
