"""A bounded soak: one writer appending, one expirer at retain 1 / 0 s, one orphan cleaner at 1 h, all at once.

The race it guards against: a cleaner that reads the snapshots present, loses them and their manifest lists to the
expirer, never reads the newer snapshot that still references the table's first (old, live) data file, and then
deletes that file. This test runs the three loops in separate processes for SOAK_S seconds (the writer stops on time or
after MAX_COMMITS) and then requires: every committed row readable exactly once, the old live data files still there,
no deleted file reachable, and ``check`` ok.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.processes import join_all
from support.tables import DAY_S, age_files, files_under, reachable_files, row_counts

from tableformat.cleanup.check import check_table
from tableformat.table import Table

from .kit import SCHEMA, batch

SPAWN = multiprocessing.get_context("spawn")
SOAK_S = 30.0
MAX_COMMITS = 5_000
JOIN_TIMEOUT_S = 120
AGGRESSIVE = {"retain_min": 1, "retain_max": 1, "time_retained": 0}
FIRST = [(i, f"p{i % 2}") for i in range(4)]


def _writer(root: str, barrier: Any, stop: Any, out: str) -> None:
    table = Table.open(root)
    barrier.wait(timeout=120)
    deadline = time.monotonic() + SOAK_S
    committed, errors = [], []
    for n in range(MAX_COMMITS):
        if time.monotonic() > deadline:
            break
        try:
            table.append(batch([(1_000 + n, f"p{n % 2}")]))
            committed.append(1_000 + n)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    stop.set()
    Path(out).write_text(json.dumps({"committed": committed, "errors": errors}))


def _expirer(root: str, barrier: Any, stop: Any, out: str) -> None:
    from support.operations import expire_snapshots

    ctx = Table.open(root).context
    barrier.wait(timeout=120)
    runs, expired, errors = 0, 0, []
    while not stop.is_set() and runs < 100_000:
        try:
            expired += len(expire_snapshots(ctx, **AGGRESSIVE).expired_snapshot_ids)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
    Path(out).write_text(json.dumps({"runs": runs, "expired": expired, "errors": errors}))


def _cleaner(root: str, barrier: Any, stop: Any, out: str) -> None:
    from support.operations import remove_orphan_files

    ctx = Table.open(root).context
    barrier.wait(timeout=120)
    runs, ok, deleted, errors = 0, 0, [], []
    while not stop.is_set() and runs < 100_000:
        try:
            result = remove_orphan_files(ctx, older_than=timedelta(hours=1))
            deleted += list(result.deleted_paths)
            errors += list(result.failed)
            ok += 1
        except Exception as exc:  # "kept changing" is allowed under this load; anything else is reported
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
    Path(out).write_text(json.dumps({"runs": runs, "ok": ok, "deleted": deleted, "errors": errors}))


@pytest.mark.slow
def test_writer_aggressive_expiration_and_orphan_cleanup_at_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(batch(FIRST))
    age_files(root, 3 * DAY_S)  # the first data files and manifests: three days old, live to the end
    old_live = {p for p in files_under(root) if p.endswith(".parquet")}  # manifests get merged away meanwhile
    barrier, stop = SPAWN.Barrier(3), SPAWN.Event()
    out = {name: str(tmp_path / f"{name}.json") for name in ("writer", "expirer", "cleaner")}
    processes = [
        SPAWN.Process(target=_writer, args=(str(root), barrier, stop, out["writer"]), name="writer"),
        SPAWN.Process(target=_expirer, args=(str(root), barrier, stop, out["expirer"]), name="expirer"),
        SPAWN.Process(target=_cleaner, args=(str(root), barrier, stop, out["cleaner"]), name="cleaner"),
    ]
    for process in processes:
        process.start()
    join_all(processes, JOIN_TIMEOUT_S + SOAK_S)
    assert [p.exitcode for p in processes] == [0, 0, 0], [p.exitcode for p in processes]
    writer, expirer, cleaner = (json.loads(Path(out[n]).read_text()) for n in ("writer", "expirer", "cleaner"))

    assert writer["errors"] == [] and len(writer["committed"]) >= 20, writer
    assert expirer["errors"] == [] and expirer["expired"] > 0, expirer
    unexpected = [e for e in cleaner["errors"] if "kept changing" not in e]
    assert unexpected == [] and cleaner["ok"] >= 5, cleaner
    final = Table.open(str(root))
    expected = Counter(FIRST) + Counter((i, f"p{(i - 1_000) % 2}") for i in writer["committed"])
    assert row_counts(final.to_arrow()) == expected
    assert old_live <= files_under(root), f"live files deleted: {sorted(old_live - files_under(root))}"
    reachable = reachable_files(final.context)
    assert not reachable & set(cleaner["deleted"]), sorted(reachable & set(cleaner["deleted"]))
    report = check_table(final.context)
    assert report.ok, report.to_json()
