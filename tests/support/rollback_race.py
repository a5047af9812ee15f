"""What the rollback race tests share: how either side ends having changed nothing, and running one side to an
outcome."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tableformat.commit.rollback import RollbackRefusedError
from tableformat.context import TableContext
from tableformat.errors import SnapshotNotFoundError, TableBusyError

REFUSED = (RollbackRefusedError, TableBusyError, SnapshotNotFoundError)
"""How either side ends having changed nothing (a rollback also when an expiration removed its target first)."""


def attempt(run: Callable[[TableContext], Any], ctx: TableContext) -> str:
    """``done``, or ``refused: <why>`` when ``run`` ended having changed nothing."""
    try:
        run(ctx)
    except REFUSED as exc:
        return f"refused: {exc}"
    return "done"
