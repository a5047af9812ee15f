"""The audit record of a maintenance run (tableformat/audit.py, docs/audit.md), made from the run's ledger.

``run_operation`` starts an :class:`AuditedRun` before it takes the run's claim (whose owner is the run id) and
executes the plan inside :meth:`AuditedRun.recording`, a :func:`~.ledger.recording` nested in the maintainer's
(which still gets every note). When the run ends, returned or raised, and before the claim is released, what the
ledger noted becomes the run's record: every file the :class:`~.deleter.Deleter` confirmed deleted (state
``deleted``), and every file the run's commits took out of the table (state ``retired``: as the operation reports
them, :meth:`Operation.audit_retired`; for a run stopped midway, read back from the DELETE entries of the snapshots
it committed), each with the reason the operation gives (:meth:`Operation.audit_reasons`). A run that raised, or
whose result names deletes the store did not confirm, is recorded ``failed``. The record is written past any lease
guard (it is not table data, like the claim), and never turns a finished run into a failed one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from tableformat.audit import RunRecord, write_and_prune
from tableformat.clock import system_clock
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import TableFormatError
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.io.guarded import GuardedFileIO
from tableformat.io.metered import MeteredFileIO
from tableformat.model.audit import COMPLETED, DEFERRED, FAILED, RETIRED
from tableformat.model.manifest import FileKind
from tableformat.store import MetadataStore

from .ledger import CommitNotingFileIO, Ledger, recording

Reasons = Callable[[str], str]
"""Why a file (path relative to the table root) went, in one line."""


def unguarded(store: MetadataStore) -> MetadataStore:
    """The store past a maintainer's lease guard (claims and audit records are not table data), still metered when
    the run is (kernel/cost.py): a run whose lease was lost still removes its claim."""
    io = store.io
    if isinstance(io, MeteredFileIO) and isinstance(io.inner, GuardedFileIO):
        return store.through(io.over(io.inner.inner))
    return store.through(io.inner) if isinstance(io, GuardedFileIO) else store


class AuditedRun:
    """The record being made of one run, the reasons its operation gives, and what it retired."""

    def __init__(self, record: RunRecord, ctx: TableContext, now_ms: int) -> None:
        self.record = record
        self.ctx = ctx
        self.now_ms = now_ms
        self.reasons: Reasons = lambda path: record.operation
        self.retired: Sequence[tuple[str, int]] | None = None
        """What the finished run retired, as its operation reports it; None: read from the run's commits."""
        self.failures: tuple[str, ...] = ()
        self.deferred: list[tuple[str, int]] = []
        """What the undo window kept instead of deleting (known once :meth:`recording` ends)."""

    @classmethod
    def start(cls, operation: str, ctx: TableContext, overrides: Mapping[str, Any] | None, now_ms: int) -> AuditedRun:
        """A run of ``operation`` starting at ``now_ms`` (its record's times: that, plus the time that passes)."""
        began = system_clock()

        def clock() -> int:
            return now_ms + system_clock() - began

        return cls(RunRecord(operation, ctx.options, overrides, started_ms=now_ms, clock=clock), ctx, now_ms)

    def finished(self, failures: Sequence[str], retired: Sequence[tuple[str, int]]) -> None:
        """The run returned: what it could not do (its deletes whose outcome is unknown: the record's outcome is
        then ``failed``) and what its commits retired."""
        self.failures = tuple(failures)
        self.retired = retired

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def noting(self, ctx: TableContext) -> TableContext:
        """``ctx`` whose snapshot creations are noted in the run's ledger (the maintainer's IO notes them already)."""
        io = ctx.io
        while isinstance(io, ForwardingFileIO):
            if isinstance(io, CommitNotingFileIO):
                return ctx
            io = io.inner
        return ctx.with_io(CommitNotingFileIO(ctx.io, ctx.layout))

    @contextmanager
    def recording(self, *, prunes: bool = False) -> Iterator[None]:
        """Record what the block does (see the module docstring). ``prunes``: also prune the ledger by
        ``maintenance.audit.time-retained`` once recorded (snapshot expiration does, as part of a table's
        maintenance)."""
        record = self.record
        store = unguarded(self.ctx.store)
        outcome, detail = COMPLETED, ""
        with recording() as ledger:
            try:
                yield
            except BaseException as exc:
                outcome, detail = FAILED, " ".join(str(exc).split())[:500] or type(exc).__name__
                raise
            finally:
                self.deferred = ledger.deferrals()
                if not self.deferred:
                    record.undo_until_ms = None
                if self.failures and outcome == COMPLETED:
                    outcome = FAILED
                    detail = f"{len(self.failures)} file(s) not confirmed deleted: {self.failures[0]}"
                if record.enabled:
                    _rows(self, ledger, store)
                    if prunes:
                        write_and_prune(record, store, self.ctx.options, self.now_ms, outcome=outcome, detail=detail)
                    else:
                        record.write(store, outcome, detail)


def _rows(run: AuditedRun, ledger: Ledger, store: MetadataStore) -> None:
    deleted, committed = ledger.changes()
    run.record.snapshot_ids = tuple(committed)
    run.record.add_all(deleted, run.reasons)
    if run.deferred:
        run.record.add_all(run.deferred, run.reasons, DEFERRED)
    if run.retired is not None:
        run.record.add_all(run.retired, run.reasons, RETIRED)
        return
    for snapshot_id in committed:  # a run stopped midway: what its commits took out, read back
        for path, size in retired_files(store, snapshot_id):
            run.record.add(path, size, f"{run.reasons(path)}; replaced in snapshot {snapshot_id}", RETIRED)


def retired_files(store: MetadataStore, snapshot_id: int) -> list[tuple[str, int]]:
    """(path, bytes) of the files snapshot ``snapshot_id`` took out of the table: its delta's DELETE entries (files
    with an external path are named by their file name). [] when it cannot be read (logged by the caller's
    record: it then lists the deletions only)."""
    try:
        snapshot = store.read_snapshot(snapshot_id)
        schema = store.read_schema(snapshot.schema_id)
        paths = DataPaths(schema, store.partition_codec(schema))
        found = []
        for meta in store.read_manifest_list(snapshot.delta_manifest_list):
            for entry in store.read_manifest(meta.file_name):
                if entry.kind == FileKind.DELETE:
                    where = entry.file.external_path or paths.of_entry(entry)
                    found.append((where, entry.file.file_size))
        return found
    except (TableFormatError, OSError):
        return []
