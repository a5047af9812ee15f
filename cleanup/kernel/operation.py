"""The shape every maintenance operation has: options + overrides -> config (validated once) -> immutable plan ->
execute -> result. A dry run stops after planning and returns the plan's preview, the same result a real run at
that moment would report.

An operation is one object of a subclass of :class:`Operation`, registered once in :mod:`..registry`; the CLI, the
Table API, the after-commit hook, Spark and the scheduler all go through :func:`run_operation`.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tableformat.audit import iso
from tableformat.claims import MAINTENANCE, TableClaim
from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.errors import NotApplicableError
from tableformat.gc_pause import old_objects_frozen, paused_gc
from tableformat.io.guarded import GuardedFileIO
from tableformat.io.metered import DELETE, MeteredFileIO, RequestTally, batches
from tableformat.units import human_bytes

from .audit import AuditedRun, unguarded
from .cost import bookkeeping_requests, priced
from .deferral import Deferral, deferring, undo_window_ms
from .deleter import Progress
from .parameters import Parameter, auditable_overrides, coerce_overrides
from .purge import purge_due
from .result import OperationResult


@dataclass(frozen=True, slots=True)
class Cadence:
    """When the scheduler (``tablefmt maintain``) runs an operation on a table."""

    interval_ms: int
    """Run at least this often."""
    on_change: bool
    """Also due as soon as the table has a new snapshot or schema (e.g. snapshot expiration: a commit may have made
    snapshots expirable); otherwise only the interval counts (partitions and orphans age with time)."""


C = TypeVar("C")
P = TypeVar("P")
R = TypeVar("R", bound=OperationResult)


class Operation(ABC, Generic[C, P, R]):
    """One maintenance operation."""

    name: str
    """The registry key and CLI command, e.g. ``expire-snapshots``."""
    summary: str
    """One line for help texts and docs."""
    parameters: tuple[Parameter, ...] = ()
    """The overrides ``configure`` accepts besides the table's options."""
    limit_option: str = ""
    """The table option that bounds one run (e.g. ``snapshot.expire.limit``): what to raise when it falls behind."""
    after_commit: bool = False
    """Whether the after-commit hook runs it (when the table's options enable it and ``write-only`` is false)."""
    defers: bool = True
    """Whether a run keeps what it takes for the undo window (``maintenance.undo-window``, kernel/deferral.py);
    erasure never does (it must remove the bytes)."""
    pauses_gc: bool = False
    """Whether a run holds a record per live file (and no cycles): then the cyclic collector is paused from planning
    until the plan is dropped (tableformat/gc_pause.py)."""

    @abstractmethod
    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> C:
        """The table's options with ``overrides`` applied: only those given, each already checked and typed per its
        :class:`Parameter` (parameters.py); raises ValidationError before any read."""

    def wanted(self, ctx: TableContext) -> bool:
        """Whether the table's options ask for this operation (e.g. partition expiration only with
        ``partition.expiration-time``): the one answer the after-commit hook, ``tableformat.spark.maintain``,
        ``tablefmt maintain`` and the report act on. A value that does not parse counts as asking, so that the run
        reports it instead of the operation going quiet. ``write-only`` does not count here."""
        return True

    def due_after_commit(self, ctx: TableContext, now_ms: int) -> bool:
        """Whether a wanted operation runs after this commit, or waits for a later one (e.g. partition expiration
        until ``partition.expiration-check-interval`` has passed). The scheduler's timing is :meth:`cadence`."""
        return True

    def not_applicable(self, ctx: TableContext) -> str:
        """Why this operation does not apply to this table at all ('' when it does), judged from the schema alone:
        a run raises NotApplicableError with this reason before anything is read; ``tablefmt maintain`` and the
        after-commit hook skip the operation and report the reason (e.g. a rewrite on a primary-key table)."""
        return ""

    def cadence(self, ctx: TableContext) -> Cadence:
        """How often the scheduler runs it on this table (default: hourly, and after any change)."""
        return Cadence(interval_ms=3_600_000, on_change=True)

    @abstractmethod
    def plan(self, ctx: TableContext, config: C, now_ms: int) -> P:
        """Decide everything the run will do; reads metadata, never deletes or writes."""

    def changes(self, plan: P) -> bool:
        """Whether carrying out ``plan`` changes the table. A run whose plan changes nothing takes no claim
        (tableformat/claims.py); the default, True, always takes one."""
        return True

    def still_valid(self, ctx: TableContext, plan: P) -> bool:
        """Checked once the run holds its claim: False when a rollback that ended between planning and the claim
        makes the plan unsafe, and the run then plans again. The default, True, suits a plan whose commit or deletes
        check what they replace themselves (a guarded commit, orphans no root names)."""
        return True

    prunes_audit: bool = False
    """Whether a run that wrote an audit record also prunes the ledger (``maintenance.audit.time-retained``)."""

    def audit_reasons(self, ctx: TableContext, plan: P, config: C) -> Callable[[str], str]:
        """Why each file (path relative to the root) the run deletes or retires goes, in one line, for the run's
        audit record (cleanup/kernel/audit.py). Default: the operation's name."""
        name = self.name
        return lambda path: name

    def audit_retired(self, ctx: TableContext, plan: P, result: R) -> Sequence[tuple[str, int]]:
        """(path, bytes) of the files the finished run's commits took out of the table (state ``retired`` in its
        audit record). Default: none (a run that stops midway has them read from its commits instead)."""
        return ()

    def execution_requests(self, plan: P, result: R) -> Mapping[str, int]:
        """The S3 requests carrying out ``plan`` would send beyond planning's and the run's claim and audit record
        (kernel/cost.py), estimated from the dry run's ``result``: by default a DeleteObjects per 1,000 files it
        deletes. Operations that write or delete in more steps add theirs (expiration: its journal)."""
        return {DELETE: batches(len(result.deleted_paths))}

    @abstractmethod
    def preview(self, ctx: TableContext, plan: P) -> R:
        """The dry-run result: exactly what ``execute(plan)`` would report if nothing changed meanwhile."""

    @abstractmethod
    def execute(self, ctx: TableContext, plan: P, config: C, progress: Progress | None) -> R:
        """Carry out the plan; report only what was actually done."""


def run_operation(
    operation: Operation[C, P, R],
    ctx: TableContext,
    overrides: Mapping[str, Any] | None = None,
    *,
    dry_run: bool = False,
    now_ms: int | None = None,
    progress: Progress | None = None,
) -> R:
    """Configure, plan, then preview (dry run) or execute one operation on one table; a run that changes the table
    holds a maintenance claim while it does (tableformat/claims.py). NotApplicableError, nothing read, when the
    operation does not apply to the table (``Operation.not_applicable``)."""
    reason = operation.not_applicable(ctx)
    if reason:
        raise NotApplicableError(operation.name, reason)
    config = operation.configure(ctx, coerce_overrides(operation.name, operation.parameters, overrides or {}))
    now = resolve_now(now_ms)
    tally = RequestTally()
    ctx = ctx.with_io(MeteredFileIO(ctx.io, tally))
    purged = None
    if not dry_run and undo_window_ms(ctx.options) > 0:
        purged = purge_due(ctx, now)
    with paused_gc() if operation.pauses_gc else old_objects_frozen():
        plan = operation.plan(ctx, config, now)
        if dry_run:
            result = operation.preview(ctx, plan)
            estimate = bookkeeping_requests(ctx, operation.changes(plan), operation.prunes_audit)
            estimate.update(operation.execution_requests(plan, result))
            result = priced(result, ctx, tally, estimate)
        elif not operation.changes(plan):
            result = operation.execute(ctx, plan, config, progress)
        else:
            result = _execute_claimed(operation, ctx, plan, config, now, progress, overrides)
        del plan  # its records go before the collector comes back: it finds no young objects to walk
    if not dry_run:
        result = priced(result, ctx, tally)
    if purged is not None and purged.note():
        result = dataclasses.replace(result, notes=(*result.notes, purged.note()))
    return result if result.operation else dataclasses.replace(result, operation=operation.name)


def _execute_claimed(
    operation: Operation[C, P, R],
    ctx: TableContext,
    plan: P,
    config: C,
    now: int,
    progress: Progress | None,
    overrides: Mapping[str, Any] | None = None,
) -> R:
    """Execute ``plan`` holding a maintenance claim: a rollback and this run never overlap (docs/reliability.md);
    TableBusyError, nothing changed, when a rollback holds the table. The run's audit record (cleanup/kernel/audit.py)
    is written before the claim is released, and the claim's owner is the run's id: a claim left behind without a
    record names the run that crashed."""
    run = AuditedRun.start(operation.name, ctx, auditable_overrides(operation.parameters, overrides or {}), now)
    claim = TableClaim(unguarded(ctx.store), MAINTENANCE, operation.name, owner=run.run_id)
    window = undo_window_ms(ctx.options) if operation.defers else 0
    deferral = Deferral(unguarded(ctx.store), run.run_id, now + window, operation.name) if window > 0 else None
    run.record.undo_until_ms = deferral.due_ms if deferral is not None else None

    def recheck() -> bool:
        return operation.still_valid(ctx, plan)

    valid = claim.acquire(alongside=recheck)
    try:
        if not valid:
            plan = operation.plan(ctx, config, now)
        with run.recording(prunes=operation.prunes_audit), deferring(deferral):
            run.reasons = operation.audit_reasons(ctx, plan, config)
            noting = run.noting(ctx)
            result = operation.execute(noting.with_io(GuardedFileIO(noting.io, claim.check)), plan, config, progress)
            run.finished(result.failures(), operation.audit_retired(ctx, plan, result))
        return _with_window(result, run)
    finally:
        claim.release()


def _with_window(result: R, run: AuditedRun) -> R:
    """The result with the run's id and what the undo window kept (and a note saying how to take it back)."""
    if not run.deferred:
        return dataclasses.replace(result, run_id=run.run_id)
    held = sum(size for _, size in run.deferred)
    until = run.record.undo_until_ms
    note = (
        f"kept {len(run.deferred)} file(s), {human_bytes(held)}, until {iso(until)} (maintenance.undo-window); "
        f"`tablefmt undo <table> {run.run_id}` restores what this run took"
    )
    return dataclasses.replace(
        result,
        run_id=run.run_id,
        deferred_paths=tuple(path for path, _ in run.deferred),
        deferred_bytes=held,
        undo_until_ms=until,
        notes=(*result.notes, note),
    )
