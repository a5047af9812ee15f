"""Orphan cleanup and an undo: files an undo releases are never orphans. An undo that finishes while an orphan
cleanup plans (the cleanup read the references before the undo wrote the expired snapshots back, and reads the undo
window after the undo removed the run's directory), and an undo that crashed after releasing the files (its re-run
writes the snapshots back): in both, files the undo puts back must not be called orphans, or the cleanup's own
window holds them and a later purge deletes files that restored snapshots read. An undo that removes the run's
window between the cleanup's listing of the window and its read of a list found there does not stop the cleanup."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.tables import DAY_S, FAR_FUTURE_MS, age_files, id_part_rows, rows_of

from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

HOUR_MS = 3_600_000


class UndoAfterReferences(ForwardingFileIO):
    """Runs ``action`` once, once the plan has read the roots (a snapshot) and goes on to the undo window: just
    before it lists ``.tablefmt/undo`` (``at="listing"``), or just before it reads the first list it found there
    (``at="list"``: the list is then gone when read)."""

    def __init__(self, inner: FileIO, action: Callable[[], None], at: str = "listing") -> None:
        super().__init__(inner)
        self.action: Callable[[], None] | None = action
        self.at = at
        self.references_read = False

    def _maybe_act(self, at: str) -> None:
        if at == self.at and self.references_read and self.action is not None:
            action, self.action = self.action, None
            action()

    def read_bytes(self, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if name.startswith(("snapshot-", "manifest-")):  # the roots are read: the undo window is read again next
            self.references_read = True
        elif name.startswith(("held-", "pending-")):
            self._maybe_act("list")
        return self.inner.read_bytes(path)

    def list_subtree(self, path: str) -> list[FileInfo]:
        if "/.tablefmt/undo" in path:
            self._maybe_act("listing")
        return self.inner.list_subtree(path)


def _expired_table(root: Path) -> tuple[dict[int, list[tuple[object, ...]]], int, str]:
    """(rows of every snapshot, the clock, the run id) of a table whose snapshots 1-4 an expiration just took."""
    table = Table.create(
        str(root), id_part_rows(0, 1).schema, ["part"], {"write-only": "true", "maintenance.undo-window": "1d"}
    )
    for i in range(4):
        table.append(id_part_rows(i * 10, 4, (0, 1)))
    table.overwrite(id_part_rows(100, 2, (0,)), {"part": 0})
    rows = {s.id: rows_of(table.to_arrow(snapshot_id=s.id)) for s in table.snapshots()}
    age_files(root, 10 * DAY_S)  # old enough for orphan cleanup's default day
    now = max(s.time_millis for s in table.snapshots()) + HOUR_MS
    expired = table.maintenance.expire_snapshots(retain_min=1, time_retained=0, now_ms=now)
    assert len(expired.deleted_paths) == 4 and expired.deferred_paths
    return rows, now, expired.run_id


def _assert_purge_leaves_every_snapshot(root: Path, rows: dict[int, list[tuple[object, ...]]]) -> None:
    for later in (FAR_FUTURE_MS, FAR_FUTURE_MS + 2 * DAY_S * 1000):  # past every window: purges what is held
        TableMaintenance(Table.open(str(root)).context).remove_orphan_files(now_ms=later)
    table = Table.open(str(root))
    assert [s.id for s in table.snapshots()] == sorted(rows)
    for snapshot_id, expected in rows.items():
        assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == expected, snapshot_id
    assert table.maintenance.check().ok


@pytest.mark.parametrize("at", ["listing", "list"], ids=["before-the-listing", "between-listing-and-read"])
def test_files_an_undo_puts_back_while_orphan_cleanup_plans_are_not_orphans(tmp_path: Path, at: str) -> None:
    root = tmp_path / "t"
    rows, now, run_id = _expired_table(root)

    def undo() -> None:
        Table.open(str(root)).maintenance.undo(run_id, now_ms=now + 60_000)

    ctx = Table.open(str(root)).context
    racing = UndoAfterReferences(ctx.io, undo, at)
    cleaned = TableMaintenance(faulty_context(ctx, racing)).remove_orphan_files(parallelism=1)
    assert racing.action is None  # the undo ran between the references and the window
    assert [s.id for s in Table.open(str(root)).snapshots()] == sorted(rows)
    assert cleaned.deferred_paths == () and cleaned.deleted_paths == ()
    _assert_purge_leaves_every_snapshot(root, rows)


def test_files_an_undo_released_before_it_crashed_are_not_orphans(tmp_path: Path) -> None:
    root = tmp_path / "t"
    rows, now, run_id = _expired_table(root)
    ctx = Table.open(str(root)).context
    crashing = FaultyFileIO(ctx.io, 3, "before", sticky=True)  # the claim, the released list, then snapshot-1
    try:
        TableMaintenance(faulty_context(ctx, crashing)).undo(run_id, now_ms=now + 60_000)
    except InjectedFault:
        pass
    assert crashing.fired is not None and crashing.fired.path.endswith("/snapshot/snapshot-1")
    assert [s.id for s in Table.open(str(root)).snapshots()] == [5]

    cleaned = Table.open(str(root)).maintenance.remove_orphan_files(parallelism=1)
    assert cleaned.deferred_paths == () and cleaned.deleted_paths == ()  # released: the undo is not done with them
    Table.open(str(root)).maintenance.undo(run_id, now_ms=now + 120_000)  # the re-run writes the snapshots back
    _assert_purge_leaves_every_snapshot(root, rows)
