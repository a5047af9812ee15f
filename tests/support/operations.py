"""Maintenance of a table context in one call, for tests that hold a TableContext (a wrapped FileIO, a fixed
clock) rather than a Table: each is ``TableMaintenance(ctx).<operation>(**overrides)``, the product's one front
door."""

from __future__ import annotations

from typing import Any

from tableformat.cleanup.check import CheckResult
from tableformat.cleanup.compaction import CompactResult
from tableformat.cleanup.orphans import OrphanResult
from tableformat.cleanup.partitions import PartitionExpireResult
from tableformat.cleanup.records import RecordExpireResult
from tableformat.cleanup.snapshots import ExpireResult
from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance


def expire_snapshots(ctx: TableContext, **overrides: Any) -> ExpireResult:
    return TableMaintenance(ctx).expire_snapshots(**overrides)


def remove_orphan_files(ctx: TableContext, **overrides: Any) -> OrphanResult:
    return TableMaintenance(ctx).remove_orphan_files(**overrides)


def expire_partitions(ctx: TableContext, **overrides: Any) -> PartitionExpireResult:
    return TableMaintenance(ctx).expire_partitions(**overrides)


def expire_records(ctx: TableContext, **overrides: Any) -> RecordExpireResult:
    return TableMaintenance(ctx).expire_records(**overrides)


def compact(ctx: TableContext, **overrides: Any) -> CompactResult:
    return TableMaintenance(ctx).compact(**overrides)


def check(ctx: TableContext, **overrides: Any) -> CheckResult:
    return TableMaintenance(ctx).check(**overrides)
