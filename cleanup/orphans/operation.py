"""Orphan cleanup as a registered operation (run through ``table.maintenance.remove_orphan_files``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from tableformat.claims import MAINTENANCE, survey
from tableformat.context import TableContext
from tableformat.durations import format_duration_ms
from tableformat.errors import ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.options import FILE_OPERATION_THREAD_NUM, ORPHAN_CHECK_INTERVAL, ORPHAN_MAX_FILES, ORPHAN_OLDER_THAN
from tableformat.parallel import resolve_parallelism
from tableformat.units import iso_from_ms

from ..kernel import Cadence, Operation, Parameter, Progress
from .model import OrphanPlan, OrphanResult, resolve_older_than_ms

if TYPE_CHECKING:
    from . import execute as execution
    from . import file_list as file_lists
    from . import plan as planning
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    execution = lazy_module("tableformat.cleanup.orphans.execute")
    file_lists = lazy_module("tableformat.cleanup.orphans.file_list")
    planning = lazy_module("tableformat.cleanup.orphans.plan")


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanConfig:
    """One cleanup's settings: the age guard (None = the table's ``orphan-files.older-than``), whether a guard under
    an hour is allowed, and the thread count (None = the table's)."""

    older_than: timedelta | None = None
    force: bool = False
    parallelism: int | None = None
    file_list: str | None = None
    """An S3 Inventory manifest or a plain file list to take the files from instead of listing (``.file_list``)."""
    max_files: int | None = None
    """At most this many orphans this run (None = the table's ``orphan-files.max-files``)."""


class OrphanCleanup(Operation[OrphanConfig, OrphanPlan, OrphanResult]):
    """Delete files no snapshot, tag, changelog or branch references and older than the age guard."""

    name = "remove-orphans"
    summary = "delete files that no snapshot, tag or branch references (unknown files are never touched)"
    parameters = (
        Parameter(
            "older_than", "duration", "only delete unreferenced files older than this (default: 1 d)", ORPHAN_OLDER_THAN
        ),
        Parameter("force", "flag", "allow an age guard under 1 h (only when no writer is running)"),
        Parameter("parallelism", "int", "threads for listing, reading, deleting", FILE_OPERATION_THREAD_NUM),
        Parameter(
            "file_list",
            "text",
            "take the table's files from this S3 Inventory manifest.json or Parquet/CSV of path, size, last_modified "
            "instead of listing (the cutoff is capped at its creation time)",
        ),
        Parameter("max_files", "int", "delete at most N orphans this run (the rest: backlog)", ORPHAN_MAX_FILES),
    )

    def cadence(self, ctx: TableContext) -> Cadence:
        """Every ``orphan-files.check-interval`` (1 d): a full listing of the table is the costliest check."""
        return Cadence(interval_ms=ctx.options.require(ORPHAN_CHECK_INTERVAL), on_change=False)

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> OrphanConfig:
        older_ms: int | None = overrides.get("older_than")
        older_than = None if older_ms is None else timedelta(milliseconds=older_ms)
        force = bool(overrides.get("force", False))
        resolve_older_than_ms(ctx, older_than, force=force)  # under 1 h without force: refused before any listing
        file_list = overrides.get("file_list")
        if file_list is not None and not isinstance(file_list, str | os.PathLike):
            raise ValidationError(f"remove-orphans: file_list must be a path or URL, got {file_list!r}")
        config = OrphanConfig(
            older_than=older_than,
            force=force,
            parallelism=overrides.get("parallelism"),
            file_list=None if file_list is None else os.fspath(file_list),
            max_files=overrides.get("max_files"),
        )
        resolve_parallelism(ctx.options, ctx.io, config.parallelism)
        return config

    def plan(self, ctx: TableContext, config: OrphanConfig, now_ms: int) -> OrphanPlan:
        file_list = None if config.file_list is None else file_lists.load_file_list(ctx, config.file_list)
        plan = planning.plan_orphan_removal(
            ctx,
            older_than=config.older_than,
            force=config.force,
            parallelism=config.parallelism,
            now_ms=now_ms,
            file_list=file_list,
            max_files=config.max_files,
        )
        if plan.orphans or plan.empty_dirs:  # the run takes a claim anyway, and deletes lapsed ones then
            return plan
        return replace(plan, lapsed_claims=len(survey(ctx.store, MAINTENANCE, now_ms)[1]))

    def changes(self, plan: OrphanPlan) -> bool:
        """Also when claims of crashed runs lapsed: taking its own claim, the run deletes them."""
        return bool(plan.orphans or plan.empty_dirs or plan.lapsed_claims)

    def audit_reasons(self, ctx: TableContext, plan: OrphanPlan, config: OrphanConfig) -> Callable[[str], str]:
        """An orphan's age at planning and the age guard it passed."""
        ages = {o.path: o.mtime_ms for o in plan.orphans}
        guard = f"orphan-files.older-than {format_duration_ms(plan.planned_at_ms - plan.cutoff_ms)}"

        def reason(path: str) -> str:
            mtime = ages.get(path)
            age = "" if mtime is None else f", last modified {iso_from_ms(mtime)}, age "
            age += "" if mtime is None else format_duration_ms(max(0, plan.planned_at_ms - mtime) // 1000 * 1000)
            return f"orphan: no snapshot, tag, changelog or branch references it{age} ({guard})"

        return reason

    def still_valid(self, ctx: TableContext, plan: OrphanPlan) -> bool:
        """False when a run's undo window the plan read is gone now: an undo (or a purge) finished while the plan
        read the table, and an undo writes snapshots back that name files the plan may have found unreferenced. A
        rollback or an expiration only removes references, which leaves every orphan an orphan."""
        if not plan.held_runs:
            return True
        return {run.run_id for run in plan.held_runs} <= ctx.store.held_run_ids()

    def preview(self, ctx: TableContext, plan: OrphanPlan) -> OrphanResult:
        return execution.dry_run_result(plan)

    def execute(
        self, ctx: TableContext, plan: OrphanPlan, config: OrphanConfig, progress: Progress | None
    ) -> OrphanResult:
        return execution.execute_orphan_plan(
            ctx, plan, parallelism=config.parallelism, now_ms=plan.planned_at_ms, fresh=True
        )


ORPHAN_CLEANUP = OrphanCleanup()
