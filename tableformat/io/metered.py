"""Count the requests a run sends, by the kind S3 bills them as: a FileIO that forwards every call and adds what it
would cost on S3 to a :class:`RequestTally` (a few integer increments per call).

Each call is counted as the requests :class:`~tableformat.io.s3.S3FileIO` sends for it, on every backend (on local
disk: what the same run would send on S3):

* ``LIST``: a ListObjectsV2 page (1,000 keys): ``list_dir``, ``list_names``, ``list_subtree`` and the other
  listings, a page per 1,000 entries found (at least one);
* ``GET``: ``read_bytes``, ``read_range``, and the read back after a refused conditional PUT;
* ``HEAD``: ``file_exists``, ``stat_file``, ``file_size``, ``exists`` (plus a LIST of one key when the key is no
  object: S3 then asks whether it is a directory), ``open_input`` (a HEAD, then a GET);
* ``PUT``: ``write_bytes``, ``write_if_absent``;
* ``DELETE``: a DeleteObjects request (up to 1,000 keys): ``delete_listed`` sends one per 1,000 paths;
  ``delete_files`` first settles existence as S3FileIO does (a LIST per directory holding four or more of the
  paths, a HEAD per path elsewhere), then a request per 1,000 paths that existed.

What a store sends beyond that (s3fs's retries of throttled requests, SeaweedFS listing a key range out of order)
is not seen here; reads of data files through pyarrow (``arrow_filesystem``) are not counted either.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import IO

from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO

LIST, GET, HEAD, PUT, DELETE = "LIST", "GET", "HEAD", "PUT", "DELETE"
"""The request kinds counted (S3's ListObjectsV2, GetObject, HeadObject, PutObject, DeleteObjects)."""

KEYS_PER_PAGE = 1000
"""Keys of one ListObjectsV2 page, and of one DeleteObjects request."""

LIST_MIN_KEYS = 4
"""S3FileIO.delete_files settles existence with a listing of a directory from this many paths in it, else HEADs."""


def batches(count: int, size: int = KEYS_PER_PAGE) -> int:
    """Requests of up to ``size`` items for ``count`` items (0 for none)."""
    return -(-count // size)


def pages(found: int) -> int:
    """ListObjectsV2 pages of a listing that found ``found`` entries: one per 1,000, at least one."""
    return max(1, batches(found))


class RequestTally:
    """Requests by kind, added to from any thread."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, kind: str, count: int = 1) -> None:
        if count:
            with self._lock:
                self._counts[kind] += count

    def counts(self) -> dict[str, int]:
        """{kind: requests} of the kinds sent at least once, in the order LIST, GET, HEAD, PUT, DELETE."""
        with self._lock:
            return {kind: self._counts[kind] for kind in (LIST, GET, HEAD, PUT, DELETE) if self._counts[kind]}


class MeteredFileIO(ForwardingFileIO):
    """Forwards to ``inner``; counts every call in ``tally`` as the S3 requests it costs."""

    def __init__(self, inner: FileIO, tally: RequestTally) -> None:
        super().__init__(inner)
        self.tally = tally

    def over(self, inner: FileIO) -> MeteredFileIO:
        """The same tally counting the calls made through another FileIO (e.g. past a lease guard)."""
        return MeteredFileIO(inner, self.tally)

    def read_bytes(self, path: str) -> bytes:
        self.tally.add(GET)
        return self.inner.read_bytes(path)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        self.tally.add(GET)
        return self.inner.read_range(path, start, end)

    def open_input(self, path: str) -> IO[bytes]:
        self.tally.add(HEAD)
        self.tally.add(GET)
        return self.inner.open_input(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.tally.add(PUT)
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.tally.add(PUT)
        created = self.inner.write_if_absent(path, data)
        if not created:
            self.tally.add(GET)  # the refused PUT's key read back and compared
        return created

    def exists(self, path: str) -> bool:
        self.tally.add(HEAD)
        found = self.inner.exists(path)
        if not found and path.strip("/").count("/"):
            self.tally.add(LIST)  # no such object: is it a directory?
        return found

    def file_exists(self, path: str) -> bool:
        self.tally.add(HEAD)
        return self.inner.file_exists(path)

    def stat_file(self, path: str) -> FileInfo | None:
        self.tally.add(HEAD)
        return self.inner.stat_file(path)

    def file_size(self, path: str) -> int:
        self.tally.add(HEAD)
        return self.inner.file_size(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        found = self.inner.list_dir(path)
        self.tally.add(LIST, pages(len(found)))
        return found

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        found = self.inner.list_dir_without_file_stats(path)  # the inner store's cheaper path (local disk: no stats)
        self.tally.add(LIST, pages(len(found)))
        return found

    def list_names(self, path: str) -> list[str]:
        names = self.inner.list_names(path)
        self.tally.add(LIST, pages(len(names)))
        return names

    def list_names_with_prefix(self, path: str, prefix: str) -> list[str]:
        names = self.inner.list_names_with_prefix(path, prefix)
        self.tally.add(LIST, pages(len(names)))
        return names

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        found = 0
        for info in self.inner.walk_files(path):
            found += 1
            yield info
        self.tally.add(LIST, pages(found))

    def list_subtree(self, path: str) -> list[FileInfo]:
        found = self.inner.list_subtree(path)
        self.tally.add(LIST, pages(len(found)))
        return found

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        found = self.inner.list_subtree_range(path, first, last)
        self.tally.add(LIST, pages(len(found)))
        return found

    def existing_files(self, paths: Sequence[str]) -> tuple[list[str], list[str]]:
        self._settling(paths)
        return self.inner.existing_files(paths)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self._settling(paths)
        deleted = self.inner.delete_files(paths)
        self.tally.add(DELETE, batches(len(deleted)))
        return deleted

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        self.tally.add(DELETE, batches(len(set(paths))))
        return self.inner.delete_listed(paths)  # the inner store's own path, as the guard's

    def verify_atomic_create(self, root: str) -> bool:
        self.tally.add(PUT, 2)  # S3's probe: a conditional PUT, then a second one that must be refused
        self.tally.add(DELETE)
        return self.inner.verify_atomic_create(root)

    def _settling(self, paths: Sequence[str]) -> None:
        for kind, count in settling_requests(paths).items():
            self.tally.add(kind, count)


def settling_requests(paths: Sequence[str]) -> dict[str, int]:
    """What S3FileIO asks before deleting ``paths`` that it does not know exist: a listing of each directory holding
    four or more of them, a HEAD of each of the others."""
    per_directory = Counter(path.rstrip("/").rpartition("/")[0] for path in set(paths))
    listed = sum(1 for count in per_directory.values() if count >= LIST_MIN_KEYS)
    return {LIST: listed, HEAD: sum(count for count in per_directory.values() if count < LIST_MIN_KEYS)}
