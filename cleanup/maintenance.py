"""Maintenance that runs after every successful commit, and on demand."""

from __future__ import annotations

import logging

from tableformat.context import TableContext
from tableformat.options import WRITE_ONLY

log = logging.getLogger(__name__)


def run_after_commit(ctx: TableContext) -> None:
    """Run the table's maintenance after a commit unless write-only=true. Errors propagate to the caller,
    which logs them without failing the commit."""
    if ctx.options.require(WRITE_ONLY):
        return
    # Expiration is wired in by the expiration module (issue 3).
