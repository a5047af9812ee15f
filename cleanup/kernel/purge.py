"""Deleting what the undo window held, once its time has come (docs/undo.md).

Every run of a maintenance operation on a table whose ``maintenance.undo-window`` is above 0 (and every orphan
cleanup, whatever the window: held files must go some time after the window is turned off) first looks for runs
whose window has ended (``.tablefmt/undo/``, one recursive listing) and, when it finds any, deletes their held files
as a run of its own, ``purge-held``: under a maintenance claim (so never while an undo or rollback runs), the held
lists read again under it (an undo that just finished has released its files), every file still held deleted
through the one Deleter (files already gone are counted apart), recorded in the audit ledger with the run and window
they were held for. The run's saved copies go first (orphan cleanup reads them as roots: one is never left naming
files already gone), its lists last. A crash anywhere leaves the lists: the next run
deletes again what is left. Held lists that cannot be read stop the purge (nothing deleted) and say so, without
failing the operation that found them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from tableformat.audit import iso
from tableformat.claims import MAINTENANCE, TableClaim
from tableformat.context import TableContext
from tableformat.errors import CorruptMetadataError, TableBusyError
from tableformat.io.guarded import GuardedFileIO
from tableformat.live_set import live_scan_refs
from tableformat.model.undo import HeldRun
from tableformat.units import human_bytes

from .audit import AuditedRun, unguarded
from .deferral import deferring
from .deleter import Deleter

log = logging.getLogger(__name__)

PURGE = "purge-held"
"""The operation name of a purge in the audit ledger."""


@dataclass(frozen=True, slots=True)
class PurgeOutcome:
    """What one purge did: one line for the result of the operation whose run it preceded."""

    deleted_paths: tuple[str, ...] = ()
    deleted_bytes: int = 0
    runs: tuple[str, ...] = ()
    """The runs whose windows ended and whose held files are now gone."""
    problem: str = ""
    """Why it deleted less than was due (unreadable lists, a busy table, failed deletes)."""
    run_id: str = ""

    def note(self) -> str:
        done = (
            f"deleted {len(self.deleted_paths)} held file(s), {human_bytes(self.deleted_bytes)}, whose undo window "
            f"ended (run(s) {', '.join(self.runs)}; recorded as run {self.run_id})"
            if self.runs or self.deleted_paths
            else ""
        )
        return "; ".join(part for part in (done, self.problem) if part)


def _due(ctx: TableContext, now_ms: int) -> list[HeldRun]:
    return [run for run in unguarded(ctx.store).held_runs() if run.is_due(now_ms)]


def purge_due(ctx: TableContext, now_ms: int, threads: int = 8) -> PurgeOutcome | None:
    """Delete the files of every run whose undo window ended by ``now_ms``; None when none did."""
    try:
        if not _due(ctx, now_ms):
            return None
    except (CorruptMetadataError, OSError) as exc:
        log.warning("undo window of %s unreadable: %s", ctx.url(), exc)
        return PurgeOutcome(problem=f"could not read the undo window, nothing held was deleted: {exc}")
    run = AuditedRun.start(PURGE, ctx, None, now_ms)
    store = unguarded(ctx.store)
    claim = TableClaim(store, MAINTENANCE, PURGE, owner=run.run_id)
    try:
        claim.acquire()
    except TableBusyError as exc:
        return PurgeOutcome(problem=f"held files whose window ended wait for the next run: {exc}")
    try:
        with run.recording(), deferring(None):
            due = _due(ctx, now_ms)
            reasons = {p: f"undo window of run {r.run_id} ended {iso(r.due_ms)}" for r in due for p in r.held}
            run.reasons = lambda path: reasons.get(path, PURGE)
            for held in due:  # the copies first: a copy read as a root never outlives the files it names
                store.delete_saved_copies(held)
            committed = _committed_since(ctx, due)
            deleter = Deleter(GuardedFileIO(ctx.io, claim.check), ctx.layout, threads, label="deleted held")
            deleter.delete(sorted((p, s) for r in due for p, s in r.held.items() if p not in committed))
            finished = _clear(ctx, due, deleter.failures)
            run.finished(deleter.failures, ())
    except (CorruptMetadataError, OSError) as exc:
        return PurgeOutcome(problem=f"deleting held files whose window ended stopped: {exc}", run_id=run.run_id)
    finally:
        claim.release()
    problem = (
        f"{len(deleter.failures)} held file(s) could not be deleted: {deleter.failures[0]}" if deleter.failures else ""
    )
    if committed:
        kept = f"kept {len(committed)} held orphan(s) a commit references now (written before, committed after)"
        problem = "; ".join(p for p in (problem, kept) if p)
    return PurgeOutcome(tuple(deleter.deleted), deleter.deleted_bytes, tuple(finished), problem, run.run_id)


UNCOMMITTED_HOLDERS = frozenset({"remove-orphans"})
"""Operations whose held files no snapshot named when they looked, but a writer may commit later (a file written
before the cleanup and committed after it): a purge checks them against the latest snapshot first."""


def _committed_since(ctx: TableContext, due: Sequence[HeldRun]) -> set[str]:
    """Held files of :data:`UNCOMMITTED_HOLDERS` runs that the latest snapshot names now (its live data files, its
    manifests and manifest lists): never deleted, they are the table's again."""
    holding = [run for run in due if run.operation in UNCOMMITTED_HOLDERS]
    latest = ctx.store.latest_snapshot() if holding else None
    if latest is None:
        return set()
    store = ctx.store
    names = {ref.file_name for ref in live_scan_refs(store, latest, store.partition_codec(ctx.schema))}
    names |= {meta.file_name for meta in store.manifests_of(latest)} | set(latest.manifest_lists())
    return {path for run in holding for path in run.held if path.rsplit("/", 1)[-1] in names}


def _clear(ctx: TableContext, due: Sequence[HeldRun], failures: Sequence[str]) -> list[str]:
    """Delete the lists of the due runs none of whose files failed (their copies went first); returns those runs."""
    failed = {failure.split(": ", 1)[0] for failure in failures}
    done = []
    for held in due:
        if not failed.intersection(held.held):
            unguarded(ctx.store).delete_run_lists(held)  # its copies went before its files
            done.append(held.run_id)
    return done
