"""What an operation changed so far, kept while it runs: the account of a run that stops midway.

An operation reports what it did in its result, which it returns only when it finishes. When it stops midway (the
maintainer's lease is lost, and the guard refuses its next change), the changes it already made must still be
reported. Inside ``with recording() as ledger:`` every file the :class:`~.deleter.Deleter` confirms deleted is
noted in ``ledger`` (with its size), and so is every snapshot file created through a :class:`CommitNotingFileIO`
(the commit point of every commit, also when the commit raises afterwards, e.g. when its LATEST hint write is
refused); ``ledger.stopped(why)`` turns that into the operation's result. Notes are taken in the thread that runs
the operation (a context variable): deleters and commits run there, and the parallel batches of a deleter are noted
by the thread that called it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.layout import SNAPSHOT_PREFIX, TableLayout, parse_id

from .result import OperationResult

_CURRENT: ContextVar[Ledger | None] = ContextVar("tablefmt_operation_ledger", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoppedResult(OperationResult):
    """The result of an operation that stopped before it finished: what it deleted and committed until then."""

    stopped: str
    """Why it stopped (one line)."""
    snapshot_ids: tuple[int, ...] = ()
    """Snapshots it committed before it stopped."""

    def to_json(self) -> dict[str, Any]:
        document = OperationResult.to_json(self)
        document.update(stopped=self.stopped, snapshot_ids=list(self.snapshot_ids))
        return document

    def summary(self) -> tuple[str, ...]:
        done = [f"deleting {len(self.deleted_paths)} file(s)"] if self.deleted_paths else []
        if self.snapshot_ids:
            done.append(f"committing snapshot(s) {', '.join(map(str, self.snapshot_ids))}")
        what = f"after {' and '.join(done)}" if done else "nothing deleted or committed"
        return (f"stopped before finishing, {what}",)


class Ledger:
    """Files deleted and snapshots committed inside one ``recording()`` (thread-safe). A recording opened inside
    another (a run's audit record, cleanup/kernel/audit.py, inside the maintainer's account) passes every note on to
    the outer one too."""

    def __init__(self, parent: Ledger | None = None) -> None:
        self.parent = parent
        self._lock = threading.Lock()
        self.deleted: list[tuple[str, int]] = []
        """(path relative to the table root, bytes) of every file confirmed deleted, in order of confirmation."""
        self.snapshot_ids: list[int] = []
        self.deferred: list[tuple[str, int]] = []
        """(path relative to the table root, bytes) of every file the undo window keeps instead (kernel/deferral.py)."""

    def stopped(self, why: str) -> StoppedResult:
        """The result of the operation that stopped for ``why`` after the changes noted here."""
        with self._lock:
            return StoppedResult(
                stopped=why,
                deleted_paths=tuple(path for path, _ in self.deleted),
                deleted_bytes=sum(size for _, size in self.deleted),
                snapshot_ids=tuple(self.snapshot_ids),
                deferred_paths=tuple(path for path, _ in self.deferred),
                deferred_bytes=sum(size for _, size in self.deferred),
            )

    def changes(self) -> tuple[list[tuple[str, int]], list[int]]:
        """Copies of (the deletions, the commits) noted so far."""
        with self._lock:
            return list(self.deleted), list(self.snapshot_ids)

    def add_deletion(self, path: str, size: int) -> None:
        with self._lock:
            self.deleted.append((path, size))
        if self.parent is not None:
            self.parent.add_deletion(path, size)

    def deferrals(self) -> list[tuple[str, int]]:
        """A copy of the files held by the undo window so far."""
        with self._lock:
            return list(self.deferred)

    def add_deferral(self, path: str, size: int) -> None:
        with self._lock:
            self.deferred.append((path, size))
        if self.parent is not None:
            self.parent.add_deferral(path, size)

    def add_commit(self, snapshot_id: int) -> None:
        with self._lock:
            self.snapshot_ids.append(snapshot_id)
        if self.parent is not None:
            self.parent.add_commit(snapshot_id)

    def remove_commit(self, snapshot_id: int) -> None:
        with self._lock:
            if snapshot_id in self.snapshot_ids:
                self.snapshot_ids.remove(snapshot_id)
        if self.parent is not None:
            self.parent.remove_commit(snapshot_id)


@contextmanager
def recording() -> Iterator[Ledger]:
    """Note the changes of the operations run inside (in this thread) in a new ledger (and in the ledger of an
    enclosing recording)."""
    ledger = Ledger(_CURRENT.get())
    token = _CURRENT.set(ledger)
    try:
        yield ledger
    finally:
        _CURRENT.reset(token)


def note_deleted(path: str, size: int) -> None:
    """A file confirmed deleted (relative path, bytes); nothing happens outside ``recording()``."""
    ledger = _CURRENT.get()
    if ledger is not None:
        ledger.add_deletion(path, size)


def note_deferred(path: str, size: int) -> None:
    """A file the undo window keeps instead of deleting (relative to the table root, bytes); nothing happens outside
    ``recording()``."""
    ledger = _CURRENT.get()
    if ledger is not None:
        ledger.add_deferral(path, size)


def note_committed(snapshot_id: int) -> None:
    """A snapshot an operation committed; nothing happens outside ``recording()``."""
    ledger = _CURRENT.get()
    if ledger is not None:
        ledger.add_commit(snapshot_id)


class CommitNotingFileIO(ForwardingFileIO):
    """Forwards to ``inner``; notes each snapshot file of ``layout`` it creates (a commit) in the current ledger, and
    takes the note back when that file is deleted again (a committer undoing a snapshot written below newer ones)."""

    def __init__(self, inner: FileIO, layout: TableLayout) -> None:
        super().__init__(inner)
        self.snapshot_dir = layout.snapshot_dir.rstrip("/")

    def _snapshot_id(self, path: str) -> int | None:
        directory, _, name = path.rpartition("/")
        return parse_id(name, SNAPSHOT_PREFIX) if directory.rstrip("/") == self.snapshot_dir else None

    def write_if_absent(self, path: str, data: bytes) -> bool:
        created = self.inner.write_if_absent(path, data)
        snapshot_id = self._snapshot_id(path) if created else None
        if snapshot_id is not None:
            note_committed(snapshot_id)
        return created

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        return self._undo(self.inner.delete_files(paths))

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        return self._undo(self.inner.delete_listed(paths))  # the inner store's own (cheaper) path, as the guard's

    def _undo(self, deleted: list[str]) -> list[str]:
        ledger = _CURRENT.get()
        if ledger is not None:
            for path in deleted:
                snapshot_id = self._snapshot_id(path)
                if snapshot_id is not None:
                    ledger.remove_commit(snapshot_id)
        return deleted
