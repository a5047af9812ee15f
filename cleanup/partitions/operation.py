"""Partition expiration as a registered operation (Paimon's ``partition.expiration-*`` options, run after commits
before snapshot expiration, as Paimon orders them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.durations import format_duration_ms
from tableformat.errors import ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.options import PARTITION_EXPIRATION_MAX_NUM, PARTITION_EXPIRATION_TIME

from ..kernel import Cadence, Operation, Parameter, Progress
from .config import STRATEGIES, PartitionExpireConfig, check_interval_ms

if TYPE_CHECKING:
    from . import execute as execution
    from . import plan as planning
    from .execute import PartitionExpireResult
    from .plan import PartitionExpirePlan
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    execution = lazy_module("tableformat.cleanup.partitions.execute")
    planning = lazy_module("tableformat.cleanup.partitions.plan")


def last_run_ms(ctx: TableContext) -> int | None:
    """The time of the latest run that dropped partitions, from the latest snapshot's properties (one read); None
    when no tablefmt commit carries it (never run, or the latest snapshot was written by another engine)."""
    latest = ctx.store.latest_snapshot()
    text = (latest.properties or {}).get(execution.LAST_RUN_PROPERTY) if latest is not None else None
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def check_due(ctx: TableContext, now_ms: int) -> bool:
    """Whether ``partition.expiration-check-interval`` has passed since the last run that dropped partitions."""
    interval = check_interval_ms(ctx.options)
    if interval == 0:
        return True
    last = last_run_ms(ctx)
    return last is None or now_ms - last >= interval


class PartitionExpiration(Operation[PartitionExpireConfig, "PartitionExpirePlan", "PartitionExpireResult"]):
    """Drop partitions whose time is older than the expiration time (mark-delete OVERWRITE snapshots)."""

    name = "expire-partitions"
    summary = "drop partitions older than the expiration time (files are freed later by snapshot expiration)"
    after_commit = True
    pauses_gc = True
    parameters = (
        Parameter(
            "expiration_time",
            "duration",
            "drop partitions older than this (partition.expiration-time)",
            PARTITION_EXPIRATION_TIME,
        ),
        Parameter("strategy", "choice", "how a partition's time is found", choices=STRATEGIES),
        Parameter("timestamp_formatter", "text", "Java DateTimeFormatter pattern, e.g. yyyyMMdd"),
        Parameter("timestamp_pattern", "text", "how values form a timestamp, e.g. '$dt $hour:00:00'"),
        Parameter("max_num", "int", "at most N partitions per run", PARTITION_EXPIRATION_MAX_NUM),
    )

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> PartitionExpireConfig:
        return PartitionExpireConfig.resolve(ctx, overrides)

    limit_option = "partition.expiration-max-num"

    def wanted(self, ctx: TableContext) -> bool:
        """Only when ``partition.expiration-time`` is set (an invalid value counts as set: running reports it)."""
        try:
            return ctx.options.get(PARTITION_EXPIRATION_TIME) is not None
        except ValidationError:
            return True

    def cadence(self, ctx: TableContext) -> Cadence:
        """Every ``partition.expiration-check-interval`` (at least a minute); partitions age with time, not commits."""
        try:
            interval = check_interval_ms(ctx.options)
        except ValidationError:
            interval = 3_600_000
        return Cadence(interval_ms=max(interval, 60_000), on_change=False)

    def due_after_commit(self, ctx: TableContext, now_ms: int) -> bool:
        """Once ``partition.expiration-check-interval`` has passed since the last run that dropped partitions."""
        return check_due(ctx, now_ms)

    def plan(self, ctx: TableContext, config: PartitionExpireConfig, now_ms: int) -> PartitionExpirePlan:
        return planning.plan_partition_expiration(ctx, config, now_ms)

    def changes(self, plan: PartitionExpirePlan) -> bool:
        return bool(plan.batches)

    def audit_reasons(
        self, ctx: TableContext, plan: PartitionExpirePlan, config: PartitionExpireConfig
    ) -> Callable[[str], str]:
        """Which partition, its time, and the cutoff it is before."""
        rule = (
            f"before the cutoff {plan.cutoff.isoformat(sep=' ')} (partition.expiration-time="
            f"{format_duration_ms(config.expiration_ms)}, partition.expiration-strategy={config.strategy})"
        )
        paths = DataPaths(ctx.schema, ctx.store.partition_codec(ctx.schema))
        by_dir: dict[str, str] = {}
        for planned in plan.expired:
            text = ",".join(f"{k}={v}" for k, v in planned.display.items())
            why = f"partition {text} expired: its time {planned.time.isoformat(sep=' ')} is {rule}"
            by_dir[paths.partition_dir([planned.spec[k] for k in ctx.schema.partition_keys])] = why
        fallback = f"partition expired: its time is {rule}"

        def reason(path: str) -> str:
            partition_dir = path.rpartition("/")[0].rpartition("/")[0]  # <data dir/>k=v/.../bucket-n/<file>
            found = by_dir.get(partition_dir)
            if found is None:  # below data-file.path-directory
                found = next((why for d, why in by_dir.items() if partition_dir.endswith("/" + d)), fallback)
            return found

        return reason

    def audit_retired(
        self, ctx: TableContext, plan: PartitionExpirePlan, result: PartitionExpireResult
    ) -> list[tuple[str, int]]:
        """The live files of the partitions the run dropped, as planned (the drop deletes exactly those)."""
        paths = DataPaths(ctx.schema, ctx.store.partition_codec(ctx.schema))
        dropped = [dict(p) for p in result.expired_partitions]
        return [
            (r.external_path or paths.file(r.partition, r.bucket, r.file_name), r.file_size)
            for planned in plan.expired
            if dict(planned.display) in dropped
            for r in planned.records
        ]

    def preview(self, ctx: TableContext, plan: PartitionExpirePlan) -> PartitionExpireResult:
        return execution.planned_result(plan)

    def execute(
        self, ctx: TableContext, plan: PartitionExpirePlan, config: PartitionExpireConfig, progress: Progress | None
    ) -> PartitionExpireResult:
        return execution.execute_partition_expiration(ctx, plan)


PARTITION_EXPIRATION = PartitionExpiration()
