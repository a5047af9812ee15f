"""The storage contract every table uses: one FileIO instance per table, never a global.

Paths handed to a FileIO are the backend's own paths (``/abs/dir/file`` on local disk, ``bucket/key`` on S3), as
returned by :func:`tableformat.io.factory.open_location`. Mtimes are epoch milliseconds on every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any, NamedTuple, Protocol


class FileInfo(NamedTuple):
    """A listed file or directory (a named tuple: listings create one per file, so it must be cheap)."""

    path: str
    size: int
    mtime_ms: int
    is_dir: bool = False
    version: str = ""
    """What identifies this content of the file where the store says so at no extra cost (the ETag in an S3
    listing); "" when unknown. Equal non-empty versions of one path mean the same bytes: an operation that read
    the file already need not read it again."""

    @property
    def name(self) -> str:
        """The last path component."""
        path = self.path.rstrip("/") if self.path.endswith("/") else self.path
        return path[path.rfind("/") + 1 :]


UNKNOWN = -1
"""Size or mtime of a FileInfo from list_dir_without_file_stats that the listing did not determine."""


WHOLE_GET_BYTES = 4 << 20
"""On object stores, a data file up to this size (the size its manifest entry records) is fetched whole in one GET;
a larger one footer first, then only the column chunks read. Either way no HEAD: the size is known. A whole GET
costs one round trip plus the transfer; footer first costs two (three with a footer over 64 KiB) plus the transfer
of the chunks read. One round trip to S3 (20-50 ms to the first byte) is worth 2-5 MB at the ~100 MB/s one
connection transfers, so up to about 4 MiB the single GET is no slower even when only a few columns are wanted."""


class DistributedMap(Protocol):
    """Runs ``fn(file_io, item)`` for every item elsewhere (``file_io``: the storage there), yielding the results in
    the order of ``items``, a bounded batch at a time; a failure of any raises StorageError."""

    def __call__(self, fn: Callable[[FileIO, Any], Any], items: Sequence[Any], description: str) -> Iterator[Any]: ...


class FileIO(ABC):
    """Read, write, list and delete files of one table's storage."""

    scheme: str = "file"
    """URL scheme of this backend ("file", "s3", ...)."""

    atomic_create: bool = True
    """Whether write_if_absent is atomic across processes and machines."""

    is_object_store: bool = False
    """True where directories do not really exist (deleting one costs a listing and achieves nothing)."""

    latency_bound: bool = True
    """True where each call waits on a network, so threads overlap the waits. False for the local filesystem: its
    metadata reads are CPU-bound under the GIL, and threads there only add switching (maintenance runs inline)."""

    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError if it does not exist."""

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of a file, fewer where it ends sooner; FileNotFoundError if it does
        not exist. Object stores send one ranged GET and no HEAD: the caller knows the size (a manifest records it)."""
        with self.open_input(path) as handle:
            handle.seek(start)
            return handle.read(max(0, end - start))

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Create or replace a file; readers never see a partial file where the backend allows it."""

    @abstractmethod
    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data`` unless it exists.

        Returns True if this call created the file, False if another writer's file is there. Raises an OSError when
        the outcome is unknown after the backend's own checks (the caller then reads the file back to compare).
        """

    def sync(self, files: Sequence[str], directories: Sequence[str] = ()) -> None:  # noqa: B027 - object stores
        """Make ``files`` (their bytes) and the entries of ``directories`` survive a power loss, before the caller
        makes anything point at them (a snapshot naming a commit's files, deletions a journal describes). Files that
        do not exist are passed over; a file that cannot be made durable raises an OSError.

        Nothing to do here, for object stores: a PUT is durable once acknowledged. Local disk overrides it."""

    bulk_delete: bool = False
    """True where one delete_files call batches and parallelises by itself (S3: DeleteObjects of up to 1,000 keys
    per request): callers then hand it everything at once instead of spreading batches over threads."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file exists, answered by the store itself (never from a cache)."""

    def file_exists(self, path: str) -> bool:
        """Whether a file (not a directory) exists; one request on object stores (``exists`` may need two)."""
        return self.exists(path)

    @abstractmethod
    def list_dir(self, path: str) -> list[FileInfo]:
        """Direct children of a directory; [] when the directory does not exist. Other failures raise."""

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        """Like list_dir, but a file's size and mtime may be UNKNOWN where knowing them costs a call per file (the
        local filesystem: a stat each); stat_file gives them later, for the few files that turn out to matter.
        Directories always carry their mtime."""
        return self.list_dir(path)

    def stat_file(self, path: str) -> FileInfo | None:
        """The size and mtime of one file, or None if it does not exist (by default: from its parent's listing)."""
        parent, _, name = path.rstrip("/").rpartition("/")
        for info in self.list_dir(parent):
            if not info.is_dir and info.name == name:
                return info
        return None

    def list_names_with_prefix(self, path: str, prefix: str) -> list[str]:
        """Names of the files directly in a directory that start with ``prefix`` (object stores list only those:
        one request whatever else the directory holds)."""
        return [name for name in self.list_names(path) if name.startswith(prefix)]

    def list_names(self, path: str) -> list[str]:
        """Names of the files (not directories) directly in a directory, without sizes or times (cheaper on local
        disk); [] when the directory does not exist."""
        return [info.name for info in self.list_dir(path) if not info.is_dir]

    @abstractmethod
    def walk_files(self, path: str) -> Iterator[FileInfo]:
        """Every file (not directory) below ``path``, recursively; nothing when it does not exist."""

    lists_subtrees: bool = False
    """True where one recursive listing of a directory (list_subtree) takes fewer round trips than a listing per
    directory below it (object stores: ListObjectsV2 without a delimiter, 1,000 keys a page whatever the depth)."""

    def list_subtree(self, path: str) -> list[FileInfo]:
        """Every file below ``path`` at any depth, with directory marker objects (keys ending in ``/``) as
        directories whose path keeps its trailing ``/``; [] when nothing is there. By default: walk_files."""
        return list(self.walk_files(path))

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        """What list_subtree of each directory directly in ``path`` named from ``first`` to ``last`` (in key order)
        finds, at once: on object stores one recursive listing of that key range (paginated), so that a thousand
        partition directories cost a page per thousand keys, not a listing each. It may also hold keys of other
        names in the range (e.g. a file ``first.txt`` next to the directories): callers take what they need."""
        found: list[FileInfo] = []
        for info in self.list_dir(path):
            if info.is_dir and first <= info.name <= last:
                found += self.list_subtree(info.path)
        return found

    @abstractmethod
    def delete_files(self, paths: Sequence[str]) -> list[str]:
        """Delete files (never directories); return those that existed and are gone now.

        A path that is already missing is not reported as deleted. Failures other than a missing file raise a
        StorageError naming the path, after the other paths of the batch have been attempted.
        """

    def existing_files(self, paths: Sequence[str]) -> tuple[list[str], list[str]]:
        """(the paths that exist as files, failures ``'path: reason'``): what delete_files must ask the store before
        deleting where a delete does not say whether the file existed (object stores), asked on its own, so that
        the question can overlap other work; then delete_listed deletes the existing ones. By default a
        file_exists each."""
        return [path for path in paths if self.file_exists(path)], []

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        """Delete files this operation saw in a listing or read (so it knows they existed), without asking the store
        again whether they exist; returns those the store confirmed gone. Object stores confirm a missing key as
        deleted too, so only paths known to exist may be passed. By default, exactly ``delete_files``."""
        return self.delete_files(paths)

    @abstractmethod
    def remove_empty_dir(self, path: str) -> bool:
        """Remove a directory only if it is empty (never recursive); False if it is not removed."""

    @abstractmethod
    def open_input(self, path: str) -> IO[bytes]:
        """A seekable binary stream for readers such as pyarrow.parquet."""

    @abstractmethod
    def file_size(self, path: str) -> int:
        """Size in bytes; FileNotFoundError if it does not exist."""

    def distributed_map(self) -> DistributedMap | None:
        """Where work over many files can run on other machines for this run (a Spark job's executors, for the
        FileIO of a distributed maintenance run), or None: here, in the caller's threads."""
        return None

    def verify_atomic_create(self, root: str) -> bool:
        """Whether write_if_absent is really atomic for tables under ``root`` (object stores ask the server)."""
        return self.atomic_create

    def mkdirs(self, path: str) -> None:  # noqa: B027 - optional hook: object stores need no directories
        """Create a directory and its parents where the backend has directories."""

    def url(self, path: str) -> str:
        """The path as a user-facing URL (for messages and --json output); never contains credentials."""
        return path if self.scheme == "file" else f"{self.scheme}://{path}"

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        """A pyarrow.fs.FileSystem for fast Parquet reads and writes of this storage. ``sizes``: the byte sizes of
        files the caller knows (a manifest entry records its data file's), opened without asking the store for them."""
        from tableformat.io.arrow_fs import arrow_filesystem_over

        return arrow_filesystem_over(self.fsspec_filesystem(), sizes, self.read_bytes)

    @abstractmethod
    def fsspec_filesystem(self) -> Any:
        """The underlying fsspec filesystem (for engines such as Spark that need to rebuild it)."""

    def storage_options(self) -> dict[str, Any]:
        """Options needed to rebuild this FileIO elsewhere (e.g. on a Spark executor)."""
        return {}
