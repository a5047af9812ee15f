"""What the rollback race tests share: their tables (one-row snapshots, a retention that expires all but the newest
two at once), how either side ends having changed nothing, and running one side to an outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from tableformat.commit.rollback import RollbackRefusedError
from tableformat.context import TableContext
from tableformat.errors import SnapshotNotFoundError, TableBusyError
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
RETENTION = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms"}
"""Every snapshot but the newest two is expirable as soon as its successor exists."""
WRITE_ONLY_RETENTION = {"write-only": "true", **RETENTION}
"""The same with no after-commit expiration: only the race under test expires."""

REFUSED = (RollbackRefusedError, TableBusyError, SnapshotNotFoundError)
"""How either side ends having changed nothing (a rollback also when an expiration removed its target first)."""


def attempt(run: Callable[[TableContext], Any], ctx: TableContext) -> str:
    """``done``, or ``refused: <why>`` when ``run`` ended having changed nothing."""
    try:
        run(ctx)
    except REFUSED as exc:
        return f"refused: {exc}"
    return "done"


def one_row(i: int) -> pa.Table:
    """Row ``i`` (partition ``i % 2``)."""
    return pa.table({"id": [i], "part": [i % 2]}, schema=SCHEMA)


def one_row_history(location: str, snapshots: int, options: dict[str, str], **storage: Any) -> Table:
    """A table partitioned by ``part`` with ``snapshots`` one-row appends: row i in snapshot i + 1."""
    table = Table.create(location, SCHEMA, ["part"], options=options, **storage)
    for i in range(snapshots):
        table.append(one_row(i))
    return table
