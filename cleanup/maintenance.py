"""Maintenance that runs after every successful commit, and on demand."""

from __future__ import annotations

import logging

from tableformat.context import TableContext
from tableformat.options import WRITE_ONLY

from .expire import ExpireResult, expire_snapshots

log = logging.getLogger(__name__)


def run_after_commit(ctx: TableContext) -> ExpireResult | None:
    """Expire snapshots per the table's options after a commit, unless write-only=true (then None).

    Errors propagate to the caller (Table._after_commit), which logs them without failing the commit: the snapshot
    is already durable, and an interrupted expiration is finished by the next run through its journal.
    """
    if ctx.options.require(WRITE_ONLY):
        return None
    result = expire_snapshots(ctx)
    if result.expired_snapshots or result.deleted_paths:
        log.info(
            "expired %d snapshot(s) after commit: %d data file(s), %d manifest(s), %d manifest list(s), %d bytes; "
            "earliest snapshot is now %s",
            result.expired_snapshots,
            result.deleted_data_files,
            result.deleted_manifests,
            result.deleted_manifest_lists,
            result.deleted_bytes,
            result.earliest_snapshot,
        )
    return result
