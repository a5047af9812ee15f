"""The audit ledger's records (``.tablefmt/audit/``): one immutable record set per run that deleted or retired
files, with one row per file (docs/audit.md). Bytes in :mod:`tableformat.codec.audit_codec`, read and written only
by the store (:mod:`tableformat.audit_store`), written and queried through :mod:`tableformat.audit`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DELETED = "deleted"
"""The file is gone: the run deleted it and the store confirmed it."""
RETIRED = "retired"
"""The run's commit took the file out of the table's latest snapshot (compaction, record and partition expiry,
drop-partition); the file stays for older snapshots until snapshot expiration deletes it (a later ``deleted`` row)."""
DEFERRED = "deferred"
"""Kept by the undo window (``maintenance.undo-window``): the metadata change is done, the file stays until
``due_ms`` (then a later run records it ``deleted``, or an undo records it ``restored``)."""
RESTORED = "restored"
"""Back in the table: the row's run (``tablefmt undo``) undid run ``undoes``, which deferred or retired the file."""
STATES = (DELETED, RETIRED, DEFERRED, RESTORED)

COMPLETED = "completed"
"""The run finished."""
FAILED = "failed"
"""The run raised after (possibly) changing something; its rows are what the store confirmed before that."""
CRASHED = "crashed"
"""Written by a later run that found this run's claim left behind and no record of it: the process ended without
recording (killed, power loss). What it deleted is not itemised; rows a later run completed (an expiration journal
finished) are in that run's record."""
UNFINISHED = "unfinished"
"""Never written: how a reader of the ledger shows a run that holds a claim and has no record yet (still running,
or crashed and not noticed yet)."""
OUTCOMES = (COMPLETED, FAILED, CRASHED)


@dataclass(frozen=True, slots=True)
class AuditFile:
    """One file a run deleted (or retired, deferred, restored)."""

    path: str
    """Relative to the table root."""
    size: int
    reason: str
    """Why: which expired snapshot or tag, which partition and its time, which rule and cutoff, the orphan's age."""
    state: str = DELETED
    """One of STATES."""
    due_ms: int | None = None
    """For a deferred file: when it may be deleted (the end of its undo window)."""
    undoes: str = ""
    """For a restored file: the run whose deletion this undoes."""


@dataclass(frozen=True, slots=True)
class FileColumns:
    """The file rows of a run being recorded, column by column (a run of 100,000 files makes no object per file)."""

    paths: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)

    def add(self, path: str, size: int, reason: str, state: str = DELETED) -> None:
        self.paths.append(path)
        self.sizes.append(size)
        self.reasons.append(reason)
        self.states.append(state)

    def __len__(self) -> int:
        return len(self.paths)


@dataclass(frozen=True, slots=True)
class RunCounts:
    """A run's totals, kept in its record's footer so that listing runs reads no rows."""

    deleted_files: int = 0
    deleted_bytes: int = 0
    retired_files: int = 0
    retired_bytes: int = 0
    deferred_files: int = 0
    deferred_bytes: int = 0
    restored_files: int = 0
    restored_bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRun:
    """One run's record: who ran what, with which options, when, and how it ended."""

    run_id: str
    """Sortable by start time: ``<UTC start yyyymmddThhmmss.mmmZ>-<12 hex digits>``; the record's file name."""
    operation: str
    started_ms: int
    finished_ms: int | None
    """None for a crashed run (it never finished)."""
    outcome: str
    """One of OUTCOMES."""
    detail: str = ""
    """One line: the error of a failed run, who noticed a crashed one."""
    host: str = ""
    pid: int = 0
    options: Mapping[str, str] = field(default_factory=dict)
    """The table options in force (only those the operation reads: its option keys)."""
    overrides: Mapping[str, str] = field(default_factory=dict)
    """The per-run overrides given (API keywords, CLI flags), as text."""
    undo_until_ms: int | None = None
    """Until when the run can be undone (its deferred files' window); None for a run that deferred nothing."""
    undoes: str = ""
    """For an undo: the run it undid."""
    snapshot_ids: tuple[int, ...] = ()
    """The snapshots the run committed (an undo of a run that retired files reverses their changes)."""
    counts: RunCounts = field(default_factory=RunCounts)
    """Totals of the run's rows (filled in by the codec when it encodes the rows)."""
