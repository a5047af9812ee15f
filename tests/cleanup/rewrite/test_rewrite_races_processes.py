"""Rewrites under expiration, in processes: two writers append to a record-TTL table that expires snapshots after every
commit down to one (``snapshot.num-retained.min=1``, ``snapshot.time-retained=1 ms``; after-commit record expiration
too), while a third process runs ``tablefmt compact``, ``tablefmt expire-records`` and ``tablefmt maintain --once``
in a bounded loop. Snapshots the rewrites plan on are expired under them all the time: no command may fail with a
corruption or missing-file message (a rewrite re-plans; one that loses every re-plan says its snapshot was expired
while it was being read), every row the writers committed that is not expired is in the table exactly once, and
``check`` is ok. Processes start through spawn and meet at a barrier; the loop starts once each writer has
committed a few times and the writers stop when it is done (Events), each loop is bounded. Times are 2020
(expired) and 2099 (kept) so every process's real clock agrees."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner
from support.processes import join_all
from support.ttl_tables import TIME_TYPES, ttl_table

from tableformat.cli.main import cli
from tableformat.errors import CommitConflictError
from tableformat.table import Table

SPAWN = multiprocessing.get_context("spawn")
KIND = TIME_TYPES[4]  # TIMESTAMP(6)
OLD = dt.datetime(2020, 1, 1)
NEW = dt.datetime(2099, 1, 1)
WRITERS, MAX_COMMITS, READY_AFTER = 2, 400, 5
COMMANDS = [["compact"], ["expire-records"], ["maintain", "--once"]] * 10
BAD_WORDS = ("corrupt", "missing", "deleted outside")


def _rows(writer: int, commit: int) -> list[tuple[int, dt.datetime | None]]:
    base = writer * 100_000 + commit * 10
    return [(base, OLD), (base + 1, NEW), (base + 2, None)]


def _writer(root: str, writer: int, barrier: Any, ready: Any, done: Any, out: str) -> None:
    table = Table.open(root)
    barrier.wait(timeout=120)
    committed = []
    commit = 0
    while commit < MAX_COMMITS and not done.is_set():  # until the loop is done (bounded either way)
        rows = _rows(writer, commit)
        data = pa.table(
            {"id": [r[0] for r in rows], "ts": [r[1] for r in rows], "p": [0] * len(rows)}, schema=table.arrow_schema
        )
        for _attempt in range(5):  # G2b: an id taken and expired meanwhile fails the commit, which is retried
            try:
                table.append(data)
                committed.append(commit)
                break
            except CommitConflictError:
                continue
        commit += 1
        if commit == READY_AFTER:
            ready.set()
    ready.set()
    Path(out).write_text(json.dumps(committed))


def _looper(root: str, barrier: Any, ready: list[Any], done: Any, out: str) -> None:
    barrier.wait(timeout=120)
    runs = []
    try:
        assert all(event.wait(timeout=120) for event in ready)  # the writers have committed files to rewrite
        for command in COMMANDS:
            result = CliRunner().invoke(cli, [*command, "--json", root])
            runs.append({"command": command[0], "code": result.exit_code, "out": result.stdout, "err": result.stderr})
    finally:
        done.set()
        Path(out).write_text(json.dumps(runs))


def test_rewrites_and_maintain_while_writers_expire_down_to_one_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "t"
    options = {
        "write-only": "false",
        "snapshot.num-retained.min": "1",
        "snapshot.time-retained": "1 ms",
        "compaction.min.file-num": "2",
        "compaction.max.file-num": "4",  # small groups, committed 4 files at a time: a run makes several commits,
        "compaction.commit.max-files": "4",  # each reading files of a plan that ages meanwhile
    }
    ttl_table(root, KIND, **options)
    barrier = SPAWN.Barrier(WRITERS + 1)
    done = SPAWN.Event()
    ready = [SPAWN.Event() for _ in range(WRITERS)]
    outs = [str(tmp_path / f"w{w}.json") for w in range(WRITERS)]
    writers = [
        SPAWN.Process(target=_writer, args=(str(root), w, barrier, ready[w], done, outs[w]), name=f"w{w}")
        for w in range(WRITERS)
    ]
    loop_out = str(tmp_path / "loop.json")
    looper = SPAWN.Process(target=_looper, args=(str(root), barrier, ready, done, loop_out), name="loop")
    for process in [*writers, looper]:
        process.start()
    join_all([looper, *writers], 300)
    assert all(p.exitcode == 0 for p in [*writers, looper])

    runs = json.loads((tmp_path / "loop.json").read_text())
    assert [r["command"] for r in runs] == [c[0] for c in COMMANDS]
    text = [(r["out"] + r["err"]).lower() for r in runs]
    bad = [t for t in text if any(word in t for word in BAD_WORDS)]
    failed = [r for r in runs if r["code"] != 0]
    replans = sum(t.count("re-planned") for t in text)
    print(f"{len(bad)} corruption message(s), {len(failed)}/{len(runs)} failed, {replans} re-plan note(s)")
    failures = [(r["command"], r["code"], r["err"][-300:] or r["out"][-300:]) for r in failed]
    assert bad == [], failures
    # a rewrite that lost every re-plan stops with the typed error (never a maintain pass: it reports a lost race)
    assert all(c != "maintain" and "was expired while it was being read" in e for c, _, e in failures), failures
    reports = [json.loads(r["out"]) for r in runs if r["command"] == "maintain"]
    assert all(report["ok"] and report["error"] is None for report in reports)
    results = [json.loads(r["out"]) for r in runs if r["code"] == 0 and r["command"] != "maintain"]
    assert len(failed) <= len(runs) // 4 and sum(len(r["snapshot_ids"]) for r in results) >= 1

    table = Table.open(str(root))
    final = table.maintenance.expire_records()  # a run with nothing racing it
    assert final.skipped_files == ()
    committed = {w: json.loads(Path(outs[w]).read_text()) for w in range(WRITERS)}
    assert all(len(c) >= 1 for c in committed.values())
    expected = Counter(
        (row_id, ts) for w, commits in committed.items() for c in commits for row_id, ts in _rows(w, c) if ts != OLD
    )
    actual = Counter((r["id"], r["ts"]) for r in table.to_arrow(include_expired=True).to_pylist())
    assert actual == expected  # every kept row exactly once, no expired row left
    assert table.maintenance.check().ok
