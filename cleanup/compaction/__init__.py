"""Append-table compaction: small files of a partition and bucket merged into files near the target size by the
rewriter record expiration uses (:mod:`..rewrite`), one guarded COMPACT snapshot per batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .operation import COMMIT_USER_PREFIX, COMPACTION, CompactResult, execute_compaction
    from .plan import SMALL_FILE_RATIO, CompactConfig, CompactPlan, pack, plan_compaction
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "COMMIT_USER_PREFIX": ".operation",
            "COMPACTION": ".operation",
            "CompactResult": ".operation",
            "execute_compaction": ".operation",
            "SMALL_FILE_RATIO": ".plan",
            "CompactConfig": ".plan",
            "CompactPlan": ".plan",
            "pack": ".plan",
            "plan_compaction": ".plan",
        },
    )

__all__ = [
    "COMMIT_USER_PREFIX",
    "COMPACTION",
    "SMALL_FILE_RATIO",
    "CompactConfig",
    "CompactPlan",
    "CompactResult",
    "execute_compaction",
    "pack",
    "plan_compaction",
]
