"""A FileIO that keeps what it read of write-once files (manifest lists, manifests, index manifests: their names
are fresh UUIDs, their content never changes), so that the readers of one maintainer pass (the keep-up count, then
snapshot expiration) fetch each of them once.

Nothing else is kept: snapshot files (a rollback frees an id for another snapshot), hints, listings, tags and
branches are read through every time, so a decision on "what is the latest" always reads fresh. Two threads asking
for the same file at once wait for one read. A file this FileIO deletes is forgotten. The cache is bounded: past
``limit_bytes``, files are read through without being kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO

CACHE_LIMIT_BYTES = 256 * 1024 * 1024
"""Most bytes one cache keeps (a pass over a table with a huge history reads the rest through)."""


class WriteOnceCache(ForwardingFileIO):
    """Forwards to ``inner``; ``read_bytes`` of a path ``write_once`` accepts is read once and kept."""

    def __init__(self, inner: FileIO, write_once: Callable[[str], bool], limit_bytes: int = CACHE_LIMIT_BYTES) -> None:
        super().__init__(inner)
        self.write_once = write_once
        self.limit_bytes = limit_bytes
        self._kept: dict[str, bytes] = {}
        self._size = 0
        self._reading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def read_bytes(self, path: str) -> bytes:
        if not self.write_once(path):
            return self.inner.read_bytes(path)
        with self._lock:
            kept = self._kept.get(path)
            if kept is not None:
                return kept
            reading = self._reading.setdefault(path, threading.Lock())
        with reading:  # a second reader of the same file waits for the first one's read
            with self._lock:
                kept = self._kept.get(path)
            if kept is not None:
                return kept
            try:
                data = self.inner.read_bytes(path)
            except BaseException:
                with self._lock:
                    self._reading.pop(path, None)
                raise
            with self._lock:
                if self._size + len(data) <= self.limit_bytes:
                    self._kept[path] = data
                    self._size += len(data)
                self._reading.pop(path, None)  # after keeping it: a reader arriving now finds it kept
            return data

    def _forget(self, paths: Sequence[str]) -> None:
        with self._lock:
            for path in paths:
                data = self._kept.pop(path, None)
                if data is not None:
                    self._size -= len(data)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self._forget(paths)
        return self.inner.delete_files(paths)

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        self._forget(paths)
        return self.inner.delete_listed(paths)
