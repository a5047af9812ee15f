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


def planned_json(result: Any) -> dict[str, Any]:
    """An operation's ``--json`` document but its requests (docs/cost.md): two dry runs of one plan can read
    differently (the report's share what their reads cached), a dry run estimates what a real run counts."""
    document: dict[str, Any] = result.to_json()
    for key in ("requests", "counted_requests", "estimated_cost_usd"):
        document.pop(key)
    return document
