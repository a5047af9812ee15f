"""The one way to discard what an attempt wrote and no snapshot references: data files of a failed, empty or
already-committed write (the Table, the rewriter, Spark's writer) and metadata files of a commit attempt that lost
its race (the committer). A failure to delete is logged, never raised: the files are orphans then, and orphan
cleanup reclaims them; the caller's own outcome (its error, or its result) stands."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tableformat.io.fileio import FileIO

log = logging.getLogger(__name__)


def discard_uncommitted(file_io: FileIO, paths: Sequence[str], what: str) -> list[str]:
    """Delete ``paths`` (``what``: e.g. 'data file(s) of a failed append', for the log); the paths deleted."""
    if not paths:
        return []
    try:
        deleted = file_io.delete_files(list(paths))
    except Exception as exc:  # never in place of the caller's outcome
        log.warning("could not remove %d unreferenced %s (left to orphan cleanup): %s", len(paths), what, exc)
        return []
    log.info("removed %d unreferenced %s", len(deleted), what)
    return list(deleted)
