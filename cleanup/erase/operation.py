"""Erasure as a registered operation: run on demand only (``tablefmt erase``, ``table.maintenance.erase``), never
by the after-commit hook or the scheduler (it needs a filter). Bucket-unaware append tables only, like every
rewrite (``rewrite_refusal``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tableformat.context import TableContext
from tableformat.lazy_module import lazy_module
from tableformat.options import ERASE_DEADLINE

from ..kernel import Operation, Parameter, Progress
from ..rewrite import rewrite_refusal

if TYPE_CHECKING:
    from . import execute as execution
    from . import plan as planning
    from .plan import EraseConfig, ErasePlan
    from .result import EraseResult
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    execution = lazy_module("tableformat.cleanup.erase.execute")
    planning = lazy_module("tableformat.cleanup.erase.plan")


class Erasure(Operation["EraseConfig", "ErasePlan", "EraseResult"]):
    """Rewrite the live files holding matching rows without them; with ``purge``, expire every older snapshot."""

    name = "erase"
    defers = False
    summary = "erase the rows a filter matches (rewriting only the files that hold them); --purge removes old copies"
    parameters = (
        Parameter(
            "where", "text", 'a SQL boolean expression over the table\'s columns, e.g. "user_id IN (1, 2)"', secret=True
        ),
        Parameter("keys_file", "text", "a Parquet or CSV file of keys to erase (with --key)"),
        Parameter("key", "text", "COL[=FILECOL]: the table column the keys file's column FILECOL holds"),
        Parameter("purge", "flag", "also expire every snapshot older than the erasure and delete the old files"),
        Parameter("include_tags", "flag", "with purge: rewrite the tags that hold erased rows, without them"),
        Parameter("deadline", "duration", "the old files must be gone this long after the erasure", ERASE_DEADLINE),
    )

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> EraseConfig:
        return planning.EraseConfig.resolve(ctx, overrides)

    def not_applicable(self, ctx: TableContext) -> str:
        """Primary-key, fixed-bucket and deletion-vector tables: tablefmt does not rewrite their files."""
        return rewrite_refusal(ctx.schema)

    def wanted(self, ctx: TableContext) -> bool:
        """Never on a schedule: an erasure is asked for with its filter."""
        return False

    def plan(self, ctx: TableContext, config: EraseConfig, now_ms: int) -> ErasePlan:
        return planning.plan_erase(ctx, config, now_ms)

    def changes(self, plan: ErasePlan) -> bool:
        return bool(plan.files) or plan.config.purge  # a purge may expire snapshots even when no live file matches

    def audit_reasons(self, ctx: TableContext, plan: ErasePlan, config: EraseConfig) -> Callable[[str], str]:
        """Rewritten files: how many rows the filter matched there (never the filter: it names people; the record
        keeps its digest, cleanup/kernel/parameters.py). Purged files: erased rows purged from older snapshots."""
        rows = {f.path: f.rows for f in plan.files}
        return lambda path: (
            f"erased: {rows[path]} row(s) matched the erasure's filter; rewritten without them"
            if path in rows
            else "erase --purge: held erased rows in a snapshot older than the erasure"
        )

    def audit_retired(self, ctx: TableContext, plan: ErasePlan, result: EraseResult) -> list[tuple[str, int]]:
        """The rewritten files with their sizes as planned (a file a re-plan found on its own: 0 bytes)."""
        sizes = {f.path: f.entry.file.file_size for f in plan.files}
        return [(path, sizes.get(path, 0)) for path in result.rewritten_paths]

    def preview(self, ctx: TableContext, plan: ErasePlan) -> EraseResult:
        return execution.planned_result(ctx, plan)

    def execute(
        self, ctx: TableContext, plan: ErasePlan, config: EraseConfig, progress: Progress | None
    ) -> EraseResult:
        return execution.execute_erase(ctx, plan, config, progress)


ERASURE = Erasure()
