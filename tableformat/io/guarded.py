"""A FileIO that asks a guard before every change: the maintainer's way to stop the moment its lease is lost.

``guard()`` runs before each delete, write and directory removal and raises to refuse it (e.g. LeaseLostError);
reads are forwarded untouched. ``before_delete(paths)``, when given, runs before the guard of each delete and
directory removal: it may wait (a maintainer pass's keep-up count, reading the history while the operations run,
holds the deletes that could remove what it has still to read), and the guard then judges the lease after the wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO


class GuardedFileIO(ForwardingFileIO):
    """Forwards to ``inner``; calls ``guard`` first on every operation that changes storage."""

    def __init__(
        self, inner: FileIO, guard: Callable[[], None], before_delete: Callable[[Sequence[str]], None] | None = None
    ) -> None:
        super().__init__(inner)
        self.guard = guard
        self.before_delete = before_delete

    def _guard_delete(self, paths: Sequence[str]) -> None:
        if self.before_delete is not None:
            self.before_delete(paths)
        self.guard()

    def write_bytes(self, path: str, data: bytes) -> None:
        self.guard()
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.guard()
        return self.inner.write_if_absent(path, data)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self._guard_delete(paths)
        return self.inner.delete_files(paths)

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        self._guard_delete(paths)
        return self.inner.delete_listed(paths)

    def remove_empty_dir(self, path: str) -> bool:
        self._guard_delete([path])
        return self.inner.remove_empty_dir(path)
