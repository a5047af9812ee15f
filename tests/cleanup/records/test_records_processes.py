"""Writers appending while expire-records and compact run in other processes: every row the writers committed
and that is not expired is in the table exactly once, no expired row survives a completed run, and ``check`` is
ok. Processes start through spawn, wait on a barrier, and every loop is bounded. Times are 2020 (expired) and
2099 (kept) so every process's real clock judges them alike."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.processes import join_all
from support.ttl_tables import TIME_TYPES, ttl_table

from tableformat.table import Table

SPAWN = multiprocessing.get_context("spawn")
KIND = TIME_TYPES[4]  # TIMESTAMP(6)
OLD = dt.datetime(2020, 1, 1)
NEW = dt.datetime(2099, 1, 1)
WRITERS, COMMITS = 2, 20


def _rows(writer: int, commit: int) -> list[tuple[int, dt.datetime | None]]:
    base = writer * 10_000 + commit * 10
    return [(base, OLD), (base + 1, NEW), (base + 2, None), (base + 3, OLD if commit % 3 else NEW)]


def _writer(root: str, writer: int, barrier: Any, out: str) -> None:
    table = Table.open(root)
    barrier.wait()
    committed = []
    for commit in range(COMMITS):
        if commit == COMMITS // 2 and writer == 0:  # a fully expired file for the expirer to drop meanwhile
            old = {"id": [writer * 10_000 + 9_000 + commit], "ts": [OLD], "p": [0]}
            table.append(pa.table(old, schema=table.arrow_schema))
        rows = _rows(writer, commit)
        data = {"id": [r[0] for r in rows], "ts": [r[1] for r in rows], "p": [0] * len(rows)}
        if table.append(pa.table(data, schema=table.arrow_schema)) is not None:
            committed.append(commit)
    Path(out).write_text(json.dumps(committed))


def _maintainer(root: str, operation: str, barrier: Any, stop: Any, out: str) -> None:
    barrier.wait()
    runs = after_stop = 0
    changed = 0
    while after_stop < 50:  # bounded once the writers stopped (they stop within the test's join bound)
        table = Table.open(root)
        result = table.maintenance.expire_records() if operation == "expire" else table.maintenance.compact()
        runs += 1
        changed += len(result.snapshot_ids)
        if stop.is_set():
            after_stop += 1
            if changed:  # until the writers stopped and this process committed something
                break
    Path(out).write_text(json.dumps({"runs": runs, "snapshots": changed}))


def test_writers_expirer_and_compactor_in_processes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    ttl_table(root, KIND, **{"compaction.min.file-num": "2", "compaction.max.file-num": "6"})
    barrier = SPAWN.Barrier(WRITERS + 2)
    stop = SPAWN.Event()
    outs = {name: str(tmp_path / f"{name}.json") for name in ("expire", "compact")}
    writers = [
        SPAWN.Process(target=_writer, args=(str(root), w, barrier, str(tmp_path / f"w{w}.json")), name=f"w{w}")
        for w in range(WRITERS)
    ]
    others = [
        SPAWN.Process(target=_maintainer, args=(str(root), op, barrier, stop, out), name=op)
        for op, out in outs.items()
    ]
    for process in writers + others:
        process.start()
    join_all(writers, 300)
    stop.set()
    join_all(others, 300)
    assert all(p.exitcode == 0 for p in writers + others)

    table = Table.open(str(root))
    final = table.maintenance.expire_records()  # a completed run after the writers stopped
    assert final.skipped_files == ()
    committed = {w: json.loads((tmp_path / f"w{w}.json").read_text()) for w in range(WRITERS)}
    assert all(len(c) == COMMITS for c in committed.values())
    expected = Counter(
        (row_id, ts) for w, commits in committed.items() for c in commits for row_id, ts in _rows(w, c) if ts != OLD
    )
    actual = Counter((r["id"], r["ts"]) for r in table.to_arrow(include_expired=True).to_pylist())
    assert actual == expected  # every kept row exactly once, no expired row left
    stats = {op: json.loads(Path(out).read_text()) for op, out in outs.items()}
    # Both ran against the writers; which of them removes the expired rows is a race (compaction drops them too, and
    # then expire-records finds nothing left), so at least one committed, and each ran.
    assert stats["expire"]["snapshots"] + stats["compact"]["snapshots"] >= 1
    assert stats["expire"]["runs"] >= 1 and stats["compact"]["runs"] >= 1
    assert table.maintenance.check().ok
