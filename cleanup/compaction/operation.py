"""Compaction as a registered operation: merge small files into files near ``target-file-size`` with the shared
rewriter, one guarded COMPACT snapshot per batch; every row is kept exactly once (rows the table's record TTL
expired are dropped too). Not run after commits: run it on a schedule (``tablefmt compact``, the maintenance
scheduler) or from a dedicated job, as Paimon users run a dedicated compaction job with ``write-only`` writers. A
plan whose snapshot is expired while it is read is made again on the latest one (:mod:`..rewrite.races`)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tableformat.context import TableContext
from tableformat.lazy_module import lazy_module
from tableformat.model.snapshot import CommitKind
from tableformat.options import TARGET_FILE_SIZE

from ..kernel import Operation, OperationResult, Parameter, Progress

if TYPE_CHECKING:
    from .. import rewrite as rewriting
    from . import plan as planning
    from .plan import CompactConfig, CompactPlan
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    rewriting = lazy_module("tableformat.cleanup.rewrite")
    planning = lazy_module("tableformat.cleanup.compaction.plan")

COMMIT_USER_PREFIX = "tablefmt-compaction-"
SCHEDULE_KEYS = ("compaction.min.file-num", "compaction.max.file-num", "compaction.commit.max-files")
"""A table that sets one of these is compacted by the scheduler (``tablefmt maintain``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactResult(OperationResult):
    """What a compaction run merged (or, in a dry run, would merge)."""

    compacted_files: tuple[str, ...] = ()
    """The small files replaced (relative to the table root)."""
    written_files: tuple[str, ...] = ()
    """The new files (none in a dry run)."""
    groups: int = 0
    rows: int = 0
    """Rows read from the compacted files."""
    expired_rows: int = 0
    """Of those, rows the record TTL expired (not written again)."""
    snapshot_ids: tuple[int, ...] = ()
    bytes_reclaimable: int = 0
    skipped_files: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        document = OperationResult.to_json(self)
        document.update(
            compacted_paths=list(self.compacted_files),
            written_paths=list(self.written_files),
            groups=self.groups,
            read_records=self.rows,
            expired_records=self.expired_rows,
            snapshot_ids=list(self.snapshot_ids),
            reclaimable_bytes=self.bytes_reclaimable,
            skipped=[{"path": f, "reason": r} for f, r in self.skipped_files],
        )
        return document

    def summary(self) -> tuple[str, ...]:
        verb = "would merge" if self.dry_run else "merged"
        lines = [
            f"compact: {verb} {len(self.compacted_files)} file(s) in {self.groups} group(s) into "
            f"{len(self.written_files)} file(s), {self.rows} row(s) read, {self.expired_rows} expired"
            + (f" (snapshot(s) {', '.join(map(str, self.snapshot_ids))})" if self.snapshot_ids else "")
        ]
        lines += [f"skipped {path}: {reason}" for path, reason in self.skipped_files]
        return tuple(lines + [f"note: {note}" for note in self.notes])


def execute_compaction(ctx: TableContext, plan: CompactPlan, config: CompactConfig) -> CompactResult:
    """Rewrite the plan's groups in guarded batches; report what was committed. A plan whose snapshot is expired
    while the rewrite reads it is made again on the latest snapshot and carried out (:mod:`..rewrite.races`)."""
    settings = rewriting.CommitSettings(
        commit_user=f"{COMMIT_USER_PREFIX}{uuid.uuid4()}", snapshot_kind=CommitKind.COMPACT
    )
    rewriter = rewriting.Rewriter(ctx, plan.ttl, config.target_size, settings, plan.base_snapshot_id)
    outcome = rewriting.RewriteOutcome()
    paths = rewriting.FilePaths(ctx)
    lost: list[int] = []

    def run(current: CompactPlan) -> None:
        lost.extend(current.lost_races)
        rewriter.rebase(current.base_snapshot_id)
        for batch in rewriting.batches(current.units, config.commit_max_files):
            rewriter.rewrite(batch, outcome)

    _final, lost_rewriting = rewriting.run_replanning(
        plan, lambda: planning.plan_compaction(ctx, config, plan.now_ms), run
    )
    notes = rewriting.replan_notes((*lost, *lost_rewriting))
    return CompactResult(
        compacted_files=tuple(paths.relative(e) for e in outcome.replaced),
        written_files=tuple(ctx.layout.relative(f.path) for f in outcome.written),
        groups=outcome.units,
        rows=outcome.rows_in,
        expired_rows=outcome.rows_in - outcome.rows_out,
        snapshot_ids=tuple(outcome.snapshot_ids),
        bytes_reclaimable=sum(e.file.file_size for e in outcome.replaced),
        skipped_files=tuple((paths.relative(e), reason) for unit, reason in outcome.abandoned for e in unit.files),
        notes=notes + (("the bytes are freed by snapshot expiration",) if outcome.replaced else ()),
    )


def planned_result(ctx: TableContext, plan: CompactPlan) -> CompactResult:
    """The dry run: the groups the real run merges if the table does not change (expired rows not counted)."""
    files = [e for unit in plan.units for e in unit.files]
    paths = rewriting.FilePaths(ctx)
    return CompactResult(
        dry_run=True,
        compacted_files=tuple(paths.relative(e) for e in files),
        groups=len(plan.units),
        rows=sum(e.file.row_count for e in files),
        bytes_reclaimable=sum(e.file.file_size for e in files),
        notes=rewriting.replan_notes(plan.lost_races),
    )


class Compaction(Operation["CompactConfig", "CompactPlan", CompactResult]):
    """Merge small files of each partition and bucket into files near the target size."""

    name = "compact"
    summary = "merge small data files into files near target-file-size (one COMPACT snapshot per batch)"
    parameters = (
        Parameter("partition", "text", "only this partition, e.g. dt=2024-01-01 (k=v[,k=v])"),
        Parameter(
            "target_file_size",
            "size",
            "merge into files of about this size, e.g. 128mb (target-file-size)",
            TARGET_FILE_SIZE,
        ),
    )

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> CompactConfig:
        return planning.CompactConfig.resolve(ctx, overrides)

    def not_applicable(self, ctx: TableContext) -> str:
        """Primary-key and fixed-bucket tables: their files are compacted by Paimon, which merges a primary-key
        table's versions of each key."""
        return rewriting.rewrite_refusal(ctx.schema)

    def wanted(self, ctx: TableContext) -> bool:
        """For the scheduler: only tables that set a compaction option (``compaction.min.file-num``,
        ``compaction.max.file-num``, ``compaction.commit.max-files``) are compacted on a schedule; any table can
        be compacted on demand."""
        return any(key in ctx.schema.options for key in SCHEDULE_KEYS)

    def plan(self, ctx: TableContext, config: CompactConfig, now_ms: int) -> CompactPlan:
        return planning.plan_compaction(ctx, config, now_ms)

    def changes(self, plan: CompactPlan) -> bool:
        return bool(plan.units)

    def audit_reasons(self, ctx: TableContext, plan: CompactPlan, config: CompactConfig) -> Callable[[str], str]:
        why = (
            f"compacted: merged with other small files into files near target-file-size={config.target_size} bytes "
            f"(compaction.min.file-num={config.min_file_num})"
        )
        return lambda path: why

    def audit_retired(self, ctx: TableContext, plan: CompactPlan, result: CompactResult) -> list[tuple[str, int]]:
        """The replaced files with their sizes as planned (a file a re-plan found on its own: 0 bytes)."""
        paths = rewriting.FilePaths(ctx)
        sizes = {paths.relative(e): e.file.file_size for unit in plan.units for e in unit.files}
        return [(path, sizes.get(path, 0)) for path in result.compacted_files]

    def preview(self, ctx: TableContext, plan: CompactPlan) -> CompactResult:
        return planned_result(ctx, plan)

    def execute(
        self, ctx: TableContext, plan: CompactPlan, config: CompactConfig, progress: Progress | None
    ) -> CompactResult:
        return execute_compaction(ctx, plan, config)


COMPACTION = Compaction()
