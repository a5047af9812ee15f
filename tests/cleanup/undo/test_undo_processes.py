"""Processes, not calls, with the undo window on: two writers committing (appends, and overwrites that take files
out of the table), an expirer holding what it takes (every other run judged from two days ahead, so that it first
purges the windows that ended), an orphan cleaner, and an undoer taking back the latest expiration whenever it can.
The history before the processes start is ten days old, so the orphan cleaner judges everything an expiration takes
from it, while the writers' new files are too young for it. Afterwards every snapshot reads exactly the rows its
writers committed, no file the window holds (for a later purge to delete) is in the table, every held file is
there unless a purge deleted it (a file an orphan cleanup found while a purge deleted it), and ``check`` finds
every referenced file.

Processes start through spawn and wait on a barrier; every loop is bounded. Each writer owns one partition, so the
rows of any snapshot follow from the writers' own logs (snapshot id -> their partition's rows then)."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.processes import join_all
from support.tables import ID_PART_SCHEMA, age_files, reachable_files, rows_of

from tableformat.errors import TableBusyError, UndoRefusedError
from tableformat.table import Table

pytestmark = pytest.mark.slow

SPAWN = multiprocessing.get_context("spawn")
WRITERS, HISTORY, COMMITS = 2, 8, 16
DAY_S = 86_400
DAY_MS = 86_400_000
AFTER_STOP = 3
"""Runs each maintenance process still makes once the writers are done (bounded)."""


def _commit(table: Table, writer: int, commit: int, mine: list[list[int]]) -> tuple[int, list[list[int]]]:
    """Commit ``commit`` of ``writer`` to its partition (every fourth an overwrite of it); (snapshot id, its rows)."""
    ids = [writer * 10_000 + commit * 10 + k for k in range(3)]
    data = pa.table({"id": ids, "part": [writer] * len(ids)}, schema=ID_PART_SCHEMA)
    if commit % 4 == 3:
        snapshot = table.overwrite(data, {"part": writer})
        mine = [[i, writer] for i in ids]
    else:
        snapshot = table.append(data)
        mine = sorted(mine + [[i, writer] for i in ids])
    assert snapshot is not None
    return snapshot.id, mine


def _writer(root: str, writer: int, log: list[list[Any]], barrier: Any, out: str) -> None:
    """Goes on from ``log`` (its commits so far); logs (snapshot id, its partition's rows) of every commit."""
    table = Table.open(root)
    barrier.wait()
    mine = log[-1][1] if log else []
    for commit in range(len(log), len(log) + COMMITS):
        snapshot_id, mine = _commit(table, writer, commit, mine)
        log.append([snapshot_id, mine])
    Path(out).write_text(json.dumps(log))


def _expirer(root: str, barrier: Any, stop: Any, out: str) -> None:
    barrier.wait()
    runs, deferred, busy, after = 0, 0, 0, 0
    while after < AFTER_STOP:
        after += stop.is_set()
        now = int(time.time() * 1000) + (2 * DAY_MS if runs % 2 else 0)
        try:
            result = Table.open(root).maintenance.expire_snapshots(retain_min=2, time_retained=0, now_ms=now)
        except TableBusyError:
            busy += 1
            continue
        runs += 1
        deferred += len(result.deferred_paths)
    Path(out).write_text(json.dumps({"runs": runs, "deferred": deferred, "busy": busy}))


def _orphan_cleaner(root: str, barrier: Any, stop: Any, out: str) -> None:
    barrier.wait()
    runs, found, busy, after = 0, [], 0, 0
    while after < AFTER_STOP:
        after += stop.is_set()
        try:
            result = Table.open(root).maintenance.remove_orphan_files()  # older than a day: the history only
        except TableBusyError:
            busy += 1
            continue
        runs += 1
        found += [*result.deleted_paths, *result.deferred_paths]
    Path(out).write_text(json.dumps({"runs": runs, "found": found, "busy": busy}))


def _latest_expiration(table: Table) -> str | None:
    runs = [s.run for s in table.audit() if s.run.operation == "expire" and s.run.outcome == "completed"]
    return max(runs, key=lambda run: (run.started_ms, run.run_id)).run_id if runs else None


def _undoer(root: str, barrier: Any, stop: Any, out: str) -> None:
    barrier.wait()
    undone: list[list[Any]] = []
    refused, busy, after = 0, 0, 0
    tried: set[str] = set()
    while after < 20 * AFTER_STOP and not (stop.is_set() and undone):
        after += stop.is_set()
        table = Table.open(root)
        run_id = _latest_expiration(table)
        if run_id is None or run_id in tried:
            continue
        try:
            result = table.maintenance.undo(run_id)
        except UndoRefusedError:
            refused += 1
            tried.add(run_id)
            continue
        except TableBusyError:
            busy += 1
            continue
        tried.add(run_id)
        undone.append([run_id, list(result.restored_snapshots)])
    Path(out).write_text(json.dumps({"undone": undone, "refused": refused, "busy": busy}))


def _expected_rows(logs: list[list[list[Any]]], snapshot_id: int) -> list[tuple[Any, ...]]:
    """The rows of ``snapshot_id``: each writer's partition as of its last commit at or before it."""
    found: list[tuple[Any, ...]] = []
    for log in logs:
        before = [rows for committed, rows in log if committed <= snapshot_id]
        found += [tuple(row) for row in (before[-1] if before else [])]
    return sorted(found)


def test_writers_expirer_orphan_cleaner_and_undoer_in_processes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), ID_PART_SCHEMA, ["part"], {"write-only": "true", "maintenance.undo-window": "1d"})
    history: list[list[list[Any]]] = [[] for _ in range(WRITERS)]
    for commit in range(HISTORY):
        for writer, log in enumerate(history):
            log.append(list(_commit(table, writer, commit, log[-1][1] if log else [])))
    age_files(root, 10 * DAY_S)
    barrier = SPAWN.Barrier(WRITERS + 3)
    stop = SPAWN.Event()
    writers = [
        SPAWN.Process(
            target=_writer, args=(str(root), w, history[w], barrier, str(tmp_path / f"w{w}.json")), name=f"w{w}"
        )
        for w in range(WRITERS)
    ]
    outs = {name: str(tmp_path / f"{name}.json") for name in ("expire", "orphans", "undo")}
    others = [
        SPAWN.Process(target=target, args=(str(root), barrier, stop, outs[name]), name=name)
        for name, target in (("expire", _expirer), ("orphans", _orphan_cleaner), ("undo", _undoer))
    ]
    for process in writers + others:
        process.start()
    join_all(writers, 300)
    stop.set()
    join_all(others, 300)
    assert [p.exitcode for p in writers + others] == [0] * (WRITERS + 3)

    logs = [json.loads((tmp_path / f"w{w}.json").read_text()) for w in range(WRITERS)]
    stats = {name: json.loads(Path(out).read_text()) for name, out in outs.items()}
    total = WRITERS * (HISTORY + COMMITS)
    assert sorted(i for log in logs for i, _ in log) == list(range(1, total + 1))
    assert stats["expire"]["deferred"] > 0 and stats["orphans"]["runs"] > 0, stats
    assert stats["undo"]["undone"] or stats["undo"]["refused"], stats

    table = Table.open(str(root))
    live = [s.id for s in table.snapshots()]
    assert live and live[-1] == total and live == list(range(live[0], live[-1] + 1))
    for snapshot_id in live:
        assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == _expected_rows(logs, snapshot_id), snapshot_id
    live_files = reachable_files(table.context)
    purged = {f.path for s in table.audit() if s.run.operation == "purge-held" for f in table.audit_files(s.run.run_id)}
    for held in table.context.store.held_runs():
        assert not live_files & set(held.held), f"run {held.run_id} holds live files: {live_files & set(held.held)}"
        missing = {path for path in held.held if not (root / path).is_file()}
        assert missing <= purged, f"run {held.run_id} holds files that are gone: {sorted(missing - purged)}"
    assert not live_files & set(stats["orphans"]["found"])  # what orphan cleanup took is not in the table
    assert table.maintenance.check().ok
