"""A fault at every write and delete of a snapshot expiration with the undo window on (transient before and after
the call takes effect, and a crash: nothing reaches the store afterwards), then a clean re-run: no retained snapshot
or tag loses a row, every file the window holds is still there, the ledger knows every run, and once the window has
passed a purge and an orphan cleanup leave exactly the files of what is retained. Then the same for an undo of that
expiration: after a fault and a re-run every expired snapshot and tag reads exactly as before the expiration."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.tables import FAR_FUTURE_MS, files_under, id_part_rows, reachable_files, rows_of

from tableformat.context import TableContext
from tableformat.errors import DeleteFailedError, UndoRefusedError
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

VARIANTS = [("before", False), ("after", False), ("before", True)]
"""(mode, sticky): a transient fault before or after the call takes effect, and a crash."""
DAY_MS = 86_400_000
UNDO_DIR = ".tablefmt/undo"

Rows = dict[int, list[tuple[Any, ...]]]


class Base:
    """The table before the expiration, what each snapshot and tag reads, and the clock of the runs."""

    def __init__(self, root: Path, rows: Rows, tags: dict[str, list[tuple[Any, ...]]], now_ms: int) -> None:
        self.root = root
        self.rows = rows
        self.tags = tags
        self.now_ms = now_ms


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Base:
    """Five appends over two partitions, an overwrite of partition 0 (its earlier files leave the table), a tag
    that stays (``keep``, snapshot 2) and one that expires (``short``, snapshot 4): the expiration deletes four
    snapshots and a tag, and the window holds data files, manifests and manifest lists."""
    root = tmp_path_factory.mktemp("undo-sweep") / "t"
    table = Table.create(
        str(root),
        id_part_rows(0, 1).schema,
        ["part"],
        {"write-only": "true", "maintenance.undo-window": "1d", "file-operation.thread-num": "1"},
    )
    for i in range(5):
        table.append(id_part_rows(i * 10, 4, (0, 1)))
    table.overwrite(id_part_rows(100, 2, (0,)), {"part": 0})
    table.create_tag("keep", 2)
    table.create_tag("short", 4, time_retained=dt.timedelta(minutes=1))
    snapshots = table.snapshots()
    rows = {s.id: rows_of(table.to_arrow(snapshot_id=s.id)) for s in snapshots}
    tags = {name: rows_of(table.to_arrow(tag=name)) for name in ("keep", "short")}
    now_ms = max(s.time_millis for s in snapshots) + 3_600_000  # the tag's minute has passed
    return Base(root, rows, tags, now_ms)


def _expire(now_ms: int) -> Callable[[TableContext], Any]:
    def run(ctx: TableContext) -> Any:
        return TableMaintenance(ctx).expire_snapshots(retain_min=1, time_retained=0, parallelism=1, now_ms=now_ms)

    return run


def _undo(run_id: str, now_ms: int) -> Callable[[TableContext], Any]:
    def run(ctx: TableContext) -> Any:
        return TableMaintenance(ctx).undo(run_id, now_ms=now_ms)

    return run


def _points(source: Path, scratch: Path, run: Callable[[TableContext], Any]) -> list[tuple[str, str]]:
    """Every call point of an uninterrupted ``run`` on a copy of ``source``."""
    shutil.copytree(source, scratch)
    counter = FaultyFileIO(Table.open(str(scratch)).context.io)
    run(faulty_context(Table.open(str(scratch)).context, counter))
    shutil.rmtree(scratch)
    return counter.calls


def _faulty_run(root: Path, run: Callable[[TableContext], Any], point: int, mode: str, sticky: bool) -> None:
    ctx = Table.open(str(root)).context
    faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
    try:
        run(faulty_context(ctx, faulty))
    except Exception as exc:  # the fault itself, or the error it became
        chain = (exc, exc.__cause__, exc.__context__)
        assert any(isinstance(e, InjectedFault) for e in chain), repr(exc)
    assert faulty.fired is not None or point > faulty.count, "the fault never fired"


def _table_files(root: Path) -> set[str]:
    """The table's files, without claims a crashed run left behind (they count no more)."""
    return {p for p in files_under(root) if not p.startswith(".tablefmt/claim-")}


def _undo_runs(root: Path) -> set[str]:
    """The runs the undo window has files of."""
    return {rel.split("/")[2] for rel in files_under(root) if rel.startswith(UNDO_DIR + "/")}


def _assert_reads(table: Table, base: Base, snapshots: set[int], tags: set[str]) -> None:
    """``snapshots`` and ``tags`` are exactly what the table has, each reading its rows from before."""
    assert {s.id for s in table.snapshots()} == snapshots
    assert {t.name for t in table.tags()} == tags
    for snapshot_id in sorted(snapshots):
        assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == base.rows[snapshot_id], snapshot_id
    for name in sorted(tags):
        assert rows_of(table.to_arrow(tag=name)) == base.tags[name], name


def _assert_ledger(root: Path, restored: frozenset[str] = frozenset()) -> None:
    """Every record reads, no file is recorded deleted twice or recorded deleted but there (unless an undo wrote
    it back: ``restored``), and every run the window holds files for has a record (completed, or one that says it
    did not finish)."""
    table = Table.open(str(root))
    summaries = table.audit()
    assert {s.run.outcome for s in summaries} <= {"completed", "failed", "crashed", "unfinished"}
    deleted = [f.path for s in summaries for f in table.audit_files(s.run.run_id) if f.state == "deleted"]
    assert len(deleted) == len(set(deleted)), "a file recorded deleted twice"
    there = (set(deleted) & files_under(root)) - restored
    assert not there, f"recorded deleted but still there: {sorted(there)}"
    unknown = _undo_runs(root) - {s.run.run_id for s in summaries}
    assert not unknown, f"runs in the undo window without a record: {sorted(unknown)}"


def _assert_held_present(root: Path) -> None:
    """Every file a held or pending list names is still there (the window keeps what an undo needs)."""
    store = Table.open(str(root)).context.store
    for run in store.held_runs():
        missing = sorted(p for p in (*run.held, *run.pending) if not (root / p).is_file())
        assert not missing, f"run {run.run_id} holds files that are gone: {missing}"


def _assert_nothing_leaked(root: Path) -> None:
    """Far past every window: a purge and orphan cleanup (whose orphans the window holds in turn, purged a window
    later) leave exactly the files the retained snapshots and tags need, and nothing in the undo window."""
    for now_ms in (FAR_FUTURE_MS, FAR_FUTURE_MS + 2 * DAY_MS):
        TableMaintenance(Table.open(str(root)).context).remove_orphan_files(parallelism=1, now_ms=now_ms)
    ctx = Table.open(str(root)).context
    on_disk = _table_files(root)
    needed = reachable_files(ctx)
    assert on_disk == needed, f"extra {sorted(on_disk - needed)}, missing {sorted(needed - on_disk)}"
    assert TableMaintenance(ctx).check(now_ms=FAR_FUTURE_MS + 2 * DAY_MS).ok


def _run_cases(
    points: list[tuple[str, str]], scratch: Path, mode: str, sticky: bool, case: Callable[[Path, int], None]
) -> list[str]:
    failures = []
    for point in range(1, len(points) + 1):
        root = scratch / f"p{point}"
        try:
            case(root, point)
        except (AssertionError, UndoRefusedError) as exc:
            op, path = points[point - 1]
            failures.append(f"point {point} {op} {path.rsplit('/', 1)[-1]} {mode}{' crash' if sticky else ''}: {exc}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return failures


@pytest.mark.parametrize(("mode", "sticky"), VARIANTS, ids=["before", "after", "crash"])
def test_an_expiration_with_the_window_survives_a_fault_at_every_call(
    base: Base, tmp_path: Path, mode: str, sticky: bool
) -> None:
    expire = _expire(base.now_ms)
    reference = tmp_path / "reference"
    shutil.copytree(base.root, reference)
    done = expire(Table.open(str(reference)).context)
    kept = {s.id for s in Table.open(str(reference)).snapshots()}
    assert kept == {6} and len(done.deleted_paths) == 6  # five snapshots and a tag
    held_data = [p for p in done.deferred_paths if p.startswith("part=0/")]
    assert len(held_data) == 3 and len(done.deferred_paths) == 11  # partition 0 of appends 3 to 5, and lists
    points = _points(base.root, tmp_path / "count", expire)
    ops = {op for op, _ in points}
    assert {"write_if_absent", "delete_files"} <= ops and len(points) >= 15

    def case(root: Path, point: int) -> None:
        shutil.copytree(base.root, root)
        _faulty_run(root, expire, point, mode, sticky)
        expire(Table.open(str(root)).context)  # the clean re-run
        _assert_reads(Table.open(str(root)), base, kept, {"keep"})
        _assert_held_present(root)
        _assert_ledger(root)
        _assert_nothing_leaked(root)
        _assert_reads(Table.open(str(root)), base, kept, {"keep"})

    failures = _run_cases(points, tmp_path, mode, sticky, case)
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize(("mode", "sticky"), VARIANTS, ids=["before", "after", "crash"])
def test_an_undo_survives_a_fault_at_every_call(base: Base, tmp_path: Path, mode: str, sticky: bool) -> None:
    expired = tmp_path / "expired"
    shutil.copytree(base.root, expired)
    done = _expire(base.now_ms)(Table.open(str(expired)).context)
    run_id, restored = done.run_id, frozenset(done.deleted_paths)
    undo = _undo(run_id, base.now_ms + 60_000)
    points = _points(expired, tmp_path / "count", undo)
    assert {op for op, _ in points} >= {"write_if_absent", "delete_files"}
    everything = set(base.rows)

    def case(root: Path, point: int) -> None:
        shutil.copytree(expired, root)
        _faulty_run(root, undo, point, mode, sticky)
        try:
            undo(Table.open(str(root)).context)  # the clean re-run
        except UndoRefusedError as exc:  # only once the faulty undo had removed the run's window
            assert run_id not in _undo_runs(root), f"re-run refused while the window is left: {exc}"
        _assert_reads(Table.open(str(root)), base, everything, {"keep", "short"})
        assert run_id not in _undo_runs(root)  # the window of the undone run is gone
        _assert_ledger(root, restored)
        _assert_nothing_leaked(root)
        _assert_reads(Table.open(str(root)), base, everything, {"keep", "short"})

    failures = _run_cases(points, tmp_path, mode, sticky, case)
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(failures[:20])


class HeldListsStay(ForwardingFileIO):
    """Deletes every file of a batch but the held lists, then reports those as failed: what one DeleteObjects
    request does when S3 refuses some of its keys (the order within a batch is the store's)."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.refused: list[str] = []

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        refused = [p for p in paths if p.rsplit("/", 1)[-1].startswith("held-")]
        deleted = self.inner.delete_files([p for p in paths if p not in refused])
        if refused:
            self.refused += refused
            raise DeleteFailedError(f"could not delete {len(refused)} file(s)", deleted, refused)
        return deleted


def test_an_undo_whose_held_list_cannot_be_deleted_keeps_the_restored_files_from_the_purge(
    base: Base, tmp_path: Path
) -> None:
    root = tmp_path / "t"
    shutil.copytree(base.root, root)
    run_id = _expire(base.now_ms)(Table.open(str(root)).context).run_id
    ctx = Table.open(str(root)).context
    stubborn = HeldListsStay(ctx.io)
    undone = _undo(run_id, base.now_ms + 60_000)(faulty_context(ctx, stubborn))
    assert undone.notes and undone.notes[0].startswith("everything is back, but the run's undo window could not")
    assert [p.rsplit("/", 1)[-1] for p in stubborn.refused] == ["held-2"]
    _assert_reads(Table.open(str(root)), base, set(base.rows), {"keep", "short"})  # restored before the failure
    _assert_nothing_leaked(root)  # the purge: the held list is still there, so must be the list that released it
    _assert_reads(Table.open(str(root)), base, set(base.rows), {"keep", "short"})
