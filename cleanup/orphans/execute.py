"""Carry out an orphan plan (and the one-call ``remove_orphan_files``): delete, then remove emptied directories."""

from __future__ import annotations

import logging

from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.errors import (
    MaintenanceError,
    ValidationError,
)
from tableformat.parallel import resolve_delete_parallelism

from ..kernel import Deleter
from .model import MAX_PLAN_AGE_MS, OrphanPlan, OrphanResult

log = logging.getLogger(__name__)


def execute_orphan_plan(
    ctx: TableContext,
    plan: OrphanPlan,
    *,
    parallelism: int | None = None,
    now_ms: int | None = None,
    fresh: bool = False,
) -> OrphanResult:
    """Delete a plan's orphans (batched, in parallel), then its empty directories; report confirmed deletions.

    ``fresh``: the plan was made moments ago in this run, so its census listing says the orphans exist and they are
    deleted without asking the store again (on S3: DeleteObjects only). Otherwise each is confirmed first."""
    if plan.root != ctx.layout.root:
        raise ValidationError(f"the plan was made for {plan.root!r}, not for {ctx.layout.root!r}")
    if resolve_now(now_ms) - plan.planned_at_ms > MAX_PLAN_AGE_MS:
        raise MaintenanceError("the orphan plan is more than an hour old; plan again (new commits may reference files)")
    deleter = Deleter(ctx.io, ctx.layout, resolve_delete_parallelism(ctx.options, parallelism), label="deleted orphan")
    deleter.delete([(o.path, o.size) for o in plan.orphans], listed=fresh)
    return OrphanResult(
        orphan_files=len(plan.orphans),
        orphan_bytes=plan.orphan_bytes,
        deleted_paths=tuple(sorted(deleter.deleted)),
        deleted_bytes=deleter.deleted_bytes,
        skipped_unknown=plan.skipped_unknown,
        dry_run=False,
        cutoff_ms=plan.cutoff_ms,
        failed=tuple(deleter.failures),
        backlog=plan.backlog,
        removed_dirs=tuple(deleter.remove_empty_dirs(plan.empty_dirs)),
        skipped_nested_tables=plan.skipped_nested_tables,
        plan=plan,
        notes=(
            *plan.notes,
            *((f"{len(deleter.absent)} orphan(s) were already gone when deleted",) if deleter.absent else ()),
        ),
    )


def dry_run_result(plan: OrphanPlan) -> OrphanResult:
    """The result of a dry run: what execute_orphan_plan would delete, nothing deleted."""
    return OrphanResult(
        orphan_files=len(plan.orphans),
        orphan_bytes=plan.orphan_bytes,
        deleted_paths=tuple(o.path for o in plan.orphans),
        deleted_bytes=plan.orphan_bytes,
        skipped_unknown=plan.skipped_unknown,
        dry_run=True,
        cutoff_ms=plan.cutoff_ms,
        removed_dirs=plan.empty_dirs,
        skipped_nested_tables=plan.skipped_nested_tables,
        plan=plan,
        notes=plan.notes,
        backlog=plan.backlog,
    )
