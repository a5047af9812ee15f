"""Snapshot expiration: which snapshots, tags and consumers expire, and exactly the files only they used.

``config`` resolves the table's options with per-call overrides; ``plan`` decides everything (reading metadata
only, through ``metadata``); ``journal`` records the plan before anything is deleted; ``execute`` carries it out
in crash-safe order and finishes journals an interrupted run left behind.
"""

from ..kernel import Progress
from .config import Duration, ExpireConfig
from .execute import ExpireResult, execute_expiration
from .operation import SNAPSHOT_EXPIRATION, expire_snapshots
from .plan import plan_expiration
from .planned import ExpirePlan, PlannedFile

__all__ = [
    "SNAPSHOT_EXPIRATION",
    "Duration",
    "ExpireConfig",
    "ExpirePlan",
    "ExpireResult",
    "PlannedFile",
    "Progress",
    "execute_expiration",
    "expire_snapshots",
    "plan_expiration",
]
