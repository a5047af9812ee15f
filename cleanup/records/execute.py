"""Carry out a record expiration plan: one metadata-only snapshot drops the fully expired files (no data file is
read or written), then the partly expired files are rewritten with their unexpired rows, each batch swapped in
ONE guarded snapshot (DELETE + ADD). Nothing is physically deleted: snapshot expiration frees the old files' bytes
once no retained snapshot or tag uses them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tableformat.context import TableContext
from tableformat.model.snapshot import CommitKind
from tableformat.units import human_bytes

from ..kernel import OperationResult
from ..rewrite import (
    MISSING_FILE_ERRORS,
    CommitSettings,
    RewriteOutcome,
    Rewriter,
    RewriteUnit,
    batches,
    raise_if_expired,
    replan_notes,
    run_replanning,
)
from .config import RecordExpireConfig
from .plan import RecordExpirePlan, plan_record_expiration, reader_for

COMMIT_USER_PREFIX = "tablefmt-record-expiration-"
"""The commit user of every snapshot record expiration writes (followed by a per-run id)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordExpireResult(OperationResult):
    """What a record expiration run did (or, in a dry run, would do)."""

    dropped_files: tuple[str, ...] = ()
    """Files whose every row was expired, marked deleted without being read (relative to the table root)."""
    rewritten_files: tuple[str, ...] = ()
    """Partly expired files replaced by new files holding their unexpired rows."""
    written_files: tuple[str, ...] = ()
    """The new files (none in a dry run: their names are chosen when written)."""
    expired_rows: int = 0
    snapshot_ids: tuple[int, ...] = ()
    bytes_reclaimable: int = 0
    """Bytes of the dropped and rewritten files: freed by snapshot expiration once no snapshot or tag uses them."""
    cutoff_ms: int = 0
    """Rows whose time was before this (epoch ms) expired."""
    skipped_files: tuple[tuple[str, str], ...] = ()
    """(file, reason): files left for a later run because a concurrent commit changed them."""

    def to_json(self) -> dict[str, Any]:
        document = OperationResult.to_json(self)
        document.update(
            dropped_files=list(self.dropped_files),
            rewritten_files=list(self.rewritten_files),
            written_files=list(self.written_files),
            expired_rows=self.expired_rows,
            snapshot_ids=list(self.snapshot_ids),
            bytes_reclaimable=self.bytes_reclaimable,
            cutoff_ms=self.cutoff_ms,
            skipped_files=[{"file": f, "reason": r} for f, r in self.skipped_files],
        )
        return document

    def summary(self) -> tuple[str, ...]:
        verb = "would drop" if self.dry_run else "dropped"
        lines = [
            f"expire-records: {verb} {len(self.dropped_files)} file(s), "
            f"{'would rewrite' if self.dry_run else 'rewrote'} {len(self.rewritten_files)} file(s) into "
            f"{len(self.written_files)}: {self.expired_rows} expired row(s), {human_bytes(self.bytes_reclaimable)} "
            "reclaimable" + (f" (snapshot(s) {', '.join(map(str, self.snapshot_ids))})" if self.snapshot_ids else "")
        ]
        lines += [f"skipped {path}: {reason}" for path, reason in self.skipped_files]
        return tuple(lines + [f"note: {note}" for note in self.notes])


def _notes(waiting: int, footer_reads: int, changed: bool, lost: tuple[int, ...]) -> tuple[str, ...]:
    notes = list(replan_notes(lost))
    if waiting:
        notes.append(f"{waiting} more file(s) with expired rows wait for the next run (max files, rewrite size)")
    if footer_reads:
        notes.append(f"{footer_reads} file(s) had no time statistics in the manifest; their footers were read")
    if changed:
        notes.append("the bytes are freed by snapshot expiration once no retained snapshot or tag uses the old files")
    return tuple(notes)


def _expired_rows_of(ctx: TableContext, plan: RecordExpirePlan) -> int:
    """The dry run's count: every row of the dropped files, and the expired rows of the files to rewrite."""
    reader = reader_for(ctx, plan.ttl)
    expired = sum(j.entry.file.row_count for j in plan.drops)
    for judged in plan.rewrites:
        try:
            kept = sum(t.num_rows for t in reader.iter_entry_batches(judged.entry))
        except MISSING_FILE_ERRORS as exc:  # the planned snapshot expired meanwhile: say so (a lost race)
            raise_if_expired(ctx.store, (plan.base_snapshot_id,), exc, "run it again")
            raise
        expired += judged.entry.file.row_count - kept
    return expired


def planned_result(ctx: TableContext, plan: RecordExpirePlan) -> RecordExpireResult:
    """The dry run: exactly the files the real run drops and rewrites if the table does not change meanwhile."""
    files = plan.drops + plan.rewrites
    return RecordExpireResult(
        dry_run=True,
        dropped_files=tuple(j.path for j in plan.drops),
        rewritten_files=tuple(j.path for j in plan.rewrites),
        expired_rows=_expired_rows_of(ctx, plan),
        bytes_reclaimable=sum(j.entry.file.file_size for j in files),
        cutoff_ms=plan.ttl.cutoff_ms,
        notes=_notes(plan.waiting, plan.footer_reads, False, plan.lost_races),
        backlog=plan.waiting,
    )


def _units(plan: RecordExpirePlan) -> list[RewriteUnit]:
    return [RewriteUnit(j.entry.partition, j.entry.bucket, j.entry.total_buckets, (j.entry,)) for j in plan.rewrites]


def execute_record_expiration(
    ctx: TableContext, plan: RecordExpirePlan, config: RecordExpireConfig
) -> RecordExpireResult:
    """Drop, then rewrite in guarded batches; report what was actually committed. A plan whose snapshot is expired
    while the rewrite reads it is made again on the latest snapshot and carried out (:mod:`..rewrite.races`)."""
    settings = CommitSettings(commit_user=f"{COMMIT_USER_PREFIX}{uuid.uuid4()}", snapshot_kind=CommitKind.OVERWRITE)
    rewriter = Rewriter(ctx, plan.ttl, config.target_size, settings, plan.base_snapshot_id)
    dropped, rewritten = RewriteOutcome(), RewriteOutcome()
    plans: list[RecordExpirePlan] = []

    def run(current: RecordExpirePlan) -> None:
        plans.append(current)
        rewriter.rebase(current.base_snapshot_id)
        if current.drops:
            rewriter.drop([j.entry for j in current.drops], dropped)
        for batch in batches(_units(current), config.commit_max_files):
            rewriter.rewrite(batch, rewritten)

    final, lost = run_replanning(plan, lambda: plan_record_expiration(ctx, config, plan.now_ms), run)
    return _result(ctx, plans, final, dropped, rewritten, lost)


def _result(
    ctx: TableContext,
    plans: list[RecordExpirePlan],
    final: RecordExpirePlan,
    dropped: RewriteOutcome,
    rewritten: RewriteOutcome,
    lost_rewriting: tuple[int, ...],
) -> RecordExpireResult:
    """What the plans run (one, or more after lost races) committed, and what they left."""
    paths = {j.entry.identifier(): j.path for p in plans for j in p.drops + p.rewrites}
    done = {e.identifier() for e in dropped.replaced}
    gone = "removed by a concurrent commit; not dropped"
    skipped = [(path, gone) for key, path in _drops(plans).items() if key not in done]
    skipped += [(paths[u.files[0].identifier()], reason) for u, reason in rewritten.abandoned]
    replaced = dropped.replaced + rewritten.replaced
    lost = tuple(i for p in plans for i in p.lost_races) + lost_rewriting
    return RecordExpireResult(
        dropped_files=tuple(paths[e.identifier()] for e in dropped.replaced),
        rewritten_files=tuple(paths[e.identifier()] for e in rewritten.replaced),
        written_files=tuple(ctx.layout.relative(f.path) for f in rewritten.written),
        expired_rows=sum(e.file.row_count for e in dropped.replaced) + rewritten.rows_in - rewritten.rows_out,
        snapshot_ids=tuple(dropped.snapshot_ids + rewritten.snapshot_ids),
        bytes_reclaimable=sum(e.file.file_size for e in replaced),
        cutoff_ms=final.ttl.cutoff_ms,
        skipped_files=tuple(skipped),
        notes=_notes(final.waiting, sum(p.footer_reads for p in plans), bool(replaced), lost),
        backlog=final.waiting + len(skipped),
    )


def _drops(plans: list[RecordExpirePlan]) -> dict[object, str]:
    """Every file a plan run chose to drop (by identity, in plan order), once."""
    return {j.entry.identifier(): j.path for p in plans for j in p.drops}
