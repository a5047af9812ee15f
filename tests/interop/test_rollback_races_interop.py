"""A rollback racing snapshot expiration on a table pypaimon 2.1.0 wrote: at every write and delete of the
expiration, a rollback runs; pypaimon then reads exactly the target (rolled back) or exactly the last state (the
rollback was refused or its target had expired), and appends to the table as usual."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from support.faults import InterleavingFileIO, faulty_context
from support.operations import expire_snapshots
from support.rollback_race import RETENTION, SCHEMA, attempt, one_row

from interop.helpers import Paimon
from tableformat.commit.rollback import rollback
from tableformat.table import Table

SNAPSHOTS = 10
TARGET = 4
OPTIONS = {**RETENTION, "snapshot.expire.limit": "100"}


def test_pypaimon_reads_exactly_the_target_or_the_last_state_after_every_interleaving(pp: Paimon) -> None:
    pp.create_table("template", SCHEMA, ["part"], OPTIONS)
    for i in range(SNAPSHOTS):
        pp.append("template", one_row(i))
    template = Path(pp.path("template"))

    def expire(root: str, at: int | None, action: Any) -> InterleavingFileIO:
        ctx = Table.open(root).context
        io = InterleavingFileIO(ctx.io, at, action)
        expire_snapshots(faulty_context(ctx, io), parallelism=1)
        return io

    counted = Path(pp.path("count"))
    shutil.copytree(template, counted)
    points = expire(str(counted), None, lambda: None).changes
    assert points > 2
    for at in range(1, points + 1):
        name = f"at{at}"
        shutil.copytree(template, pp.path(name))
        outcome: dict[str, str] = {}

        def roll(root: str = pp.path(name), outcome: dict[str, str] = outcome) -> None:
            outcome["rollback"] = attempt(lambda ctx: rollback(ctx.store, snapshot_id=TARGET), Table.open(root).context)

        expire(pp.path(name), at, roll)
        expected = TARGET if outcome["rollback"] == "done" else SNAPSHOTS
        ids = sorted(pp.read(name).column("id").to_pylist())
        assert (pp.latest_id(name), ids) == (expected, list(range(expected))), (at, outcome)
        pp.append(name, one_row(100))
        assert sorted(pp.read(name).column("id").to_pylist()) == [*range(expected), 100], (at, outcome)
        assert Table.open(pp.path(name)).maintenance.check().ok, (at, outcome)
