"""Partition expiration: partitions whose time (from their values, or their newest file) is older than the
expiration time are dropped as mark-delete OVERWRITE snapshots.

``config`` resolves the table's ``partition.*`` options with per-call overrides; ``plan`` gives every live
partition a time or a reason it has none and picks the expired ones, oldest first; ``execute`` commits guarded
drops (only the planned files, never a partition that changed meanwhile); ``operation`` registers it and judges
the after-commit check interval from the latest snapshot. Time extraction itself is
:mod:`tableformat.model.partition_time` (the write path uses it too, for ``partition.timestamp-format.strict``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .config import STRATEGIES, PartitionExpireConfig
    from .execute import COMMIT_USER_PREFIX, LAST_RUN_PROPERTY, PartitionExpireResult, execute_partition_expiration
    from .operation import PARTITION_EXPIRATION, check_due, last_run_ms
    from .plan import PartitionExpirePlan, PlannedPartition, SkippedPartition, plan_partition_expiration
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "STRATEGIES": ".config",
            "PartitionExpireConfig": ".config",
            "COMMIT_USER_PREFIX": ".execute",
            "LAST_RUN_PROPERTY": ".execute",
            "PartitionExpireResult": ".execute",
            "execute_partition_expiration": ".execute",
            "PARTITION_EXPIRATION": ".operation",
            "check_due": ".operation",
            "last_run_ms": ".operation",
            "PartitionExpirePlan": ".plan",
            "PlannedPartition": ".plan",
            "SkippedPartition": ".plan",
            "plan_partition_expiration": ".plan",
        },
    )

__all__ = [
    "COMMIT_USER_PREFIX",
    "LAST_RUN_PROPERTY",
    "PARTITION_EXPIRATION",
    "STRATEGIES",
    "PartitionExpireConfig",
    "PartitionExpirePlan",
    "PartitionExpireResult",
    "PlannedPartition",
    "SkippedPartition",
    "check_due",
    "execute_partition_expiration",
    "last_run_ms",
    "plan_partition_expiration",
]
