"""The rewriter shared by compaction and record-level TTL: stream live files into new ones, swap them in one
guarded commit per batch (see :mod:`.rewriter`)."""

from .rewriter import BATCH_ROWS, CommitSettings, RewriteOutcome, Rewriter, RewriteUnit, batches
from .settings import FilePaths, check_overrides, require_rewritable, ttl_at

__all__ = [
    "BATCH_ROWS",
    "CommitSettings",
    "FilePaths",
    "RewriteOutcome",
    "RewriteUnit",
    "Rewriter",
    "batches",
    "check_overrides",
    "require_rewritable",
    "ttl_at",
]
