"""The undo window (``maintenance.undo-window``, docs/undo.md): inside :func:`deferring`, the
:class:`~.deleter.Deleter` keeps files instead of deleting them.

A run of an operation that defers (every maintenance operation but erasure) executes inside ``deferring`` when the
table's window is above 0. Each ``Deleter.delete`` then splits its files in two:

* **metadata entries** (snapshot, tag, changelog and consumer files, of the table and its branches) are what readers
  find a table state by; they go at once, as without a window, so that the table reads as expired. A copy of each is
  saved first under ``.tablefmt/undo/<run id>/saved/<path>``: what ``tablefmt undo`` writes back.
* **every other file** (data files, manifests, lists, index and statistics files, orphans) stays. The list of them
  is created as ``.tablefmt/undo/<run id>/held-<n>`` (with the window's end) *before* the step, so that no other
  process, crash or not, ever sees them unheld: orphan cleanup leaves every held file alone, and once the window
  has passed a later run deletes them (cleanup/undo/purge.py).

What is deferred is noted in the run's ledger (state ``deferred`` in its audit record) and counted apart from what
was deleted; a list that cannot be written stops the step with nothing deferred or deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from tableformat.errors import MaintenanceError
from tableformat.layout import is_metadata_entry
from tableformat.model.undo import HeldList
from tableformat.options import UNDO_WINDOW, TableOptions
from tableformat.parallel import executor
from tableformat.store import MetadataStore

from .ledger import note_deferred

_CURRENT: ContextVar[Deferral | None] = ContextVar("tablefmt_deferral", default=None)


def undo_window_ms(options: TableOptions) -> int:
    """``maintenance.undo-window`` in ms (0: off)."""
    return options.get(UNDO_WINDOW) or 0


class Deferral:
    """The window of one run: its id, the end of its window, and the store its lists and copies go to (the main
    table's, past any lease guard: they are not table data)."""

    def __init__(self, store: MetadataStore, run_id: str, due_ms: int, operation: str = "") -> None:
        self.store = store
        self.run_id = run_id
        self.due_ms = due_ms
        self.operation = operation
        self._lock = threading.Lock()
        self._lists = 0
        self._written = False

    def table_path(self, root: str, relative: str) -> str:
        """A path relative to ``root`` (a branch's root, or the table's) as a path relative to the table root."""
        return self.store.layout.relative(f"{root.rstrip('/')}/{relative.strip('/')}")

    def hold(self, root: str, files: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
        """Hold ``files`` (relative to ``root``) instead of deleting them; returns the (table-relative) files held.
        Their list is created first; MaintenanceError when it cannot be (nothing held then)."""
        held = [(self.table_path(root, rel), size) for rel, size in files]
        if held or not self._written:  # the run's first list also dates its window (even an empty one)
            self._write(held, pending=False)
        for path, size in held:
            note_deferred(path, size)
        return held

    def protect(self, root: str, files: Sequence[tuple[str, int]]) -> None:
        """List ``files`` (relative to ``root``) as pending before the step that takes them out of the table: from
        then on orphan cleanup leaves them alone, also when this run crashes before it holds them (they are never
        deleted for being pending; the list goes when the window ends)."""
        self._write([(self.table_path(root, rel), size) for rel, size in files], pending=True)

    def _write(self, files: list[tuple[str, int]], *, pending: bool) -> None:
        with self._lock:
            self._lists += 1
            sequence = self._lists
            self._written = True
        try:
            held = HeldList(self.run_id, self.due_ms, tuple(files), self.operation)
            self.store.write_held(held, sequence, pending=pending)
        except OSError as exc:
            raise MaintenanceError(f"could not record the files the undo window keeps, nothing deleted: {exc}") from exc

    def save(self, root: str, files: Sequence[tuple[str, int]], threads: int) -> None:
        """Save a copy of each metadata file (relative to ``root``) before it is deleted; a file already gone has
        nothing to save. MaintenanceError when a copy cannot be made (nothing deleted then)."""
        paths = [self.table_path(root, rel) for rel, _ in files]
        try:
            with executor(min(max(1, threads), len(paths)) if paths else 1, "tablefmt-undo") as pool:
                list(pool.map(lambda path: self.store.save_copy(self.run_id, path), paths))
        except OSError as exc:
            raise MaintenanceError(f"could not save a copy for the undo window, nothing deleted: {exc}") from exc


def split_entries(
    deferral: Deferral, root: str, files: Sequence[tuple[str, int]]
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(metadata entries, the rest) of ``files`` relative to ``root``."""
    entries: list[tuple[str, int]] = []
    rest: list[tuple[str, int]] = []
    for rel, size in files:
        (entries if is_metadata_entry(deferral.table_path(root, rel)) else rest).append((rel, size))
    return entries, rest


def current_deferral() -> Deferral | None:
    """The window of the run executing in this thread; None outside :func:`deferring`."""
    return _CURRENT.get()


@contextmanager
def deferring(deferral: Deferral | None) -> Iterator[None]:
    """Run the block with ``deferral`` in force (None: no window; deletes as asked, also inside an outer one)."""
    token = _CURRENT.set(deferral)
    try:
        yield
    finally:
        _CURRENT.reset(token)
