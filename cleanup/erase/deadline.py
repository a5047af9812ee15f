"""Erasures past their deadline (``erase.deadline``, docs/erase.md): ``tablefmt maintain`` completes their purge.

An erasure run without ``--purge`` (or whose purge a tag, branch or consumer stopped short of) records itself as
pending (``.tablefmt/erasures/erasure-<snapshot id>``, with the names of the files that held the erased rows, never
the filter). Once its deadline has come, a maintain pass that ran snapshot expiration runs the purge: every snapshot
older than the erasure's expires (overriding the table's retention for those only, as ``--purge`` does), as a run
of its own recorded in the audit ledger (``erase``), and never held by the undo window. When no root names any of
those files any more the erasure is complete and its record goes; otherwise it is past due, and the pass reports
which tags, branches or consumers still hold erased rows, every pass, until their owners let go.
"""

from __future__ import annotations

from dataclasses import replace

from tableformat.claims import MAINTENANCE, TableClaim
from tableformat.context import TableContext
from tableformat.errors import CorruptMetadataError, TableBusyError
from tableformat.io.guarded import GuardedFileIO
from tableformat.units import iso_from_ms

from ..kernel.audit import AuditedRun, unguarded
from ..kernel.deferral import deferring
from .execute import purge_through
from .held import finish_pending
from .pins import pins_text
from .result import EraseResult

PAST_DUE = "past its deadline"


def complete_due_erasures(ctx: TableContext, now_ms: int) -> EraseResult | None:
    """Purge every pending erasure whose deadline has come; None when none has. The result's ``pinned_by`` names
    what still holds erased rows (its notes say which erasures are past due)."""
    try:
        due = [p for p in unguarded(ctx.store).pending_erasures() if p.deadline_ms <= now_ms]
    except (CorruptMetadataError, OSError) as exc:
        return EraseResult(notes=(f"pending erasures cannot be read: {exc}",))
    if not due:
        return None
    run = AuditedRun.start("erase", ctx, {"deadline": "past"}, now_ms)
    claim = TableClaim(unguarded(ctx.store), MAINTENANCE, "erase", owner=run.run_id)
    try:
        claim.acquire()
    except TableBusyError as exc:
        return EraseResult(notes=(f"erasures past their deadline wait for the next pass: {exc}",))
    try:
        with run.recording(), deferring(None):
            guarded = run.noting(ctx).with_io(GuardedFileIO(run.noting(ctx).io, claim.check))
            purge = purge_through(guarded, max(p.snapshot_id for p in due), now_ms, None, dry_run=False)
            unnamed, late = finish_pending(guarded, due, 4)
            run.finished((), ())
    finally:
        claim.release()
    notes = list(purge.notes)
    holders = unnamed.holders if late else {}
    if late:
        holders_text = ", ".join(pins_text(list(holders)))
        snapshots = ", ".join(str(p.snapshot_id) for p in late)
        notes.append(
            f"erasure(s) of snapshot(s) {snapshots} {PAST_DUE} ({iso_from_ms(min(p.deadline_ms for p in late))}): "
            f"erased rows are still held by {holders_text}; their owners must delete them"
        )
    result = EraseResult(
        purged_snapshot_ids=purge.snapshot_ids,
        deleted_paths=(*purge.deleted_paths, *unnamed.deleted),
        deleted_bytes=purge.deleted_bytes + unnamed.deleted_bytes,
        pinned_by=tuple(holders),
        deadline_ms=min(p.deadline_ms for p in late) if late else None,
        notes=tuple(notes) or (f"completed the purge of {len(due)} erasure(s) past their deadline",),
    )
    return replace(result, run_id=run.run_id, operation="erase")
