"""Processes, not calls: two ``tablefmt maintain --once`` started together on one warehouse maintain every table
exactly once between them, with no error; and a writer appending meanwhile loses nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
from support.warehouses import SCHEMA, make_warehouse, snapshot_ids

from tableformat.table import Table

LAYOUT = {db: [f"t{i}" for i in range(6)] for db in ("sales", "web", "ops", "hr")}
"""24 tables: enough for two passes started together to overlap on some of them (each pass still checks all)."""


def _maintain(warehouse: Path) -> subprocess.Popen[str]:
    script = Path(sys.executable).with_name("tablefmt")
    return subprocess.Popen(
        [str(script), "maintain", "--once", "--json", "--parallelism", "1", str(warehouse)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_maintainers_started_together_maintain_each_table_exactly_once(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=8)
    first, second = _maintain(tmp_path / "wh"), _maintain(tmp_path / "wh")
    outputs = [p.communicate(timeout=300) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [err for _, err in outputs]
    reports = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    assert sorted(r["table"] for r in reports) == sorted([*tables, *tables])  # both looked at every table
    assert all(r["ok"] and r["error"] is None for r in reports)
    ran = sorted(r["table"] for r in reports if r["operations"])
    assert ran == sorted(tables)  # each table worked on by exactly one of them
    for r in reports:
        if not r["operations"]:
            assert r["skipped"].startswith(("leased by", "nothing due")), r["skipped"]
        else:
            assert r["operations"]["expire"]["expired_snapshot_ids"] == [1, 2, 3, 4, 5, 6]
    assert {name: snapshot_ids(path) for name, path in tables.items()} == {name: [7, 8] for name in tables}


def test_a_writer_appending_during_maintenance_loses_no_row(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=4)
    path = tables["sales.orders"]
    done = threading.Event()
    written: list[int] = []

    def writer() -> None:
        table = Table.open(str(path))
        i = 1000
        while not done.is_set() or i < 1010:
            table.append(pa.table({"id": [i]}, schema=SCHEMA))
            written.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(3):
            process = _maintain(tmp_path / "wh")
            _out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
    finally:
        done.set()
        thread.join(120)
    ids = Table.open(str(path)).to_arrow().column("id").to_pylist()
    assert sorted(ids) == [0, 1, 2, 3, *written]
    check = subprocess.run(
        [str(Path(sys.executable).with_name("tablefmt")), "check", str(path)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
