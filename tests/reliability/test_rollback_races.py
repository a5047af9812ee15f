"""A rollback racing maintenance: under every interleaving either the rollback is refused with nothing changed, or
it succeeds and the table then reads exactly the target snapshot. Never zero snapshots, never a snapshot the
rollback kept deleted by an expiration (docs/reliability.md, "Rollback and maintenance never overlap").

The sweeps run one side in this process through a FileIO that stops at its k-th change (a write or a delete) and
runs the other side there, whole, for every k; the multi-process test races real processes.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.faults import InterleavingFileIO, faulty_context
from support.operations import compact, expire_snapshots, remove_orphan_files
from support.processes import join_all
from support.rollback_race import REFUSED, WRITE_ONLY_RETENTION, attempt, one_row, one_row_history
from support.tables import files_under

from tableformat.cleanup.check import check_table
from tableformat.commit.rollback import rollback
from tableformat.context import TableContext
from tableformat.errors import TableBusyError
from tableformat.table import Table

SNAPSHOTS = 12
TARGET = 4


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A write-only table with SNAPSHOTS one-row snapshots (row i in snapshot i + 1), a partition per parity and
    one orphan data file."""
    root = tmp_path_factory.mktemp("rollback-race") / "t"
    table = one_row_history(str(root), SNAPSHOTS, WRITE_ONLY_RETENTION)
    table.write_files(one_row(99))  # never committed: an orphan for orphan cleanup to delete
    return root


def fresh(template: Path, where: Path) -> Path:
    shutil.copytree(template, where)
    return where


def context_with(root: Path, at: int | None, action: Callable[[], None]) -> tuple[TableContext, InterleavingFileIO]:
    ctx = Table.open(str(root)).context
    io = InterleavingFileIO(ctx.io, at, action)
    return faulty_context(ctx, io), io


def assert_consistent(root: Path, rolled_back: bool) -> None:
    """The table reads exactly the target (rolled back) or exactly its newest snapshot (refused), and is whole."""
    table = Table.open(str(root))
    latest = table.latest_snapshot()
    assert latest is not None, f"no snapshot left; files: {sorted(files_under(root))}"
    expected = TARGET if rolled_back else SNAPSHOTS
    if rolled_back:
        assert latest.id == TARGET
    else:  # a compaction may have added one snapshot of the same rows
        assert latest.id >= SNAPSHOTS
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(expected))
    checked = check_table(table.context)
    assert checked.ok, checked.to_json()


# --- one side at every change of the other ---------------------------------------------------------------------
MAINTENANCE: dict[str, Callable[[TableContext], Any]] = {
    "expire": lambda ctx: expire_snapshots(ctx, parallelism=1),
    "expire-retain-1": lambda ctx: expire_snapshots(ctx, retain_min=1, retain_max=1, parallelism=1),
    "remove-orphans": lambda ctx: remove_orphan_files(ctx, force=True, older_than=dt.timedelta(0), parallelism=1),
    "compact": lambda ctx: compact(ctx),
}


def roll_back(ctx: TableContext) -> Any:
    return rollback(ctx.store, snapshot_id=TARGET)


def sweep(template: Path, tmp_path: Path, outer: Callable[[TableContext], Any], inner: Callable[[TableContext], Any],
          rollback_outer: bool) -> None:
    """Run ``outer`` once per change it makes, with ``inner`` run whole just before that change; then the table
    must read exactly the target (the rollback went through) or exactly its last state (it did not)."""
    counting, io = context_with(fresh(template, tmp_path / "count"), None, lambda: None)
    outer(counting)
    assert io.changes > 0
    for at in range(1, io.changes + 2):
        root = fresh(template, tmp_path / f"at-{at}")
        outcome: dict[str, str] = {}

        def run_inner(root: Path = root, outcome: dict[str, str] = outcome) -> None:
            outcome["inner"] = attempt(inner, Table.open(str(root)).context)

        ctx, _ = context_with(root, at, run_inner)
        outcome["outer"] = attempt(outer, ctx)
        if "inner" not in outcome and not rollback_outer:
            run_inner()  # the operation made fewer changes this time: the rollback runs after it
        rolled_back = outcome["outer" if rollback_outer else "inner"] == "done"
        try:
            assert_consistent(root, rolled_back)
        except AssertionError as exc:
            raise AssertionError(f"inner run before change {at} of the outer one: {outcome}: {exc}") from exc


@pytest.mark.parametrize("name", sorted(MAINTENANCE))
@pytest.mark.slow
def test_a_rollback_at_every_change_of_maintenance(template: Path, tmp_path: Path, name: str) -> None:
    sweep(template, tmp_path, MAINTENANCE[name], roll_back, rollback_outer=False)


@pytest.mark.parametrize("name", sorted(MAINTENANCE))
def test_maintenance_at_every_change_of_a_rollback(template: Path, tmp_path: Path, name: str) -> None:
    sweep(template, tmp_path, roll_back, MAINTENANCE[name], rollback_outer=True)


# --- real processes -------------------------------------------------------------------------------------------
LONG_HISTORY = 150
LONG_TARGET = 40
LONG_OPTIONS = {**WRITE_ONLY_RETENTION, "snapshot.expire.limit": "1000"}
RACES = int(os.environ.get("TABLEFMT_ROLLBACK_RACES", "8"))
"""Races the suite runs (TABLEFMT_ROLLBACK_RACES=64 for a longer run by hand)."""


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A write-only table with LONG_HISTORY one-row snapshots, as a user's hourly job leaves it."""
    root = tmp_path_factory.mktemp("rollback-race-long") / "t"
    one_row_history(str(root), LONG_HISTORY, LONG_OPTIONS)
    return root


def _after(go: Any, delay_s: float) -> None:
    """Wait until both processes are ready, then let ``delay_s`` pass (the race's offset, not a synchronisation)."""
    go.wait(60)
    start = time.monotonic()
    while time.monotonic() - start < delay_s:
        pass


def _expire_process(root: str, go: Any, results: Any) -> None:
    table = Table.open(root)
    _after(go, 0)
    try:
        results.put(("expire", len(table.maintenance.expire_snapshots().deleted_paths)))
    except TableBusyError:
        results.put(("expire", "busy"))


def _rollback_process(root: str, go: Any, results: Any, delay_s: float) -> None:
    table = Table.open(root)
    _after(go, delay_s)
    try:
        table.rollback_to(LONG_TARGET)
        results.put(("rollback", "done"))
    except REFUSED:
        results.put(("rollback", "refused"))


@pytest.mark.parametrize("race", range(RACES))
@pytest.mark.slow
def test_rollback_racing_expiration_in_two_processes(long_history: Path, tmp_path: Path, race: int) -> None:
    context = multiprocessing.get_context("spawn")
    root = fresh(long_history, tmp_path / "t")
    go, results = context.Barrier(2), context.Queue()
    delay_s = (race % 16) * 0.004  # the rollback starts 0-60 ms after the expiration
    processes = [
        context.Process(target=_expire_process, args=(str(root), go, results), name="expire"),
        context.Process(target=_rollback_process, args=(str(root), go, results, delay_s), name="rollback"),
    ]
    for process in processes:
        process.start()
    join_all(processes, 120)
    outcome = dict(results.get(timeout=10) for _ in processes)
    assert all(p.exitcode == 0 for p in processes), outcome
    table = Table.open(str(root))
    latest = table.latest_snapshot()
    assert latest is not None, f"no snapshot left after {outcome}"
    rows = sorted(table.to_arrow().column("id").to_pylist())
    if outcome["rollback"] == "done":
        assert (latest.id, rows) == (LONG_TARGET, list(range(LONG_TARGET))), outcome
    else:
        assert (latest.id, rows) == (LONG_HISTORY, list(range(LONG_HISTORY))), outcome
    checked = check_table(table.context)
    assert checked.ok, checked.to_json()
