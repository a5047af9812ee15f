"""One maintainer pass over one table: probe cheaply, and when anything is due, lease the table and run it.

The probe is three small requests, made at once on object stores: the maintain state (``.tablefmt/maintain-state``),
the LATEST hint, and the ``schema/`` listing. With a state, an unchanged table (same latest snapshot, same schema)
runs only the operations whose interval has passed; nothing else is read. When something is due, the table is
leased, probed again under the lease (another maintainer may have just done the work: then nothing runs), and the
due operations run in the registry's order through a FileIO that checks the lease before every change, while the
keep-up count (keep_up.py) reads the snapshots committed since the last pass: both read manifest lists and manifests
through one cache (io/write_once_cache.py), and a delete that could remove what the count has still to read waits
for it (keep_up.DeleteGate). Each operation's failure is reported and the later ones still run; an operation that
lost a race with snapshot expiration (the snapshot it read was expired meanwhile, SnapshotExpiredWhileReadingError)
is reported as such, not as a failure, and is due again after ``backlog-retry``; one that found a rollback holding
the table (TableBusyError) changed nothing and is due again at the next poll. One that does not apply to the table
(``Operation.not_applicable``: a rewrite on a primary-key table) is reported in ``not_applicable`` with its reason,
never run, and not due again until the schema changes. The state is written last, by the lease holder.

When the lease is lost (expired, or taken over), nothing more changes: the operations that finished are reported
with their results, the one that was running with what it deleted and committed until then (its ledger, a
StoppedResult), the later ones do not run, and the state is not written; the report says why in ``lease_lost``.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tableformat.clock import Clock, system_clock
from tableformat.context import TableContext
from tableformat.errors import (
    CorruptMetadataError,
    LeaseLostError,
    SnapshotExpiredWhileReadingError,
    TableBusyError,
    TableFormatError,
)
from tableformat.io.factory import open_location
from tableformat.io.guarded import GuardedFileIO
from tableformat.io.write_once_cache import WriteOnceCache
from tableformat.layout import LATEST, TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.maintain import HourStats, MaintainState, OperationState
from tableformat.parallel import executor, resolve_parallelism
from tableformat.store import MetadataStore
from tableformat.threads import thread_pool
from tableformat.undo_store import held_paths
from tableformat.units import time_pair

from ..kernel import Cadence, Operation, OperationResult, run_operation
from ..kernel.deferral import undo_window_ms
from ..kernel.ledger import CommitNotingFileIO, recording
from ..registry import OPERATIONS
from ..snapshots import SNAPSHOT_EXPIRATION
from .config import MaintainSettings
from .keep_up import (
    CountProgress,
    DeleteGate,
    KeepUp,
    assess,
    count_ingest,
    keep_up_workers,
    merge_hours,
    operation_limits,
)
from .lease import TableLease
from .targets import Opener, TableTarget

if TYPE_CHECKING:
    from ..erase import deadline as erasure_deadlines
else:  # imported after a pass's snapshot expiration ran, not by an idle pass (start-up: docs/benchmarks.md)
    erasure_deadlines = lazy_module("tableformat.cleanup.erase.deadline")

log = logging.getLogger(__name__)

BACKLOG_HISTORY = 10
NEVER = 2**62
"""The due time of an operation the table's options do not ask for."""


@dataclass(frozen=True, slots=True)
class Probe:
    """What three small reads tell about a table."""

    state: MaintainState | None
    latest_id: int | None
    schema_id: int | None

    @property
    def changed(self) -> bool:
        state = self.state
        return state is None or state.latest_snapshot_id != self.latest_id or self.latest_id is None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableReport:
    """What one pass did on one table."""

    table: str
    location: str
    operations: tuple[tuple[str, OperationResult], ...] = ()
    errors: tuple[tuple[str, str], ...] = ()
    """(operation or '' for the table itself, one-line error)."""
    lost_races: tuple[tuple[str, str], ...] = ()
    """(operation, one line): operations that stopped because snapshot expiration removed, while they read it, the
    snapshot they worked on (SnapshotExpiredWhileReadingError, after their own re-plans). Not failures: nothing is
    wrong with the table, and the operation is due again after ``backlog-retry``."""
    not_applicable: tuple[tuple[str, str], ...] = ()
    """(operation, reason): operations the table's options ask for that do not apply to this kind of table (e.g.
    compaction or record expiration on a primary-key table). Skipped until the schema changes; not failures."""
    skipped: str = ""
    """Why nothing ran ('' when something ran): nothing due, leased by another maintainer, ..."""
    lease_lost: str = ""
    """Why the pass lost its lease midway ('' when it did not): expired or taken over. ``operations`` then holds
    what ran until the loss (the operation it stopped as a StoppedResult: what it deleted and committed), and the
    state was not written (the next pass judges from the previous one)."""
    keep_up: KeepUp | None = None
    next_due_ms: int | None = None
    """The earliest time an operation of this table is due again (None: unknown, e.g. after an error)."""
    last_success_ms: int | None = None
    """When a pass last ran on the table without error (from its maintain state; None: never)."""
    watch_changes: bool = False
    """Whether an operation of this table is due on any change (the watcher then polls it)."""
    seconds: float = 0.0
    held_bytes: int | None = None
    """Bytes the undo window holds after the pass (``maintenance.undo-window``; None when the window is off)."""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def reclaimed_bytes(self) -> int:
        return sum(r.deleted_bytes for _, r in self.operations if not r.dry_run)

    @property
    def backlog(self) -> int:
        return sum(r.backlog for _, r in self.operations)

    @property
    def requests(self) -> dict[str, int]:
        """{kind: count} of the S3 requests the pass's operations sent (a dry pass: would send; docs/cost.md)."""
        total: Counter[str] = Counter()
        for _, result in self.operations:
            total.update(dict(result.requests))
        return dict(sorted(total.items()))

    @property
    def requests_usd(self) -> float:
        """What those requests cost by each table's price table."""
        return round(sum(r.requests_usd for _, r in self.operations), 8)

    @property
    def freed_usd_per_month(self) -> float:
        """What storing the bytes the pass deleted cost a month (0 for a dry pass, as reclaimed_bytes)."""
        return round(sum(r.freed_usd_per_month for _, r in self.operations if not r.dry_run), 8)

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "location": self.location,
            "operations": {name: result.to_json() for name, result in self.operations},
            "ok": self.ok,
            "error": "; ".join(f"{op}: {msg}" if op else msg for op, msg in self.errors) or None,
            "lost_races": dict(self.lost_races),
            "not_applicable": dict(self.not_applicable),
            "skipped": self.skipped or None,
            "lease_lost": self.lease_lost or None,
            "keep_up": None if self.keep_up is None else self.keep_up.to_json(),
            **time_pair("next_due", self.next_due_ms),
            **time_pair("last_success", self.last_success_ms),
            "duration_ms": round(self.seconds * 1000),
            "held_bytes": self.held_bytes,
        }


def probe(store: MetadataStore, schema_id: int | None = None) -> Probe:
    """The state, the LATEST hint and the newest schema id (``schema_id``: as discovery just listed it; None: list
    ``schema/`` here). An unreadable state counts as none."""
    reads: list[Callable[[], Any]] = [lambda: _state(store), lambda: store.read_hint(LATEST)]
    if schema_id is None:
        reads.append(store.schema_ids)
    with executor(len(reads) if store.io.latency_bound else 1, "tablefmt-probe") as pool:  # at once: one round trip
        found = list(pool.map(lambda read: read(), reads))
    if schema_id is None:
        schema_id = found[2][-1] if found[2] else None
    return Probe(found[0], found[1], schema_id)


def _state(store: MetadataStore) -> MaintainState | None:
    try:
        return store.read_maintain_state()
    except CorruptMetadataError as exc:
        log.warning("ignoring an unreadable maintain state: %s", exc)
        return None


def _operations(settings: MaintainSettings) -> list[Operation[Any, Any, Any]]:
    return [op for op in OPERATIONS if op.name in settings.operations]


def due_names(settings: MaintainSettings, found: Probe, now_ms: int) -> list[str]:
    """The operations due now, judged from the probe alone (a new schema makes every operation due: options may
    have changed, and whether each is configured is decided once the table is open)."""
    state = found.state
    if state is None or state.schema_id != found.schema_id:
        return [op.name for op in _operations(settings)]
    due = []
    for op in _operations(settings):
        known = state.operations.get(op.name)
        if known is None or now_ms >= known.next_due_ms or (known.on_change and found.changed):
            due.append(op.name)
    return due


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass(slots=True)
class _Run:
    """The running account of one table's pass."""

    ran: list[tuple[str, OperationResult]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    lost_races: list[tuple[str, str]] = field(default_factory=list)
    not_applicable: list[tuple[str, str]] = field(default_factory=list)
    states: dict[str, OperationState] = field(default_factory=dict)
    lease_lost: str = ""

    def lose_lease(self, operation: str, exc: LeaseLostError) -> None:
        """The lease was lost during ``operation`` ('' for the pass's own writes): nothing more may change."""
        self.lease_lost = _one_line(exc)
        self.errors.append((operation, self.lease_lost))


def _run_operations(
    ctx: TableContext,
    due: list[str],
    before: MaintainState | None,
    settings: MaintainSettings,
    clock: Clock,
    dry_run: bool,
) -> _Run:
    run = _Run(states=dict(before.operations) if before else {})
    for op in _operations(settings):
        if op.name not in due:
            continue
        now = clock()
        try:
            configured, cadence = op.wanted(ctx), op.cadence(ctx)
        except TableFormatError as exc:
            configured, cadence = True, Cadence(interval_ms=settings.poll_interval_ms, on_change=True)
            log.debug("cadence of %s: %s", op.name, exc)
        reason = op.not_applicable(ctx) if configured else ""
        if reason:
            run.not_applicable.append((op.name, reason))
        if not configured or reason:  # until the options change (a new schema makes every operation due again)
            run.states[op.name] = OperationState(last_run_ms=now, next_due_ms=NEVER, on_change=False)
            continue
        previous = run.states.get(op.name, OperationState())
        try:
            with recording() as ledger:
                result = run_operation(op, ctx, {}, dry_run=dry_run, now_ms=now)
        except LeaseLostError as exc:  # what it changed until then is reported; the later operations do not run
            run.ran.append((op.name, ledger.stopped(_one_line(exc))))
            run.lose_lease(op.name, exc)
            return run
        except SnapshotExpiredWhileReadingError as exc:  # a lost race with snapshot expiration, not a failure
            log.info("%s on %s lost a race with snapshot expiration: %s", op.name, ctx.location, exc)
            run.lost_races.append((op.name, _one_line(exc)))
            due_again = now + settings.backlog_retry_ms  # its work is still to do: soon, as after a bounded run
            run.states[op.name] = replace(previous, last_run_ms=now, next_due_ms=due_again, on_change=cadence.on_change)
            continue
        except Exception as exc:  # one operation's failure must not stop the others
            log.debug("%s failed on %s", op.name, ctx.location, exc_info=True)
            failed = not isinstance(exc, TableBusyError)  # a rollback holds the table: no failure, due again soon
            if failed:
                run.errors.append((op.name, _one_line(exc)))
            run.states[op.name] = replace(
                previous,
                last_run_ms=now,
                next_due_ms=now + settings.poll_interval_ms,
                failures=previous.failures + failed,
                last_error=_one_line(exc) if failed else "",
                on_change=cadence.on_change,
            )
            continue
        run.ran.append((op.name, result))
        run.states[op.name] = _after(run, op.name, result, previous, now, cadence, settings)
    if not dry_run and any(name == SNAPSHOT_EXPIRATION.name for name, _ in run.ran):
        _complete_erasures(ctx, run, clock())
    return run


def _complete_erasures(ctx: TableContext, run: _Run, now: int) -> None:
    """Purge the erasures past their deadline (cleanup/erase/deadline.py) after the pass's snapshot expiration; one
    still held by a tag, branch or consumer is this pass's error."""
    try:
        result = erasure_deadlines.complete_due_erasures(ctx, now)
    except LeaseLostError as exc:
        run.lose_lease("erase", exc)
        return
    except TableFormatError as exc:
        run.errors.append(("erase", _one_line(exc)))
        return
    if result is not None:
        run.ran.append(("erase", result))
        late = erasure_deadlines.PAST_DUE
        run.errors += [("erase", note) for note in result.notes if late in note or "cannot be read" in note]


def _after(
    run: _Run,
    name: str,
    result: OperationResult,
    previous: OperationState,
    now: int,
    cadence: Cadence,
    settings: MaintainSettings,
) -> OperationState:
    """The state of an operation that ran (its undeleted files are the pass's errors): when it is due again."""
    failures = result.failures()
    if failures:
        run.errors.append((name, f"{len(failures)} file(s) could not be deleted, e.g. {failures[0]}"))
    wait = (
        settings.poll_interval_ms if failures else settings.backlog_retry_ms if result.backlog else cadence.interval_ms
    )
    return OperationState(
        last_run_ms=now,
        next_due_ms=now + wait,
        backlog=result.backlog,
        on_change=cadence.on_change,
        failures=previous.failures + 1 if failures else 0,
    )


def _new_state(
    found: Probe, run: _Run, ingest: tuple[list[HourStats], int], settings: MaintainSettings, now_ms: int
) -> MaintainState:
    before = found.state or MaintainState()
    fresh, counted = ingest
    reclaimed = sum(r.deleted_bytes for _, r in run.ran if not r.dry_run)
    hour = now_ms - now_ms % 3_600_000
    fresh.append(HourStats(hour_ms=hour, reclaimed_bytes=reclaimed))
    backlog = sum(op.backlog for op in run.states.values())
    return MaintainState(
        latest_snapshot_id=found.latest_id,
        schema_id=found.schema_id,
        counted_snapshot_id=counted,
        operations=run.states,
        hours=merge_hours(before.hours, fresh, now_ms, settings.keep_up_window_ms),
        backlog_history=(*before.backlog_history, backlog)[-BACKLOG_HISTORY:],
        last_success_ms=now_ms if not run.errors else before.last_success_ms,
    )


def _next_due(state: MaintainState) -> tuple[int | None, bool]:
    dues = [op.next_due_ms for op in state.operations.values() if op.next_due_ms < NEVER]
    return (min(dues) if dues else None), any(op.on_change for op in state.operations.values())


def _skipped(
    target: TableTarget, reason: str, started: float, state: MaintainState | None = None, **more: Any
) -> TableReport:
    next_due, on_change = _next_due(state) if state is not None else (None, False)
    return TableReport(
        table=target.name,
        location=target.location,
        skipped=reason,
        next_due_ms=next_due,
        watch_changes=on_change,
        last_success_ms=(state.last_success_ms or None) if state is not None else None,
        seconds=time.perf_counter() - started,
        **more,
    )


def maintain_table(
    target: TableTarget,
    settings: MaintainSettings,
    *,
    owner: str,
    clock: Clock = system_clock,
    dry_run: bool = False,
    opener: Opener = open_location,
) -> TableReport:
    """One pass over one table (see the module doc). Never raises for the table's own problems: they are in the
    report's ``errors``; a dry run takes no lease and writes nothing."""
    started = time.perf_counter()
    try:
        file_io, root = opener(target.location, dict(settings.storage_options))
        store = MetadataStore(file_io, TableLayout(root))
        found = probe(store, target.schema_id)
        if found.schema_id is None:
            return _skipped(target, "the table is gone (no schema)", started)
        if not due_names(settings, found, clock()):
            return _skipped(target, "nothing due", started, found.state)
        if dry_run:
            return _pass(target, settings, store, found, clock, None, started)
        lease = TableLease(store, owner, settings.lease_duration_ms, clock)
        if not lease.acquire():
            holder = lease.holder
            who = "another maintainer" if holder is None else f"{holder.host} (pid {holder.pid})"
            return _skipped(target, f"leased by {who}", started, found.state)
        try:
            return _pass(target, settings, store, probe(store), clock, lease, started)
        finally:
            lease.release()
    except Exception as exc:  # a failing table must not stop the others
        log.debug("maintaining %s failed", target.location, exc_info=True)
        return TableReport(
            table=target.name,
            location=target.location,
            errors=(("", _one_line(exc)),),
            seconds=time.perf_counter() - started,
        )


def _pass(
    target: TableTarget,
    settings: MaintainSettings,
    store: MetadataStore,
    found: Probe,
    clock: Clock,
    lease: TableLease | None,
    started: float,
) -> TableReport:
    now = clock()
    due = due_names(settings, found, now)
    if not due:
        return _skipped(target, "nothing due (another maintainer has just run it)", started, found.state)
    ctx, run, ingest = _count_and_run(target, settings, store, found, clock, lease, now, due)
    state = _new_state(found, run, ingest, settings, clock())
    if lease is not None and not run.lease_lost:
        try:
            ctx.store.write_maintain_state(state)
        except LeaseLostError as exc:
            run.lose_lease("", exc)
    if run.lease_lost:
        return TableReport(
            table=target.name,
            location=target.location,
            operations=tuple(run.ran),
            errors=tuple(run.errors),
            not_applicable=tuple(run.not_applicable),
            lease_lost=run.lease_lost,
            seconds=time.perf_counter() - started,
        )
    next_due, on_change = _next_due(state)
    limits = operation_limits(ctx, _operations(settings))
    return TableReport(
        table=target.name,
        location=target.location,
        operations=tuple(run.ran),
        errors=tuple(run.errors),
        lost_races=tuple(run.lost_races),
        not_applicable=tuple(run.not_applicable),
        keep_up=assess(state, clock(), settings.keep_up_window_ms, limits, settings.backlog_retry_ms),
        next_due_ms=next_due,
        watch_changes=on_change,
        last_success_ms=state.last_success_ms or None,
        seconds=time.perf_counter() - started,
        held_bytes=_held_bytes(ctx),
    )


_Ingest = tuple[tuple[list[HourStats], int], tuple[str, str] | None]


def _count_and_run(
    target: TableTarget,
    settings: MaintainSettings,
    store: MetadataStore,
    found: Probe,
    clock: Clock,
    lease: TableLease | None,
    now: int,
    due: list[str],
) -> tuple[TableContext, _Run, tuple[list[HourStats], int]]:
    """The due operations, with the keep-up count alongside (its error is the run's): the context they ran in, the
    run, and the count. Both read manifest lists and manifests through one cache, so each is fetched once."""
    cached = WriteOnceCache(store.io, store.layout.is_write_once)
    schema = store.read_schema(found.schema_id) if found.schema_id is not None else None  # as the probe listed
    reading = TableContext.of(target.location, cached, store.layout, schema)
    reading = reading.with_options(settings.overrides_for(target))
    progress = CountProgress()
    with thread_pool(1, "tablefmt-keep-up-count") as pool:
        counting = pool.submit(_count_ingest, reading, found, settings, now, progress)
        ctx = reading
        if lease is not None:
            gate = DeleteGate(progress, store.layout)
            ctx = reading.with_io(GuardedFileIO(CommitNotingFileIO(cached, store.layout), lease.check, gate))
        run = _run_operations(ctx, due, found.state, settings, clock, dry_run=lease is None)
        ingest, ingest_error = counting.result()
    if ingest_error is not None:
        run.errors.append(ingest_error)
    return ctx, run, ingest


def _count_ingest(
    ctx: TableContext, found: Probe, settings: MaintainSettings, now: int, progress: CountProgress
) -> _Ingest:
    """The keep-up count of the snapshots since the last one counted ((stats, counted id), error or None), made
    while the operations run: their deletes wait for it where they could remove what it reads (DeleteGate)."""
    counted = (found.state or MaintainState()).counted_snapshot_id
    try:
        workers = keep_up_workers(resolve_parallelism(ctx.options, ctx.io, None), ctx.io.latency_bound)
        window = settings.keep_up_window_ms
        return count_ingest(ctx.store, counted, found.latest_id, now, window, workers, progress), None
    except (TableFormatError, OSError) as exc:  # reported after the operations, which still run
        return ([], counted), ("keep-up", _one_line(exc))
    finally:
        progress.finish()


def _held_bytes(ctx: TableContext) -> int | None:
    """Bytes the undo window holds, on a table whose window is on (None: off, or its lists cannot be read)."""
    if undo_window_ms(ctx.options) <= 0:
        return None
    try:
        return sum(held_paths(ctx.store.held_runs()).values())
    except (TableFormatError, OSError):
        return None
