"""Record expiration as a registered operation: after partition expiration, before snapshot expiration (Paimon's
order: partition expiry, then record TTL, then snapshot expiry), and after every commit when the table sets
``record-level.expire-time``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tableformat.context import TableContext
from tableformat.durations import format_duration_ms
from tableformat.errors import ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.options import (
    RECORD_LEVEL_EXPIRE_MAX_FILES,
    RECORD_LEVEL_EXPIRE_MAX_REWRITE_SIZE,
    RECORD_LEVEL_EXPIRE_TIME,
)
from tableformat.units import iso_from_ms

from ..kernel import Operation, Parameter, Progress
from ..rewrite import rewrite_refusal
from .config import RecordExpireConfig

if TYPE_CHECKING:
    from . import execute as execution
    from . import plan as planning
    from .execute import RecordExpireResult
    from .plan import RecordExpirePlan
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    execution = lazy_module("tableformat.cleanup.records.execute")
    planning = lazy_module("tableformat.cleanup.records.plan")


class RecordExpiration(Operation[RecordExpireConfig, "RecordExpirePlan", "RecordExpireResult"]):
    """Drop files whose every row is expired (metadata only) and rewrite partly expired files."""

    name = "expire-records"
    summary = "remove rows older than record-level.expire-time (whole files by statistics, partly expired rewritten)"
    after_commit = True
    parameters = (
        Parameter(
            "expire_time",
            "duration",
            "rows older than this expire (record-level.expire-time)",
            RECORD_LEVEL_EXPIRE_TIME,
        ),
        Parameter("time_field", "text", "the column whose time expires a row (record-level.time-field)"),
        Parameter("max_files", "int", "drop or rewrite at most N files this run", RECORD_LEVEL_EXPIRE_MAX_FILES),
        Parameter(
            "max_rewrite_size",
            "size",
            "rewrite at most this many bytes of partly expired files this run, e.g. 1gb",
            RECORD_LEVEL_EXPIRE_MAX_REWRITE_SIZE,
        ),
    )

    limit_option = "record-level.expire.max-files"

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> RecordExpireConfig:
        return RecordExpireConfig.resolve(ctx, overrides)

    def not_applicable(self, ctx: TableContext) -> str:
        """Primary-key and fixed-bucket tables: their files are not rewritten (on a primary-key table Paimon applies
        ``record-level.expire-time`` itself, in the merge of its compaction)."""
        return rewrite_refusal(ctx.schema)

    def wanted(self, ctx: TableContext) -> bool:
        """Only when ``record-level.expire-time`` is set (an invalid value counts as set: running reports it)."""
        try:
            return ctx.options.get(RECORD_LEVEL_EXPIRE_TIME) is not None
        except ValidationError:
            return True

    def plan(self, ctx: TableContext, config: RecordExpireConfig, now_ms: int) -> RecordExpirePlan:
        return planning.plan_record_expiration(ctx, config, now_ms)

    def changes(self, plan: RecordExpirePlan) -> bool:
        return bool(plan.drops or plan.rewrites)

    def audit_reasons(
        self, ctx: TableContext, plan: RecordExpirePlan, config: RecordExpireConfig
    ) -> Callable[[str], str]:
        rule = (
            f"{config.time_field} before the cutoff {iso_from_ms(plan.ttl.cutoff_ms)} "
            f"(record-level.expire-time={format_duration_ms(config.expire_ms)})"
        )
        drops = {j.path for j in plan.drops}

        def reason(path: str) -> str:
            if path in drops:
                return f"record expiry: every row has {rule}"
            return f"record expiry: rewritten without its rows that have {rule}"

        return reason

    def audit_retired(
        self, ctx: TableContext, plan: RecordExpirePlan, result: RecordExpireResult
    ) -> list[tuple[str, int]]:
        sizes = {j.path: j.entry.file.file_size for j in plan.drops + plan.rewrites}
        return [(path, sizes.get(path, 0)) for path in result.dropped_files + result.rewritten_files]

    def preview(self, ctx: TableContext, plan: RecordExpirePlan) -> RecordExpireResult:
        return execution.planned_result(ctx, plan)

    def execute(
        self, ctx: TableContext, plan: RecordExpirePlan, config: RecordExpireConfig, progress: Progress | None
    ) -> RecordExpireResult:
        return execution.execute_record_expiration(ctx, plan, config)


RECORD_EXPIRATION = RecordExpiration()
