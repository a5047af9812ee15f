"""`tablefmt maintain --once WH` beside `tablefmt rollback T --to-snapshot 100`, in two processes: the rollback is
refused with nothing changed (exit 1, one line) or it succeeds and the table reads exactly snapshot 100; maintain
never fails the table for it."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.processes import join_all
from support.rollback_race import WRITE_ONLY_RETENTION, one_row_history

from tableformat.cli.main import cli
from tableformat.table import Table

HISTORY = 150
TARGET = 100


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-race") / "t"
    one_row_history(str(root), HISTORY, {**WRITE_ONLY_RETENTION, "snapshot.expire.limit": "1000"})
    return root


def _command(args: list[str], go: Any, results: Any, delay_s: float) -> None:
    runner = CliRunner()
    go.wait(60)
    start = time.monotonic()
    while time.monotonic() - start < delay_s:  # the race's offset, not a synchronisation
        pass
    result = runner.invoke(cli, args)
    results.put((args[0], result.exit_code, result.stdout, result.stderr))


@pytest.mark.parametrize("race", range(6))  # rollback first, refused while expiring, target already expired
@pytest.mark.slow
def test_maintain_beside_a_rollback_in_two_processes(template: Path, tmp_path: Path, race: int) -> None:
    table = tmp_path / "wh" / "db.db" / "t"
    shutil.copytree(template, table)
    context = multiprocessing.get_context("spawn")
    go, results = context.Barrier(2), context.Queue()
    commands = [
        (["maintain", "--once", str(tmp_path / "wh"), "--json"], 0.0),
        (["rollback", str(table), "--to-snapshot", str(TARGET), "--json"], race * 0.02),
    ]
    processes = [
        context.Process(target=_command, args=(args, go, results, delay), name=args[0]) for args, delay in commands
    ]
    for process in processes:
        process.start()
    join_all(processes, 180)
    done = {name: (code, out, err) for name, code, out, err in (results.get(timeout=10) for _ in processes)}
    maintain_code, maintain_out, _ = done["maintain"]
    assert maintain_code == 0, done["maintain"]
    assert json.loads(maintain_out.splitlines()[0])["ok"] is True
    rollback_code, _, rollback_err = done["rollback"]
    reopened = Table.open(str(table))
    latest = reopened.latest_snapshot()
    ids = sorted(reopened.to_arrow().column("id").to_pylist())
    if rollback_code == 0:
        assert (latest.id if latest else None, ids) == (TARGET, list(range(TARGET)))
    else:
        assert rollback_code == 1 and rollback_err.count("\n") == 1 and rollback_err.startswith("error: "), done
        assert (latest.id if latest else None, ids) == (HISTORY, list(range(HISTORY)))
    assert reopened.maintenance.check().ok
