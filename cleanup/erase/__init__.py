"""Erasure by filter ("right to be forgotten") on append tables: the live files holding matching rows are rewritten
without them by the shared rewriter (:mod:`..rewrite`), one guarded snapshot per batch; ``purge`` then expires every
older snapshot through snapshot expiration (:mod:`..snapshots`) so that the old files are deleted at once unless a
tag, a branch or a consumer holds them; :mod:`.verify` scans every Parquet file under the table root and certifies
that no row matches anywhere. See docs/erase.md."""

from .execute import COMMIT_USER_PREFIX, execute_erase, planned_result
from .operation import ERASURE
from .pins import Pin, holding_roots
from .plan import EraseConfig, ErasePlan, MatchedFile, plan_erase
from .predicate import EraseFilter, erase_filter
from .result import EraseResult

__all__ = [
    "COMMIT_USER_PREFIX",
    "ERASURE",
    "EraseConfig",
    "EraseFilter",
    "ErasePlan",
    "EraseResult",
    "MatchedFile",
    "Pin",
    "erase_filter",
    "execute_erase",
    "holding_roots",
    "plan_erase",
    "planned_result",
]
