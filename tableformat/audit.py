"""The audit ledger: what every run that deleted or retired files did, kept under ``.tablefmt/audit/`` (docs/audit.md).

A run that deletes or retires anything (maintenance operations through ``run_operation``, rollback, drop-partition,
tag delete) appends one record: a Parquet file ``<run id>.parquet`` created once with a conditional create (on S3 a
PUT with ``If-None-Match: *``) and never rewritten. The run id starts with the UTC start time, so file names sort by
start and ``--since`` needs no reads. A run that deleted and retired nothing writes nothing.

How a crash shows: one PUT per run, and no run half-recorded without saying so. The record is written once, at the
end of the run (also when it raises: outcome ``failed``, rows for exactly what the store confirmed). Only a process
that ends without running its ``finally`` (killed, power loss) leaves no record, and every such run held a claim
(tableformat/claims.py) whose owner *is* the run id: the claim is written before the run changes anything and
removed after its record is written. A claim left behind without a record is therefore a run that crashed before
recording, and the next run that finds it (every claiming run lists the claims) writes ``<run id>.crashed.parquet``
for it: operation, host, process and start from the claim, outcome ``crashed``, no rows, and who noticed it. An
expiration's journal is finished by the next expiration, whose record lists what it deleted then. This costs no
request in the normal case (the claim was written anyway); an intent record written before every run would double
the PUTs of every run to cover a case the claim already covers.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from tableformat.audit_store import run_id_of
from tableformat.clock import system_clock
from tableformat.errors import CorruptMetadataError
from tableformat.io.fileio import FileInfo
from tableformat.layout import AUDIT_CRASHED_SUFFIX
from tableformat.model.audit import (
    COMPLETED,
    CRASHED,
    DELETED,
    FAILED,
    UNFINISHED,
    AuditFile,
    AuditRun,
    FileColumns,
)
from tableformat.model.maintain import Claim
from tableformat.options import AUDIT_ENABLED, AUDIT_TIME_RETAINED, TableOptions
from tableformat.parallel import bounded_map, executor
from tableformat.store import MetadataStore
from tableformat.units import time_pair

log = logging.getLogger(__name__)


def new_run_id(started_ms: int) -> str:
    """``20261127T153012.345Z-1a2b3c4d5e6f``: the UTC start time (sortable), then 12 random hex digits."""
    start = dt.datetime.fromtimestamp(started_ms / 1000, dt.timezone.utc)
    return f"{start:%Y%m%dT%H%M%S}.{started_ms % 1000:03d}Z-{uuid.uuid4().hex[:12]}"


def started_ms_of(run_id: str) -> int | None:
    """The start time a run id begins with; None for an id of another shape."""
    try:
        stamp = dt.datetime.strptime(run_id[:19], "%Y%m%dT%H%M%S.%f").replace(tzinfo=dt.timezone.utc)
    except ValueError:
        return None
    return int(stamp.timestamp() * 1000)


def iso(ms: int | None) -> str | None:
    """An epoch-ms time as ISO 8601 UTC with milliseconds (``2026-11-27T15:30:12.345Z``)."""
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class RunRecord:
    """The record of one run being made: its rows are added as the run goes, and :meth:`write` creates it once."""

    def __init__(
        self,
        operation: str,
        options: TableOptions,
        overrides: Mapping[str, object] | None = None,
        *,
        clock: Callable[[], int] = system_clock,
        started_ms: int | None = None,
    ) -> None:
        self.operation = operation
        self.clock = clock
        self.started_ms = clock() if started_ms is None else started_ms
        self.run_id = new_run_id(self.started_ms)
        self.enabled = options.require(AUDIT_ENABLED)
        self.options = dict(options.raw)
        self.overrides = {k: _text(v) for k, v in (overrides or {}).items() if v is not None}
        self.files = FileColumns()
        self.written = False
        self.undo_until_ms: int | None = None
        """The end of the run's undo window, when it deferred anything."""
        self.undoes = ""
        """For an undo: the run it undid."""
        self.snapshot_ids: tuple[int, ...] = ()

    def add(self, path: str, size: int, reason: str, state: str = DELETED) -> None:
        self.files.add(path, size, reason, state)

    def add_all(self, files: Iterable[tuple[str, int]], reason_of: Callable[[str], str], state: str = DELETED) -> None:
        for path, size in files:
            self.files.add(path, size, reason_of(path), state)

    def due(self, outcome: str = COMPLETED) -> bool:
        """Whether :meth:`write` with ``outcome`` writes the record (see there)."""
        return not self.written and self.enabled and bool(len(self.files) or outcome != COMPLETED)

    def write(self, store: MetadataStore, outcome: str = COMPLETED, detail: str = "") -> bool:
        """Create the record (once) when the ledger is on and the run deleted or retired anything or did not
        complete (it may have deleted what the store did not confirm); True when created. Never raises: a record
        that cannot be written is logged (the run's own outcome stands)."""
        if not self.due(outcome):
            return False
        run = AuditRun(
            run_id=self.run_id,
            operation=self.operation,
            started_ms=self.started_ms,
            finished_ms=self.clock(),
            outcome=outcome,
            detail=detail,
            host=socket.gethostname(),
            pid=os.getpid(),
            options=self.options,
            overrides=self.overrides,
            undo_until_ms=self.undo_until_ms,
            undoes=self.undoes,
            snapshot_ids=self.snapshot_ids,
        )
        for attempt in range(2):  # once more after a transient failure (the create is conditional: never twice)
            try:
                self.written = store.write_audit_record(run, self.files)
                break
            except Exception as exc:  # a ledger failure never turns a done run into a failed one
                if attempt:
                    log.warning("could not write the audit record of run %s (%s): %s", self.run_id, self.operation, exc)
        return self.written


@contextmanager
def recorded(record: RunRecord, store: MetadataStore) -> Iterator[RunRecord]:
    """Write ``record`` when the block ends: ``completed``, or ``failed`` with the error's first line when it raises
    after a change (the rows added until then stand) or with a storage error (a change may have happened unseen);
    a refusal (a validation error before any change) records nothing."""
    try:
        yield record
    except BaseException as exc:
        if len(record.files) or isinstance(exc, OSError):
            record.write(store, FAILED, " ".join(str(exc).split())[:500] or type(exc).__name__)
        raise
    record.write(store, COMPLETED)


def file_size_or_zero(store: MetadataStore, path: str) -> int:
    """The size of a file about to be deleted, for its row (0 when the store cannot tell)."""
    try:
        return store.io.file_size(path)
    except OSError:
        return 0


def _text(value: object) -> str:
    if isinstance(value, dt.timedelta):
        return f"{int(value.total_seconds() * 1000)} ms"
    return str(value)


def note_crashed(store: MetadataStore, claims: Iterable[Claim], noticed_by: str, now_ms: int) -> list[str]:
    """For each claim left behind by a run that wrote no record, write that run's ``crashed`` record; returns the
    run ids recorded. Best effort (logged): the claim is removed anyway, and the next run cannot see it then."""
    claims = [c for c in claims if started_ms_of(c.owner) is not None]  # claims of runs that record at all
    if not claims:
        return []
    try:
        present = {run_id_of(info.name) for info in store.audit_infos()}
        recorded: list[str] = []
        for claim in claims:
            if claim.owner in present:
                continue
            run = AuditRun(
                run_id=claim.owner,
                operation=claim.operation,
                started_ms=started_ms_of(claim.owner) or claim.acquired_ms,
                finished_ms=None,
                outcome=CRASHED,
                detail=f"its claim was left behind without a record; noticed at {iso(now_ms)} by {noticed_by}",
                host=claim.host,
                pid=claim.pid,
            )
            if store.write_audit_record(run, FileColumns(), crashed=True):
                recorded.append(claim.owner)
        return recorded
    except Exception as exc:
        log.warning("could not record crashed runs on %s: %s", store.io.url(store.layout.root), exc)
        return []


# --- reading ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AuditRunSummary:
    """One run as ``tablefmt audit`` lists it."""

    run: AuditRun
    crash_noted: bool = False
    """Its record is the crash note a later run wrote."""

    def to_json(self) -> dict[str, object]:
        """``tablefmt audit --json``'s run (docs/json.md): times as ISO strings with their ``_ms``."""
        counts = self.run.counts
        return {
            "run_id": self.run.run_id,
            "operation": self.run.operation,
            **time_pair("started", self.run.started_ms),
            **time_pair("finished", self.run.finished_ms),
            "outcome": self.run.outcome,
            "detail": self.run.detail,
            "deleted_files": counts.deleted_files,
            "deleted_bytes": counts.deleted_bytes,
            "retired_files": counts.retired_files,
            "retired_bytes": counts.retired_bytes,
            "deferred_files": counts.deferred_files,
            "deferred_bytes": counts.deferred_bytes,
            "restored_files": counts.restored_files,
            "undoes": self.run.undoes or None,
            **time_pair("undo_until", self.run.undo_until_ms),
        }


@dataclass(frozen=True, slots=True)
class PathEvent:
    """What one run did to one file."""

    run: AuditRun
    file: AuditFile

    @property
    def time_ms(self) -> int:
        """When it happened: the run's end (its start for a run that never ended)."""
        return self.run.finished_ms if self.run.finished_ms is not None else self.run.started_ms

    def to_json(self) -> dict[str, object]:
        """An event of ``tablefmt audit --path --json`` (docs/json.md)."""
        return {
            "run_id": self.run.run_id,
            "operation": self.run.operation,
            **time_pair("time", self.time_ms),
            "reason": self.file.reason,
            "state": self.file.state,
            "size_bytes": self.file.size,
        }


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which records a question reads: started at or after ``since_ms``, of run ``run_id``."""

    since_ms: int | None = None
    run_id: str | None = None
    notes: list[str] = field(default_factory=list)

    def selects(self, run_id: str) -> bool:
        if self.run_id is not None and run_id != self.run_id:
            return False
        if self.since_ms is not None:
            started = started_ms_of(run_id)
            return started is None or started >= self.since_ms
        return True


def _selected(store: MetadataStore, query: AuditQuery) -> list[str]:
    """Record names the query reads, a run's own record before (and instead of) a crash note of it."""
    by_run: dict[str, str] = {}
    for info in store.audit_infos():
        run_id = run_id_of(info.name)
        if run_id is None or not query.selects(run_id):
            continue
        own = not info.name.endswith(AUDIT_CRASHED_SUFFIX)
        if own or run_id not in by_run:
            by_run[run_id] = info.name
    return [by_run[run_id] for run_id in sorted(by_run)]


def audit_runs(store: MetadataStore, query: AuditQuery) -> list[AuditRunSummary]:
    """The runs recorded (oldest first), from their records' footers, and the runs that hold a claim without a
    record yet (outcome ``unfinished``: running, or crashed and not noticed yet). An unreadable record is left out
    and named in ``query.notes``."""
    found = []
    for name in _selected(store, query):
        try:
            run = store.read_audit_run(name)
        except CorruptMetadataError as exc:
            query.notes.append(f"unreadable audit record: {exc}")
            continue
        if run is not None:
            found.append(AuditRunSummary(run, crash_noted=name.endswith(AUDIT_CRASHED_SUFFIX)))
    recorded = {summary.run.run_id for summary in found}
    found += [s for s in _unfinished(store, query) if s.run.run_id not in recorded]
    return sorted(found, key=lambda summary: summary.run.run_id)


def _unfinished(store: MetadataStore, query: AuditQuery) -> list[AuditRunSummary]:
    """Runs whose claim is present and whose record is not (their claim's owner is their run id)."""
    found = []
    for kind, owner in store.claim_names():
        if started_ms_of(owner) is None or not query.selects(owner) or store.audit_record_exists(owner):
            continue
        try:
            claim = store.read_claim(kind, owner)
        except CorruptMetadataError:
            continue
        if claim is None:
            continue
        run = AuditRun(
            run_id=owner,
            operation=claim.operation,
            started_ms=started_ms_of(owner) or claim.acquired_ms,
            finished_ms=None,
            outcome=UNFINISHED,
            detail=f"no record yet: still running, or crashed (its claim lapses at {iso(claim.expires_ms)}; the "
            "next run that takes a claim then records it as crashed)",
            host=claim.host,
            pid=claim.pid,
        )
        found.append(AuditRunSummary(run))
    return found


PATH_READERS = 8
"""Records read at once for a path question (each read is a footer and, rarely, a row group: pyarrow releases the
GIL for both, so a ledger of many small records is read in parallel even on local disk)."""


def path_events(store: MetadataStore, path: str, query: AuditQuery) -> list[PathEvent]:
    """Every recorded event of the file ``path`` (relative to the table root), oldest run first."""

    def events_in(name: str) -> list[PathEvent]:
        try:
            files = store.read_audit_files(name, path)
            run = store.read_audit_run(name) if files else None
        except CorruptMetadataError as exc:
            query.notes.append(f"unreadable audit record: {exc}")
            return []
        return [PathEvent(run, f) for f in files] if run is not None else []

    names = _selected(store, query)
    with executor(min(PATH_READERS, len(names)), "tablefmt-audit") as pool:
        return [event for _, found in bounded_map(pool, events_in, names, 4 * PATH_READERS) for event in found]


def audit_run_files(store: MetadataStore, run_id: str) -> list[AuditFile]:
    """The file rows of run ``run_id`` (its own record; a crash note has none)."""
    names = _selected(store, AuditQuery(run_id=run_id))
    return store.read_audit_files(names[0]) if names else []


PRUNE_SLACK_MS = 86_400_000
"""Records are deleted once the oldest is this much past the retention, all that are past it at once: at most one
delete request a day for a table expired hourly, instead of one per run."""


def write_and_prune(record: RunRecord, store: MetadataStore, options: TableOptions, now_ms: int, **how: str) -> None:
    """Write ``record`` and prune the ledger (:func:`prune_audit`) once it is written; on object stores the ledger
    is listed while the record is written (one round trip for both)."""
    if not record.due(how.get("outcome", COMPLETED)):
        return
    with executor(2 if store.io.is_object_store else 1, "tablefmt-audit") as pool:
        listing = pool.submit(store.audit_infos)
        record.write(store, **how)
        try:
            infos = listing.result()
        except Exception as exc:
            log.warning("could not list the audit ledger of %s: %s", store.io.url(store.layout.root), exc)
            return
    if record.written:
        prune_audit(store, options, now_ms, infos)


def prune_audit(
    store: MetadataStore, options: TableOptions, now_ms: int, infos: Sequence[FileInfo] | None = None
) -> list[str]:
    """Delete the records of runs that started longer than ``maintenance.audit.time-retained`` before ``now_ms``
    (judged by the start time in the name: no reads), once the oldest is :data:`PRUNE_SLACK_MS` past it; returns the
    names deleted. ``infos``: the ledger as listed (else it is listed here). Never raises (logged)."""
    retained = options.get(AUDIT_TIME_RETAINED)
    if retained is None:
        return []
    cutoff = now_ms - retained
    try:
        old = []
        for info in store.audit_infos() if infos is None else infos:
            run_id = run_id_of(info.name)
            started = started_ms_of(run_id) if run_id else None
            if started is not None and started < cutoff:
                old.append((started, info.name))
        if not old or min(old)[0] >= cutoff - PRUNE_SLACK_MS:
            return []
        return store.delete_audit_records([name for _, name in old])
    except Exception as exc:
        log.warning("could not prune the audit ledger of %s: %s", store.io.url(store.layout.root), exc)
        return []
