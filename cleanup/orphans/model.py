"""What orphan cleanup plans and reports: the plan, its files, the result, and the age guard."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from tableformat.context import TableContext
from tableformat.durations import format_duration_ms
from tableformat.errors import ArgumentError, ValidationError
from tableformat.model.undo import HeldRun
from tableformat.options import ORPHAN_OLDER_THAN
from tableformat.units import human_bytes, time_pair

from ..kernel import OperationResult, shown_paths

log = logging.getLogger(__name__)


MIN_OLDER_THAN_MS = 3_600_000
"""Cutoffs closer to now than this are refused unless forced."""

STAT_CHUNK = 128
"""Files stat'ed per thread task when listings left out their mtimes."""

MAX_PLAN_AGE_MS = 3_600_000
"""A plan older than this is refused by execute_orphan_plan: plan again."""

MIN_SANE_MTIME_MS = 10_000_000_000
"""Mtimes at or below this (April 1970) mean a store reporting seconds or nothing: such files are never deleted."""


@dataclass(frozen=True, slots=True)
class OrphanFile:
    """A file planned for deletion: path relative to the table root, size and mtime."""

    path: str
    size: int
    mtime_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanPlan:
    """What an orphan cleanup would delete; immutable, produced by plan_orphan_removal."""

    root: str
    """The table root as a FileIO path (execute_orphan_plan refuses a plan made for another table)."""
    planned_at_ms: int
    cutoff_ms: int
    """Only files with an mtime before this are orphans."""
    orphans: tuple[OrphanFile, ...]
    skipped_unknown: tuple[str, ...]
    """Files whose names the format does not produce where they are: never deleted."""
    skipped_no_mtime: tuple[str, ...] = ()
    """Candidates whose store reports no usable mtime: never deleted."""
    empty_dirs: tuple[str, ...] = ()
    """Partition and bucket directories that are empty once the orphans are gone, deepest first."""
    lapsed_claims: int = 0
    """Claims of crashed runs that no longer count (tableformat/claims.py): the run deletes them."""
    skipped_nested_tables: tuple[str, ...] = ()
    """Roots of other tables where data directories were expected (they hold ``schema/`` or ``snapshot/``)."""
    directories_listed: int = 0
    files_listed: int = 0
    candidates: int = 0
    """Files named like table files and not known to be too young, before references were subtracted (files listed
    without an mtime count here; their age is checked once nothing references them)."""
    roots_read: int = 0
    notes: tuple[str, ...] = ()
    """What the plan could not judge and why (e.g. the cutoff capped at a file list's creation time)."""
    held_runs: tuple[HeldRun, ...] | None = None
    """The undo window as the plan read it (None: not read, there was no candidate)."""
    backlog: int = 0
    """Unreferenced candidates left for a later run beyond the ``orphan-files.max-files`` orphans planned (at most
    that many more orphans: those listed without an mtime were not stat'ed)."""

    @property
    def orphan_bytes(self) -> int:
        return sum(o.size for o in self.orphans)


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanResult(OperationResult):
    """The outcome of an orphan cleanup; paths are relative to the table root."""

    orphan_files: int
    """Orphans found (deleted, or to be deleted in a dry run)."""
    orphan_bytes: int
    skipped_unknown: tuple[str, ...]
    cutoff_ms: int
    failed: tuple[str, ...] = ()
    """'path: reason' of orphans that could not be deleted."""
    skipped_nested_tables: tuple[str, ...] = ()
    """Roots of other tables inside this one's data directories: never entered (see OrphanPlan)."""
    plan: OrphanPlan | None = field(default=None, repr=False, compare=False)

    def failures(self) -> tuple[str, ...]:
        return self.failed

    def summary(self) -> tuple[str, ...]:
        """The text report: orphans found and deleted, then the paths deleted (or to be), unknown files, nested
        tables and failed deletes (the first :data:`SHOWN` of each)."""
        verb = "would delete" if self.dry_run else "deleted"
        older = (
            "" if self.plan is None else f", older than {format_duration_ms(self.plan.planned_at_ms - self.cutoff_ms)}"
        )
        lines = [
            f"remove-orphans: {self.orphan_files} orphan file(s), {human_bytes(self.orphan_bytes)}{older}; {verb} "
            f"{len(self.deleted_paths)} file(s), {human_bytes(self.deleted_bytes)}",
            *shown_paths(self.deleted_paths, verb),
            *shown_paths(self.skipped_unknown, "unknown files (never deleted)"),
            *shown_paths(self.skipped_nested_tables, "nested tables (never entered)"),
            *shown_paths(self.failed, "could not delete"),
        ]
        if self.removed_dirs:
            lines.append(f"{'would remove' if self.dry_run else 'removed'} {len(self.removed_dirs)} empty directories")
        return (*lines, *(f"note: {note}" for note in self.notes))

    def to_json(self) -> dict[str, Any]:
        """The --json document."""
        return {
            "orphan_files": self.orphan_files,
            "orphan_bytes": self.orphan_bytes,
            "deleted_paths": list(self.deleted_paths),
            "deleted_files": len(self.deleted_paths),
            "deleted_bytes": self.deleted_bytes,
            "skipped_unknown": list(self.skipped_unknown),
            "failed": list(self.failed),
            "removed_dirs": list(self.removed_dirs),
            "skipped_nested_tables": list(self.skipped_nested_tables),
            "dry_run": self.dry_run,
            **time_pair("cutoff", self.cutoff_ms),
            "notes": list(self.notes),
            "backlog": self.backlog,
            **self.window_json(),
            **self.cost_json(),
        }


def resolve_older_than_ms(ctx: TableContext, older_than: timedelta | None, *, force: bool) -> int:
    """The guard in ms: the argument, else the table option; refused in the future, and under 1 h unless forced."""
    if older_than is None:
        older_ms = ctx.options.require(ORPHAN_OLDER_THAN)
    elif isinstance(older_than, timedelta):
        older_ms = older_than // timedelta(milliseconds=1)
    else:
        raise ValidationError(f"older_than must be a datetime.timedelta, got {type(older_than).__name__}")
    if older_ms < 0:
        raise ValidationError(f"older_than {older_ms} ms puts the cutoff in the future; refusing (even with force)")
    if older_than is not None:
        ORPHAN_OLDER_THAN.argument(older_than, "older_than")  # at most 36500 d
    if older_ms < MIN_OLDER_THAN_MS and not force:
        raise ArgumentError(
            "{older_than} is under the 1 h minimum: files of writers still running would be deleted; pass "
            "{force} if no writer is running",
            older_than=(repr(timedelta(milliseconds=older_ms)), format_duration_ms(older_ms)),
            force=("True", ""),
        )
    return older_ms
