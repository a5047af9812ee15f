"""Append-table compaction: small files of a partition and bucket merged into files near the target size by the
rewriter record expiration uses (:mod:`..rewrite`), one guarded COMPACT snapshot per batch."""

from .operation import COMMIT_USER_PREFIX, COMPACTION, CompactResult, execute_compaction
from .plan import SMALL_FILE_RATIO, CompactConfig, CompactPlan, pack, plan_compaction

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
