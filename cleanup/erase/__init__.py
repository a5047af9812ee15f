"""Erasure by filter ("right to be forgotten") on append tables: the live files holding matching rows are rewritten
without them by the shared rewriter (:mod:`..rewrite`), one guarded snapshot per batch; ``purge`` then expires every
older snapshot through snapshot expiration (:mod:`..snapshots`) so that the old files are deleted at once unless a
tag, a branch or a consumer holds them; :mod:`.verify` scans every Parquet file under the table root and certifies
that no row matches anywhere. See docs/erase.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .execute import COMMIT_USER_PREFIX, execute_erase, planned_result
    from .operation import ERASURE
    from .pins import Pin, holding_roots
    from .plan import EraseConfig, ErasePlan, MatchedFile, plan_erase
    from .predicate import EraseFilter, erase_filter
    from .result import EraseResult
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "COMMIT_USER_PREFIX": ".execute",
            "execute_erase": ".execute",
            "planned_result": ".execute",
            "ERASURE": ".operation",
            "Pin": ".pins",
            "holding_roots": ".pins",
            "EraseConfig": ".plan",
            "ErasePlan": ".plan",
            "MatchedFile": ".plan",
            "plan_erase": ".plan",
            "EraseFilter": ".predicate",
            "erase_filter": ".predicate",
            "EraseResult": ".result",
        },
    )

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
