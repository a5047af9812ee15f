"""Processes, not calls: two maintenance processes (expiration and orphan cleanup, several runs each) and a writer
process on one table at once. Every run that deleted something is in the ledger exactly once, with exactly the
files it reported; no file is recorded deleted twice."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from support.tables import DAY_S, age_files, id_part_rows

from tableformat.table import Table

MAINTAINER = textwrap.dedent(
    """
    import datetime as dt, json, sys
    from tableformat.table import Table
    from tableformat.errors import TableBusyError
    table = Table.open(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        for result in (
            table.maintenance.expire_snapshots(retain_min=2, time_retained=0),
            table.maintenance.remove_orphan_files(older_than=dt.timedelta(hours=1)),
        ):
            print(json.dumps({"operation": result.operation, "deleted": list(result.deleted_paths)}), flush=True)
    """
)

WRITER = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from tableformat.table import Table
    table = Table.open(sys.argv[1])
    schema = table.arrow_schema
    for i in range(int(sys.argv[2])):
        table.append(pa.table({"id": [10_000 + i], "part": [i % 2]}, schema=schema))
    """
)


def test_two_maintainers_and_a_writer_record_every_run_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), id_part_rows(0, 1).schema, ["part"], {"write-only": "true"})
    for i in range(10):
        table.append(id_part_rows(i * 10, 4))
    for i in range(3):
        table.write_files(id_part_rows(500 + i * 10, 4))  # uncommitted: orphans once old
    age_files(root, 2 * DAY_S)
    processes = [
        subprocess.Popen([sys.executable, "-c", MAINTAINER, str(root), "4"], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(root), "15"])
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert writer.wait(timeout=300) == 0
    assert [p.returncode for p in processes] == [0, 0]
    reported = [json.loads(line) for out in outputs for line in out.splitlines()]
    deleting = sorted((r["operation"], sorted(r["deleted"])) for r in reported if r["deleted"])
    assert {op for op, _ in deleting} == {"expire", "remove-orphans"}
    reopened = Table.open(str(root))
    recorded = sorted(
        (s.run.operation, sorted(f.path for f in reopened.audit_files(s.run.run_id))) for s in reopened.audit()
    )
    assert recorded == deleting  # each deleting run once, with exactly its files
    paths = [path for _, files in recorded for path in files]
    assert len(paths) == len(set(paths))
    assert all(s.run.outcome == "completed" for s in reopened.audit())
    assert len(reopened.to_arrow()) == 40 + 15
