"""The rewriter shared by compaction and record-level TTL: stream live files into new ones, swap them in one
guarded commit per batch (see :mod:`.rewriter`); plan again when snapshot expiration wins a race (:mod:`.races`)."""

from .races import MISSING_FILE_ERRORS, REPLANS, plan_on_latest, raise_if_expired, replan_notes, run_replanning
from .rewriter import BATCH_ROWS, CommitSettings, RewriteOutcome, Rewriter, RewriteUnit, batches
from .settings import FilePaths, require_rewritable, rewrite_refusal, ttl_at

__all__ = [
    "BATCH_ROWS",
    "MISSING_FILE_ERRORS",
    "REPLANS",
    "CommitSettings",
    "FilePaths",
    "RewriteOutcome",
    "RewriteUnit",
    "Rewriter",
    "batches",
    "plan_on_latest",
    "raise_if_expired",
    "replan_notes",
    "require_rewritable",
    "rewrite_refusal",
    "run_replanning",
    "ttl_at",
]
