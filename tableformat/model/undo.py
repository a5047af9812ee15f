"""What the undo window holds (``.tablefmt/undo/<run id>/``, docs/undo.md): the files a run deferred, the metadata
files it deleted (as saved copies), and what undos took back. Bytes in :mod:`tableformat.codec.undo_codec`, read and
written only by the store (:mod:`tableformat.undo_store`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class HeldList:
    """Files one run deferred in one step (a run writes one list per deleting step, before it defers them)."""

    run_id: str
    due_ms: int
    """When the window of these files ends: from then on any maintenance run deletes them."""
    files: tuple[tuple[str, int], ...]
    """(path relative to the table root, bytes)."""
    operation: str = ""
    """The run's operation (``remove-orphans`` holds files no snapshot named when it looked: a purge checks them
    against the latest snapshot again)."""


@dataclass(frozen=True, slots=True)
class ReleasedList:
    """Files an undo took back into the table: the window no longer holds them for the run they are listed under."""

    undo_run_id: str
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HeldRun:
    """Everything the window holds for one run, as read from its directory."""

    run_id: str
    due_ms: int | None
    """The end of its window (the latest of its lists); None when the directory holds no list (only saved copies:
    a run that stopped before it deferred anything)."""
    files: Mapping[str, int] = field(default_factory=dict)
    """Every file its lists name, with bytes."""
    pending: frozenset[str] = frozenset()
    """Files the run was about to take out when it listed them (``pending-<n>``): orphan cleanup leaves them alone
    until the run's window ends; they are held only once a ``held-<n>`` list names them."""
    released: frozenset[str] = frozenset()
    """Files an undo took back (never deleted for this run)."""
    released_by: tuple[str, ...] = ()
    """Run ids of the undos that released files of this run."""
    saved: tuple[str, ...] = ()
    """Table paths (relative) of the metadata files whose copies are saved."""
    own_files: tuple[str, ...] = ()
    """The directory's own files (lists and copies, full paths): deleted when the run's window is over."""
    operation: str = ""
    """The run's operation as its lists name it ("" for lists that do not)."""

    @property
    def held(self) -> dict[str, int]:
        """The files still held: named by a list and not released."""
        return {path: size for path, size in self.files.items() if path not in self.released}

    @property
    def held_bytes(self) -> int:
        return sum(self.held.values())

    def is_due(self, now_ms: int) -> bool:
        return self.due_ms is None or self.due_ms <= now_ms
