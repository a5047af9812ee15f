"""List a table's own directories in parallel and say what each file found there is.

Only the directories the format creates are listed: ``snapshot/``, ``schema/``, ``tag/``, ``consumer/``,
``changelog/``, ``manifest/``, ``statistics/``, ``index/``, the ``branch/branch-<name>/`` metadata directories and the
data directories, found under the table's data directory (the root, or ``data-file.path-directory`` below it, as
Paimon's own orphan cleaner lists them) by descending one level per partition key (``<key>=<value>`` directories
whose key is the partition key of that level) and then ``bucket-<n>``. Unknown directories are never entered, and
neither is a data directory that is the root of another table (it holds ``schema/`` or ``snapshot/``, e.g. a table
created at ``<root>/dt=zz``): it is yielded as a NESTED_TABLE listing without entries, for the caller to report.

Every file is classified by the directory it is in and its name (:func:`classify`). Only names the format produces
can be orphan candidates; metadata roots (snapshots, schemas, tags, consumers, hints, expiration journals) never
are; everything else is unknown and must be reported, never deleted.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypeVar

from tableformat.io.fileio import FileInfo, FileIO
from tableformat.layout import (
    BRANCH_PREFIX,
    BUCKET_PREFIX,
    CHANGELOG_PREFIX,
    CONSUMER_PREFIX,
    EARLIEST,
    EXPIRE_JOURNAL_PREFIX,
    INDEX_DIR,
    INDEX_FILE_PREFIX,
    INDEX_MANIFEST_PREFIX,
    LATEST,
    MANIFEST_DIR,
    MANIFEST_LIST_PREFIX,
    MANIFEST_PREFIX,
    METADATA_DIRS,
    SCHEMA_PREFIX,
    SNAPSHOT_PREFIX,
    STATISTICS_DIR,
    STATISTICS_PREFIX,
    TAG_PREFIX,
    TableLayout,
)
from tableformat.model.partition import escape_path_name

log = logging.getLogger(__name__)

_T = TypeVar("_T")
_I = TypeVar("_I")

DATA_FORMATS = ("parquet", "orc", "avro")

TABLE_ROOT_MARKERS = frozenset({"schema", "snapshot"})
"""A directory holding one of these is a table root: every table has ``schema/`` once created, ``snapshot/`` once
committed to."""

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_TEMP = re.compile(rf"^\..+\.{_UUID}\.tmp$")
"""Paimon's temp file of an atomic write: ``.<name>.<uuid>.tmp`` (tableformat.io.local.temp_name_for)."""

_BUCKET_DIR = re.compile(r"^bucket-(\d+|postpone)$")
_INDEX_FILE = re.compile(rf"^{INDEX_FILE_PREFIX}{_UUID}-\d+$")
"""An index file (``FileStorePathFactory``'s index path factories): deletion vectors, hash indexes."""
_GLOBAL_INDEX_FILE = re.compile(rf"^[A-Za-z0-9_.-]+-global-index-{_UUID}\.index$")
"""A global index file (``GlobalIndexFileReadWrite``): ``<index type>-global-index-<uuid>.index``."""
_NUMBERED = {
    "snapshot": (SNAPSHOT_PREFIX,),
    "schema": (SCHEMA_PREFIX,),
    "changelog": (CHANGELOG_PREFIX,),
}


class DirKind(str, Enum):
    """What a listed directory is."""

    ROOT = "root"
    METADATA = "metadata"
    MANIFEST = "manifest"
    STATISTICS = "statistics"
    INDEX = "index"
    BRANCHES = "branches"
    BRANCH = "branch"
    PARTITION = "partition"
    BUCKET = "bucket"
    DATA_DIR = "data-dir"
    """A component of ``data-file.path-directory`` (level = how many components so far)."""
    NESTED_TABLE = "nested-table"
    """Where a data directory was expected, the root of another table: listed (its entries are not passed on),
    never entered."""


class FileClass(str, Enum):
    """What a listed file is, judged by its directory and name (not to be confused with an entry's ADD/DELETE kind,
    ``model.manifest.FileKind``)."""

    ROOT_METADATA = "root-metadata"
    """Snapshot, schema, tag, consumer, changelog, hint or expiration journal: never an orphan."""
    DATA = "data"
    CHANGELOG_DATA = "changelog-data"
    """A changelog data file ``<changelog-file.prefix><uuid>-<n>.<format>`` in a bucket directory (named by the ADD
    entries of the manifests of a root's changelog manifest list)."""
    DATA_INDEX = "data-index"
    """A file-index sidecar of a data or changelog file: ``<file>.index``, or ``<file>-<n>.index`` once rewritten
    (``DataFilePathFactory.createNewFileIndexFilePath``); listed in its file's extra files."""
    MANIFEST = "manifest"
    MANIFEST_LIST = "manifest-list"
    INDEX_MANIFEST = "index-manifest"
    INDEX = "index"
    """An index file named by the entries of a root's index manifest: ``index/index-<uuid>-<n>`` (deletion vectors,
    hash indexes; in the bucket directory with ``index-file-in-data-file-dir``) or
    ``index/<type>-global-index-<uuid>.index``."""
    STATISTICS = "statistics"
    TEMP = "temp"
    UNKNOWN = "unknown"
    """Not a name this format produces here: reported, never deleted."""


CANDIDATE_KINDS = frozenset(
    {
        FileClass.DATA,
        FileClass.CHANGELOG_DATA,
        FileClass.DATA_INDEX,
        FileClass.MANIFEST,
        FileClass.MANIFEST_LIST,
        FileClass.INDEX_MANIFEST,
        FileClass.INDEX,
        FileClass.STATISTICS,
        FileClass.TEMP,
    }
)
"""Kinds that may be deleted once nothing references them and they are older than the cutoff."""

DATA_FILE_KINDS = frozenset({FileClass.DATA, FileClass.CHANGELOG_DATA, FileClass.DATA_INDEX})
"""Kinds named by the entries of manifests (data and changelog manifests alike)."""
MANIFEST_FILE_KINDS = frozenset({FileClass.MANIFEST, FileClass.MANIFEST_LIST, FileClass.INDEX_MANIFEST})
INDEX_FILE_KINDS = frozenset({FileClass.INDEX})
"""Kinds named by the entries of index manifests."""


class NameRules:
    """Classification rules of one table (its data and changelog file prefixes decide which names are ours)."""

    __slots__ = ("_changelog", "_data", "_data_index", "data_prefix")

    def __init__(self, data_prefix: str = "data-", changelog_prefix: str = "changelog-") -> None:
        formats = "|".join(DATA_FORMATS)
        prefix = re.escape(data_prefix)
        either = f"(?:{prefix}|{re.escape(changelog_prefix)})"
        self.data_prefix = data_prefix
        self._data = re.compile(rf"^{prefix}[^/]+\.({formats})$")
        self._changelog = re.compile(rf"^{re.escape(changelog_prefix)}[^/]+\.({formats})$")
        self._data_index = re.compile(rf"^{either}[^/]+\.({formats})(?:-\d+)?\.index$")

    def is_data_name(self, name: str) -> bool:
        """Whether ``name`` in a bucket directory is a data file: ``<prefix><one or more chars>.<format>``, decided
        exactly as the regular expression, but without it for the common case."""
        if name.startswith(self.data_prefix) and "/" not in name:
            dot = name.rfind(".")
            if dot > len(self.data_prefix) and name[dot + 1 :] in DATA_FORMATS:
                return True
        return self._data.match(name) is not None

    def classify(self, kind: DirKind, name: str, metadata_dir: str = "") -> FileClass:
        """The kind of file ``name`` found in a directory of kind ``kind`` (``metadata_dir``: 'snapshot', ...)."""
        if kind is DirKind.BUCKET and self.is_data_name(name):
            return FileClass.DATA
        if kind == DirKind.METADATA and _is_root_metadata(metadata_dir, name):
            return FileClass.ROOT_METADATA
        if (
            name.startswith(".")
            and _TEMP.match(name)
            and kind not in (DirKind.ROOT, DirKind.BRANCHES, DirKind.BRANCH, DirKind.PARTITION, DirKind.DATA_DIR)
        ):
            return FileClass.TEMP
        if kind == DirKind.MANIFEST:
            if name.startswith(MANIFEST_LIST_PREFIX) and len(name) > len(MANIFEST_LIST_PREFIX):
                return FileClass.MANIFEST_LIST
            if name.startswith(MANIFEST_PREFIX) and len(name) > len(MANIFEST_PREFIX):
                return FileClass.MANIFEST
            if name.startswith(INDEX_MANIFEST_PREFIX) and len(name) > len(INDEX_MANIFEST_PREFIX):
                return FileClass.INDEX_MANIFEST
        elif kind == DirKind.STATISTICS:
            if name.startswith(STATISTICS_PREFIX) and len(name) > len(STATISTICS_PREFIX):
                return FileClass.STATISTICS
        elif kind == DirKind.INDEX:
            if _INDEX_FILE.match(name) or _GLOBAL_INDEX_FILE.match(name):
                return FileClass.INDEX
        elif kind == DirKind.BUCKET:
            if self._changelog.match(name):
                return FileClass.CHANGELOG_DATA
            if self._data_index.match(name):
                return FileClass.DATA_INDEX
            if _INDEX_FILE.match(name):
                return FileClass.INDEX
        return FileClass.UNKNOWN


def _is_root_metadata(metadata_dir: str, name: str) -> bool:
    if name.startswith(EXPIRE_JOURNAL_PREFIX):
        return True  # the expiration journal (and nothing that merely resembles a temp file of it)
    if metadata_dir == "snapshot" and name in (LATEST, EARLIEST):
        return True
    for prefix in _NUMBERED.get(metadata_dir, ()):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return True
    if metadata_dir == "tag":
        return name.startswith(TAG_PREFIX) and len(name) > len(TAG_PREFIX) and not _TEMP.match(name)
    if metadata_dir == "consumer":
        return name.startswith(CONSUMER_PREFIX) and len(name) > len(CONSUMER_PREFIX) and not _TEMP.match(name)
    return False


@dataclass(frozen=True, slots=True)
class Listing:
    """One listed directory: its kind, backend path, path relative to the table root and direct entries."""

    kind: DirKind
    path: str
    rel: str
    entries: tuple[FileInfo, ...]
    level: int = 0
    """Partition level of a PARTITION directory (1 = first key); depth of a BUCKET directory."""
    metadata_dir: str = ""
    """For METADATA directories: 'snapshot', 'schema', 'tag', 'consumer' or 'changelog'."""
    mtime_ms: int = 0
    """The directory's own mtime as its parent listed it (0 when unknown)."""

    @property
    def files(self) -> Iterator[FileInfo]:
        return (entry for entry in self.entries if not entry.is_dir)


@dataclass(frozen=True, slots=True)
class _Pending:
    kind: DirKind
    path: str
    level: int = 0
    metadata_dir: str = ""
    mtime_ms: int = 0


def partition_dir_prefixes(partition_keys: tuple[str, ...]) -> tuple[str, ...]:
    """``<escaped key>=`` for every partition level."""
    return tuple(f"{escape_path_name(key)}=" for key in partition_keys)


def walk_table(
    file_io: FileIO,
    layout: TableLayout,
    partition_keys: tuple[str, ...],
    pool: Executor,
    window: int = 8,
    *,
    without_file_stats: frozenset[DirKind] = frozenset(),
    data_dir: str = "",
) -> Iterator[Listing]:
    """Every directory of the table that the format uses, listed in parallel, level by level.

    At most ``window`` listings are held at once (fewer around huge directories). A listing failure raises
    (an unreadable directory is unknown, never empty); a directory that does not exist lists as empty. Directories
    of the kinds in ``without_file_stats`` are listed by FileIO.list_dir_without_file_stats (sizes and mtimes of
    their files may be UNKNOWN). ``data_dir``: the table's data directory relative to the root
    (:func:`tableformat.data_paths.data_directory`); partition and bucket directories are looked for only there.

    Where the store lists a whole subtree at once (``FileIO.lists_subtrees``: object stores), the root is listed
    by itself, then the directories the format uses below it (``snapshot/``, ``manifest/``, the first-level
    partitions, ``branch/``, ...) flat: split in key order into at most ``window`` runs of neighbours, each run one
    recursive, paginated listing of its key range (``FileIO.list_subtree_range``), the runs in parallel. A table
    with a thousand partitions costs the root's pages and a page per thousand keys of each run, not a listing per
    partition. Each run then answers the same walk exactly as the per-directory listings would (:class:`_Subtree`),
    so the same directories are yielded with the same entries; unknown directories before the first or after the
    last known one are never listed, those between two are listed with their run but never yielded, and nothing
    found below a directory the walk does not enter is yielded.
    """
    shape = _Shape(partition_dir_prefixes(partition_keys), tuple(data_dir.split("/")) if data_dir else ())
    lister = _Lister(pool, file_io, window, without_file_stats)
    root = [_Pending(DirKind.ROOT, layout.root)]
    if not file_io.lists_subtrees:
        yield from _walk(root, lister.listings, layout, shape)
        return
    below: list[_Pending] = []
    yield from _walk(root, lister.listings, layout, shape, below)
    for run, subtree in lister.subtrees(layout.root, _runs(below, lister.limit)):
        yield from _walk(list(run), subtree.listings, layout, shape)


class SpooledFiles(Protocol):
    """Files listed elsewhere, read a batch at a time (``.file_list.ListedFiles``)."""

    @property
    def table_roots(self) -> Collection[str]:
        """Directories (relative to the table root) holding ``schema/`` or ``snapshot/``, in whichever batch."""

    def batches(self) -> Iterator[list[FileInfo]]: ...


def walk_listed(
    files: SpooledFiles,
    layout: TableLayout,
    partition_keys: tuple[str, ...],
    *,
    data_dir: str = "",
) -> Iterator[Listing]:
    """The walk of :func:`walk_table` over files listed elsewhere (a file list: ``.file_list``), without a request:
    the same directories are yielded with the entries those files give them, found by the same rules (unknown
    directories not entered, nested tables not entered). Directory entries carry no mtime.

    The files are walked a batch at a time, each batch from the root, so a directory whose files are in several
    batches is yielded once per batch, each time with the files of that batch (and its subdirectories that batch
    shows): a caller adds them up. Every batch is given the ``table_roots`` of the whole list, so a directory that
    is the root of another table is never entered, whichever batch its ``schema/`` is in."""
    shape = _Shape(partition_dir_prefixes(partition_keys), tuple(data_dir.split("/")) if data_dir else ())
    root = layout.root.rstrip("/")
    markers = [FileInfo(f"{root}/{rel}/schema/", 0, 0, True) for rel in sorted(files.table_roots) if rel]
    for batch in files.batches():
        subtree = _Subtree(root, itertools.chain(batch, markers))
        yield from _walk([_Pending(DirKind.ROOT, layout.root)], subtree.listings, layout, shape)


def _runs(children: list[_Pending], count: int) -> list[tuple[_Pending, ...]]:
    """The children in key order (a directory's keys start with ``<name>/``), split into at most ``count`` runs of
    neighbours of nearly equal length."""
    ordered = sorted(children, key=lambda child: _name(child.path) + "/")
    count = max(1, min(count, len(ordered)))
    size, extra = divmod(len(ordered), count)
    runs: list[tuple[_Pending, ...]] = []
    start = 0
    for number in range(count):
        end = start + size + (1 if number < extra else 0)
        runs.append(tuple(ordered[start:end]))
        start = end
    return [run for run in runs if run]


def _name(path: str) -> str:
    return path.rstrip("/").rpartition("/")[2]


_ListLevel = Callable[[list["_Pending"]], Iterator[tuple["_Pending", list[FileInfo]]]]


def _walk(
    frontier: list[_Pending],
    list_level: _ListLevel,
    layout: TableLayout,
    shape: _Shape,
    stop: list[_Pending] | None = None,
) -> Iterator[Listing]:
    """Breadth first from ``frontier``, each level listed by ``list_level``; with ``stop``, only the first level,
    whose children are put into ``stop`` instead of being listed."""
    while frontier:
        next_frontier: list[_Pending] = []
        for pending, entries in list_level(frontier):
            rel = "" if pending.kind == DirKind.ROOT else layout.relative(pending.path)
            if pending.kind in _DATA_KINDS and any(e.is_dir and e.name in TABLE_ROOT_MARKERS for e in entries):
                log.warning("%s is the root of another table: not entered, nothing in it is touched", pending.path)
                yield Listing(DirKind.NESTED_TABLE, pending.path, rel, (), pending.level, "", pending.mtime_ms)
                continue
            listing = Listing(
                kind=pending.kind,
                path=pending.path,
                rel=rel,
                entries=tuple(entries),
                level=pending.level,
                metadata_dir=pending.metadata_dir,
                mtime_ms=pending.mtime_ms,
            )
            next_frontier.extend(_children(listing, shape))
            yield listing
        if stop is not None:
            stop.extend(next_frontier)
            return
        frontier = next_frontier


class _Subtree:
    """One recursive listing of a directory, answering every directory below it exactly as ``list_dir`` would:
    its files, and a directory entry (path without the trailing ``/``, size and mtime 0) for every child prefix
    some key has, directory marker objects included; sorted by path."""

    __slots__ = ("dirs", "files", "size")

    def __init__(self, path: str, infos: Iterable[FileInfo]) -> None:
        self.size = 0
        self.dirs: dict[str, set[str]] = {}
        self.files: dict[str, list[FileInfo]] = {}
        base = f"{path}/"
        for info in infos:
            self.size += 1
            if not info.path.startswith(base):
                continue  # never anything outside the listed directory
            directory, rest = base, info.path[len(base) :]
            slash = rest.find("/")
            while slash >= 0:
                child = directory + rest[: slash + 1]
                self.dirs.setdefault(directory, set()).add(child)
                directory, rest = child, rest[slash + 1 :]
                slash = rest.find("/")
            if rest and not info.is_dir:
                self.files.setdefault(directory, []).append(info)

    def list_dir(self, path: str) -> list[FileInfo]:
        prefix = f"{path}/"
        entries = list(self.files.get(prefix, ()))
        entries += [FileInfo(child.rstrip("/"), 0, 0, True) for child in self.dirs.get(prefix, ())]
        return sorted(entries, key=lambda info: info.path)

    def listings(self, frontier: list[_Pending]) -> Iterator[tuple[_Pending, list[FileInfo]]]:
        return ((pending, self.list_dir(pending.path)) for pending in frontier)


_DATA_KINDS = frozenset({DirKind.PARTITION, DirKind.BUCKET, DirKind.DATA_DIR})
"""Directories that hold (or lead to) data files: the places a nested table root is looked for."""

BIG_DIRECTORY = 10_000
"""Listings with more entries than this keep the number of listings in flight at 2 (memory)."""


class _Lister:
    """Lists directories in parallel with a bounded, adaptive number of listings in flight.

    A listing costs memory per entry until it is consumed, and a few huge bucket directories listed together
    would dominate peak memory. So on every level the bound starts at 2 and doubles (up to ``window``) after every
    small listing, and falls back to 2 after a big one: tables with many small partitions are listed at full
    parallelism, tables with a few huge directories two at a time. Subtrees (recursive listings) likewise.
    """

    def __init__(self, pool: Executor, file_io: FileIO, window: int, without_file_stats: frozenset[DirKind]) -> None:
        self.pool = pool
        self.file_io = file_io
        self.limit = max(1, window)
        self.window = 1
        self.without_file_stats = without_file_stats

    def listings(self, frontier: list[_Pending]) -> Iterator[tuple[_Pending, list[FileInfo]]]:
        def list_dir(item: _Pending) -> Callable[[], list[FileInfo]]:
            lazy = item.kind in self.without_file_stats
            lister = self.file_io.list_dir_without_file_stats if lazy else self.file_io.list_dir
            return lambda: lister(item.path)

        return self._bounded(frontier, list_dir, len)

    def subtrees(self, root: str, runs: list[tuple[_Pending, ...]]) -> Iterator[tuple[tuple[_Pending, ...], _Subtree]]:
        """One recursive listing of each run's key range below ``root``, as a :class:`_Subtree` of the root."""

        def list_range(run: tuple[_Pending, ...]) -> Callable[[], _Subtree]:
            names = [_name(child.path) for child in run]
            if names != sorted(names):  # e.g. 'a-b' before 'a' (key order: '-' < '/'): a listing per directory
                return lambda: _Subtree(root, [info for child in run for info in self.file_io.list_subtree(child.path)])
            return lambda: _Subtree(root, self.file_io.list_subtree_range(root, names[0], names[-1]))

        return self._bounded(runs, list_range, lambda subtree: subtree.size)

    def _bounded(
        self, frontier: list[_I], call: Callable[[_I], Callable[[], _T]], size: Callable[[_T], int]
    ) -> Iterator[tuple[_I, _T]]:
        pending: deque[tuple[_I, Future[_T]]] = deque()
        self.window = min(2, self.limit)  # every level starts slow: its directories may all be huge
        for item in frontier:
            while len(pending) >= self.window:
                yield self._next(pending, size)
            pending.append((item, self.pool.submit(call(item))))
        while pending:
            yield self._next(pending, size)

    def _next(self, pending: deque[tuple[_I, Future[_T]]], size: Callable[[_T], int]) -> tuple[_I, _T]:
        item, future = pending.popleft()
        value = future.result()
        if size(value) > BIG_DIRECTORY:
            self.window = min(2, self.limit)
        else:
            self.window = min(self.limit, self.window * 2)
        return item, value


@dataclass(frozen=True, slots=True)
class _Shape:
    """Where a table's data directories are: partition levels (``<escaped key>=``) under the data directory."""

    prefixes: tuple[str, ...]
    data_dir: tuple[str, ...]
    """Components of ``data-file.path-directory`` (empty: the data directories start at the root)."""


def _children(listing: Listing, shape: _Shape) -> Iterator[_Pending]:
    for entry in listing.entries:
        if not entry.is_dir:
            continue
        name = entry.name
        child = _child_of(listing, name, shape)
        if child is None:
            if listing.kind in (DirKind.ROOT, DirKind.PARTITION, DirKind.BRANCHES, DirKind.BRANCH, DirKind.DATA_DIR):
                log.debug("orphan census: not entering unknown directory %s", entry.path)
            continue
        kind, level, metadata_dir = child
        yield _Pending(kind, entry.path, level, metadata_dir, entry.mtime_ms)


def _child_of(listing: Listing, name: str, shape: _Shape) -> tuple[DirKind, int, str] | None:
    kind, prefixes = listing.kind, shape.prefixes
    if kind in (DirKind.ROOT, DirKind.BRANCH) and name in METADATA_DIRS:
        return DirKind.METADATA, 0, name
    if kind == DirKind.ROOT:
        special = {MANIFEST_DIR: DirKind.MANIFEST, STATISTICS_DIR: DirKind.STATISTICS, INDEX_DIR: DirKind.INDEX}
        if name in special:
            return special[name], 0, ""
        if name == "branch":
            return DirKind.BRANCHES, 0, ""
        if shape.data_dir:
            return (DirKind.DATA_DIR, 1, "") if name == shape.data_dir[0] else None
        return _data_child(0, name, prefixes)
    if kind == DirKind.DATA_DIR:
        if listing.level < len(shape.data_dir):
            return (DirKind.DATA_DIR, listing.level + 1, "") if name == shape.data_dir[listing.level] else None
        return _data_child(0, name, prefixes)
    if kind == DirKind.BRANCHES and name.startswith(BRANCH_PREFIX) and len(name) > len(BRANCH_PREFIX):
        return DirKind.BRANCH, 0, ""
    if kind == DirKind.PARTITION:
        return _data_child(listing.level, name, prefixes)
    return None


def _data_child(level: int, name: str, prefixes: tuple[str, ...]) -> tuple[DirKind, int, str] | None:
    """The data directory below partition level ``level`` (0 = table root) called ``name``, if it is one."""
    if level < len(prefixes):
        if name.startswith(prefixes[level]):
            return DirKind.PARTITION, level + 1, ""
        return None
    if name.startswith(BUCKET_PREFIX) and _BUCKET_DIR.match(name):
        return DirKind.BUCKET, level + 1, ""
    return None
