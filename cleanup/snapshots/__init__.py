"""Snapshot expiration: which snapshots, tags and consumers expire, and exactly the files only they used.

``config`` resolves the table's options with per-call overrides; ``plan`` decides everything (reading metadata
only, through ``metadata``); ``journal`` records the plan before anything is deleted; ``execute`` carries it out
in crash-safe order and finishes journals an interrupted run left behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from ..kernel import Progress
    from .config import ExpireConfig
    from .execute import execute_expiration
    from .operation import SNAPSHOT_EXPIRATION, TAG_DELETION
    from .plan import plan_expiration
    from .planned import ExpirePlan, PlannedFile
    from .result import ExpireResult
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "Progress": "..kernel",
            "ExpireConfig": ".config",
            "execute_expiration": ".execute",
            "SNAPSHOT_EXPIRATION": ".operation",
            "TAG_DELETION": ".operation",
            "plan_expiration": ".plan",
            "ExpirePlan": ".planned",
            "PlannedFile": ".planned",
            "ExpireResult": ".result",
        },
    )

__all__ = [
    "SNAPSHOT_EXPIRATION",
    "TAG_DELETION",
    "ExpireConfig",
    "ExpirePlan",
    "ExpireResult",
    "PlannedFile",
    "Progress",
    "execute_expiration",
    "plan_expiration",
]
