"""A pyarrow filesystem over an fsspec one that opens files of known size without asking the store for their size,
and reads small files ahead of a scan.

pyarrow's own ``FSSpecHandler`` asks twice before a read: ``isfile`` and the size lookup of ``fs.open`` (two HEAD
requests per file on S3). A scan knows each data file's size from its manifest entry, so those files are opened with
it, and the first request for such a file is a read (a missing file fails there, as FileNotFoundError).

pyarrow's dataset scanner, the one DuckDB, Polars and ``to_table()`` run, opens about four files at a time
(``fragment_readahead``, a scan option of the consumer's); with small files on an object store that leaves most of
a scan waiting on round trips. Told the order in which a dataset's files will be opened (:meth:`KnownSizeHandler.
read_ahead`), the handler fetches, each time a file is opened, the next ``window`` files of at most
``WHOLE_GET_BYTES`` whole, one GET each, on a pool of threads every dataset shares (at most
:data:`READ_AHEAD_THREADS`, started as needed); opening one of them then reads it from memory. Memory is bounded by
about ``2 x window`` such files: a fetched file is dropped once opened, or once the scan has opened files
``window`` places past it (a consumer's filter skipped it: that GET was spent for nothing); the few a scan skipped
at its end stay until the dataset is scanned again, given another order, or dropped. A file whose fetch failed for
any reason other than being missing is opened as usual.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import Any

from pyarrow import BufferReader, PythonFile
from pyarrow.fs import FSSpecHandler, PyFileSystem

from tableformat.io.fileio import WHOLE_GET_BYTES
from tableformat.threads import thread_pool

READ_AHEAD_THREADS = 64
"""Threads of the pool every dataset's read-ahead shares (each dataset keeps at most its window in flight)."""

_pool_lock = threading.Lock()
_pool: list[Executor] = []


def _shared_pool() -> Executor:
    """The read-ahead pool, started on first use; its threads start as fetches need them."""
    with _pool_lock:
        if not _pool:
            _pool.append(thread_pool(READ_AHEAD_THREADS, "tablefmt-read-ahead"))
        return _pool[0]


class KnownSizeHandler(FSSpecHandler):  # type: ignore[misc]  # pyarrow ships no type information
    """FSSpecHandler whose ``open_input_file`` opens a path of ``sizes`` with its size, asking nothing first, and,
    once told a scan's order, serves the small files it read ahead (module docs)."""

    def __init__(self, fs: Any, sizes: Mapping[str, int], fetch: Callable[[str], bytes]) -> None:
        super().__init__(fs)
        self.sizes = dict(sizes)
        self._fetch = fetch
        """Reads a whole file in one request (the FileIO's ``read_bytes``: on S3 one GET, no HEAD)."""
        self._ahead: _ReadAhead | None = None

    def read_ahead(self, paths: Sequence[str], window: int) -> None:
        """From now on, each time one of ``paths`` is opened, fetch the next ``window`` small ones of them (in this
        order) whole; ``window`` 0 stops reading ahead. Replaces any earlier order (its fetches are dropped, those
        not started cancelled)."""
        if self._ahead is not None:
            self._ahead.close()
        self._ahead = _ReadAhead(self._fetch, paths, self.sizes, window) if window > 0 else None

    def open_input_file(self, path: str) -> Any:
        ahead = self._ahead
        data = None if ahead is None else ahead.take(path)
        if data is not None:
            return BufferReader(data)
        size = self.sizes.get(path)
        if size is None:
            return super().open_input_file(path)
        handle = self.fs.open(path, mode="rb", size=size)
        if getattr(handle, "_details", False) is None:
            # fsspec looks the details up on first use (s3fs >= 2026 wants an ETag to pin its ranged reads to one
            # version of the object): a HEAD. A data file is never rewritten under its name, so nothing is pinned.
            handle._details = {"name": path, "size": size, "type": "file"}
        return PythonFile(_NamingMissing(handle, path), mode="r")


class _ReadAhead:
    """The small files of one scan order, fetched ahead of the last one opened (module docs).

    How far ahead adapts to the consumer: it starts at ``window`` files, halves for each fetched file the consumer
    skipped (dropped unread), and grows by one for each file opened in order, back up to ``window``. A consumer
    that opens every file (a first scan: pyarrow reads each footer) keeps the whole window; one whose filter skips
    most files (a dataset scanned again, its fragments' statistics known) soon fetches little it does not read."""

    def __init__(self, fetch: Callable[[str], bytes], paths: Sequence[str], sizes: Mapping[str, int], window: int):
        self._fetch = fetch
        self._order = list(paths)
        self._position = {path: index for index, path in enumerate(self._order)}
        self._small = [sizes.get(path, WHOLE_GET_BYTES + 1) <= WHOLE_GET_BYTES for path in self._order]
        self._window = window
        self._depth = window
        """How many files ahead the next fetches go (0 to ``window``)."""
        self._fetched: dict[int, Future[bytes]] = {}
        self._opened: set[int] = set()
        """Positions opened in this pass over the order (one opened again starts the next pass)."""
        self._last = -1
        """The position opened last."""
        self._scheduled_to = 0
        """Positions below this were fetched, or were not worth fetching, in this pass."""
        self._lock = threading.Lock()
        self._pool = _shared_pool()

    def close(self) -> None:
        """Drop every fetch (those not started are cancelled)."""
        with self._lock:
            self._drop(list(self._fetched), skipped=False)

    def take(self, path: str) -> bytes | None:
        """The bytes of ``path`` if it was read ahead (FileNotFoundError naming it if it is missing), else None;
        either way the files after it are fetched."""
        position = self._position.get(path)
        if position is None:
            return None
        with self._lock:
            future = self._fetched.pop(position, None)
            self._schedule(position, hit=future is not None)
        if future is None:
            return None
        try:
            return future.result()
        except FileNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, f"data file {path} is missing ({exc})", path) from exc
        except Exception:  # any other failure: opened as usual, which retries or reports it
            return None

    def _schedule(self, position: int, hit: bool) -> None:
        """Fetch the small files after ``position`` up to the current depth ahead; drop the fetches more than
        ``window`` places behind it (skipped by the consumer). A file opened again starts a new pass (a second scan
        of the same dataset): what the last pass left fetched is dropped, and fetching starts over from there."""
        if position in self._opened:  # what the last pass left is dropped: it ended, it did not skip them
            self._drop(list(self._fetched), skipped=False)
            self._opened.clear()
            self._scheduled_to = position + 1
            self._depth = self._window
        elif hit or position == self._last + 1:
            self._depth = min(self._window, self._depth + 1)
        self._opened.add(position)
        self._last = position
        start = max(self._scheduled_to, position + 1)
        end = min(len(self._order), position + 1 + self._depth)
        for index in range(start, end):
            if self._small[index]:
                self._fetched[index] = self._pool.submit(self._fetch, self._order[index])
        self._scheduled_to = max(self._scheduled_to, end)
        self._drop([index for index in self._fetched if index < position - self._window])

    def _drop(self, positions: list[int], skipped: bool = True) -> None:
        """Forget these fetches, unread; when the consumer ``skipped`` them, fetch less far ahead."""
        for index in positions:
            self._fetched.pop(index).cancel()
            if skipped:
                self._depth //= 2


class _NamingMissing:
    """A file object whose reads say which file is missing (s3fs says only "The specified key does not exist")."""

    def __init__(self, handle: Any, path: str) -> None:
        self._handle = handle
        self._path = path

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._handle.read(size)
        except FileNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, f"data file {self._path} is missing ({exc})", self._path) from exc
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def arrow_filesystem_over(fs: Any, sizes: Mapping[str, int] | None, fetch: Callable[[str], bytes]) -> Any:
    """A ``pyarrow.fs.PyFileSystem`` over the fsspec filesystem ``fs``; files of ``sizes`` open without a lookup;
    ``fetch`` reads a whole file in one request (for reading ahead)."""
    return PyFileSystem(KnownSizeHandler(fs, sizes or {}, fetch))
