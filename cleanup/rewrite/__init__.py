"""The rewriter shared by compaction and record-level TTL: stream live files into new ones, swap them in one
guarded commit per batch (see :mod:`.rewriter`); plan again when snapshot expiration wins a race (:mod:`.races`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .races import MISSING_FILE_ERRORS, REPLANS, plan_on_latest, raise_if_expired, replan_notes, run_replanning
    from .rewriter import BATCH_ROWS, CommitSettings, RewriteOutcome, Rewriter, RewriteUnit, batches
    from .settings import FilePaths, require_rewritable, rewrite_refusal, ttl_at
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "MISSING_FILE_ERRORS": ".races",
            "REPLANS": ".races",
            "plan_on_latest": ".races",
            "raise_if_expired": ".races",
            "replan_notes": ".races",
            "run_replanning": ".races",
            "BATCH_ROWS": ".rewriter",
            "CommitSettings": ".rewriter",
            "RewriteOutcome": ".rewriter",
            "Rewriter": ".rewriter",
            "RewriteUnit": ".rewriter",
            "batches": ".rewriter",
            "FilePaths": ".settings",
            "require_rewritable": ".settings",
            "rewrite_refusal": ".settings",
            "ttl_at": ".settings",
        },
    )

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
