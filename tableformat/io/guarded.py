"""A FileIO that asks a guard before every change: the maintainer's way to stop the moment its lease is lost.

``guard()`` runs before each delete, write and directory removal and raises to refuse it (e.g. LeaseLostError);
reads are forwarded untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO


class GuardedFileIO(ForwardingFileIO):
    """Forwards to ``inner``; calls ``guard`` first on every operation that changes storage."""

    def __init__(self, inner: FileIO, guard: Callable[[], None]) -> None:
        super().__init__(inner)
        self.guard = guard

    def write_bytes(self, path: str, data: bytes) -> None:
        self.guard()
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.guard()
        return self.inner.write_if_absent(path, data)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self.guard()
        return self.inner.delete_files(paths)

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        self.guard()
        return self.inner.delete_listed(paths)

    def remove_empty_dir(self, path: str) -> bool:
        self.guard()
        return self.inner.remove_empty_dir(path)
