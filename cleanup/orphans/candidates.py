"""The census of candidates: every file named like a table file in the table's own directories and not known
to be too young, held compactly by name; and the late age check of those listed without an mtime."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field

from tableformat.context import TableContext
from tableformat.data_paths import data_directory
from tableformat.io.fileio import UNKNOWN, FileInfo
from tableformat.layout import MANIFEST_DIR, TableLayout
from tableformat.options import CHANGELOG_FILE_PREFIX, DATA_FILE_PREFIX, ORPHAN_CANDIDATES_IN_MEMORY

from .census import (
    CANDIDATE_KINDS,
    DATA_FILE_KINDS,
    MANIFEST_FILE_KINDS,
    DirKind,
    FileClass,
    Listing,
    NameRules,
    walk_listed,
    walk_table,
)
from .file_list import FileList, ListedFiles
from .model import MIN_SANE_MTIME_MS
from .spill import SpilledCandidates

log = logging.getLogger(__name__)


_LOW32 = (1 << 32) - 1
_LOW64 = (1 << 64) - 1
_IN_MEMORY_DEFAULT = ORPHAN_CANDIDATES_IN_MEMORY.default or 1
_STAT_AFTER_REFERENCES = frozenset({DirKind.BUCKET, DirKind.METADATA, DirKind.MANIFEST})
"""Directories listed without file sizes and mtimes where that saves a call per file: most of their files are
referenced or never candidates (metadata roots), so only the unreferenced rest is stat'ed."""


class CandidateSet:
    """Candidate files by name, compactly (one int per file): directory index, size and mtime packed together.

    Names are UUID-unique, so a name is normally in one directory; a name found in several keeps all of them (a
    name listed twice in one directory, as a file list may, is one candidate: the last one added).

    Candidates of the data kinds (``DATA_FILE_KINDS``: data and changelog files and their index sidecars, nearly
    every file of a big table) are held in memory up to ``in_memory`` entries (the option
    ``orphan-files.candidates-in-memory``); beyond that they are spilled to local disk (:mod:`.spill`), and from
    then on every discarded name is written there too, so that :meth:`items` yields exactly the candidates no
    discard named, whatever was spilled when. Other candidates (manifests, lists, index and statistics files, temp
    files: a few per snapshot) are always in memory: :meth:`set_stats` and ``in`` are only used on them.
    """

    def __init__(self, in_memory: int = _IN_MEMORY_DEFAULT) -> None:
        self.dirs: list[str] = []
        self._dir_index: dict[str, int] = {}
        self._by_name: dict[str, int] = {}
        self._more: dict[str, list[int]] = {}
        self._data: dict[str, int] = {}
        self._data_more: dict[str, list[int]] = {}
        self._data_count = 0
        """Entries of ``_data`` and ``_data_more``."""
        self._in_memory = max(1, in_memory)
        self._spill: SpilledCandidates | None = None
        self.kinds: set[FileClass] = set()

    @property
    def spilled(self) -> bool:
        """Whether data candidates were spilled to disk (then :meth:`__len__` is an upper bound)."""
        return self._spill is not None

    def _index(self, directory: str) -> int:
        index = self._dir_index.get(directory)
        if index is None:
            index = self._dir_index[directory] = len(self.dirs)
            self.dirs.append(directory)
        return index

    def add(self, directory: str, name: str, size: int, mtime_ms: int, kind: FileClass) -> None:
        packed = (((mtime_ms << 64) | size) << 32) | self._index(directory)
        data = kind in DATA_FILE_KINDS
        by_name, more = (self._data, self._data_more) if data else (self._by_name, self._more)
        if name in by_name:
            more.setdefault(name, []).append(packed)
        else:
            by_name[name] = packed
        self.kinds.add(kind)
        if data:
            self._data_count += 1
            self._spill_when_full()

    def add_unstated(self, directory: str, names: list[str], kind: FileClass) -> None:
        """``add(directory, name, 0, 0, kind)`` for every name (files whose size and mtime are not known yet)."""
        index = self._index(directory)
        self.kinds.add(kind)
        if kind not in DATA_FILE_KINDS:
            for name in names:
                self.add(directory, name, 0, 0, kind)
            return
        start = 0
        while start < len(names):
            part = names[start : start + max(1, self._in_memory - self._data_count)]
            by_name, more = self._data, self._data_more
            for name in part:
                if by_name.setdefault(name, index) != index:  # also a candidate elsewhere, or listed twice
                    more.setdefault(name, []).append(index)
            self._data_count += len(part)
            start += len(part)
            self._spill_when_full()

    def _spill_when_full(self) -> None:
        if self._data_count < self._in_memory:
            return
        if self._spill is None:
            self._spill = SpilledCandidates()
            log.info("orphan census: over %d data candidates, spilling to %s", self._in_memory, self._spill.directory)
        self._spill.spill(self._data_entries())
        self._data, self._data_more, self._data_count = {}, {}, 0

    def _data_entries(self) -> Iterator[tuple[str, int]]:
        more = self._data_more
        for name, packed in self._data.items():
            yield name, packed
            for value in more.get(name, ()):
                yield name, value

    def set_stats(self, directory: str, name: str, size: int, mtime_ms: int) -> None:
        """The size and mtime of candidate ``name`` in ``directory`` (which must be a candidate there, in memory)."""
        index = self._dir_index[directory]
        packed = (((mtime_ms << 64) | size) << 32) | index
        by_name, more = (self._by_name, self._more) if name in self._by_name else (self._data, self._data_more)
        if by_name[name] & _LOW32 == index:
            by_name[name] = packed
        else:
            more[name] = [packed if value & _LOW32 == index else value for value in more[name]]

    def discard(self, name: str) -> None:
        if self._by_name.pop(name, None) is not None:
            self._more.pop(name, None)
        if self._data.pop(name, None) is not None:
            self._data_count -= 1 + len(self._data_more.pop(name, ()))
        if self._spill is not None:
            self._spill.discard(name)

    def __len__(self) -> int:
        """The number of candidates; once spilled, an upper bound (spilled ones discarded since are counted)."""
        spilled = 0 if self._spill is None else self._spill.spilled
        return len(self._by_name) + sum(map(len, self._more.values())) + self._data_count + spilled

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is a candidate held in memory (always so for the kinds that are never spilled)."""
        return name in self._by_name or name in self._data

    def items(self) -> Iterator[tuple[str, str, int, int]]:
        """(directory, name, size, mtime_ms) of every candidate; once spilled, the spilled ones bucket by bucket
        (MaintenanceError when a spill file cannot be read back)."""
        groups: Iterator[tuple[str, Iterable[int]]]
        if self._spill is not None:
            if self._data_count:
                self._spill.spill(self._data_entries())
                self._data, self._data_more, self._data_count = {}, {}, 0
            groups = self._spill.survivors()
        else:
            groups = ((name, (packed, *self._data_more.get(name, ()))) for name, packed in self._data.items())
        memory = ((name, (packed, *self._more.get(name, ()))) for name, packed in self._by_name.items())
        dirs = self.dirs
        for name, values in itertools.chain(memory, groups):
            for value in _one_per_directory(values):
                yield dirs[value & _LOW32], name, (value >> 32) & _LOW64, value >> 96

    def close(self) -> None:
        """Remove the spill files, if any (done anyway when the set is collected or the process exits)."""
        if self._spill is not None:
            self._spill.close()


def _one_per_directory(values: Iterable[int]) -> Iterable[int]:
    """The packed values of one name, the last one of each directory (a name listed twice there is one file)."""
    if isinstance(values, tuple | list) and len(values) == 1:
        return values
    return {value & _LOW32: value for value in values}.values()


@dataclass
class _DirNode:
    """A partition or bucket directory, for deciding which directories end up empty."""

    rel: str
    parent: str
    depth: int
    entries: int
    mtime_ms: int
    gone: int = 0
    """Entries that will be gone: orphans in it and child directories that will be removed."""


@dataclass
class _Census:
    candidates: CandidateSet
    unknown: list[str]
    no_mtime: list[str]
    nodes: dict[str, _DirNode]
    nested: list[str] = field(default_factory=list)  # roots of other tables (see OrphanPlan.skipped_nested_tables)
    unstated_manifests: list[str] = field(default_factory=list)
    """Manifest-like candidates (manifests, manifest lists, index manifests) listed without an mtime."""
    old_manifests: list[str] = field(default_factory=list)
    """Manifest-like candidates listed with an mtime before the cutoff."""
    directories: int = 0
    files: int = 0
    gone: int = 0
    """Candidates that were gone when stat'ed (never orphans; expected of a file list, which may be days old)."""


def _listings(
    ctx: TableContext, pool: Executor, workers: int, cutoff_ms: int, file_list: FileList | None, with_stats: bool
) -> Iterator[Listing]:
    """The table's directories: listed (every file with its size and mtime when ``with_stats``), or walked from a
    file list whose files are taken as listed without stats (mtime UNKNOWN: stat'ed once nothing references them),
    but for those the list shows too young to matter."""
    data_dir = data_directory(ctx.options)
    keys = ctx.schema.partition_keys
    if file_list is None:
        lazy = frozenset() if with_stats else _STAT_AFTER_REFERENCES
        return walk_table(ctx.io, ctx.layout, keys, pool, workers, without_file_stats=lazy, data_dir=data_dir)
    return walk_listed(_AgedFiles(file_list.files, cutoff_ms), ctx.layout, keys, data_dir=data_dir)


@dataclass(frozen=True, slots=True)
class _AgedFiles:
    """The files of a list, a batch at a time, those older than the cutoff as listed without stats."""

    files: ListedFiles
    cutoff_ms: int

    @property
    def table_roots(self) -> set[str]:
        return self.files.table_roots

    def batches(self) -> Iterator[list[FileInfo]]:
        cutoff_ms = self.cutoff_ms
        for batch in self.files.batches():
            yield [f if f.mtime_ms >= cutoff_ms else FileInfo(f.path, UNKNOWN, UNKNOWN, False) for f in batch]


def _take_census(
    ctx: TableContext,
    pool: Executor,
    workers: int,
    cutoff_ms: int,
    file_list: FileList | None = None,
    observe: Callable[[Listing], None] | None = None,
) -> _Census:
    """The candidates of every listing; ``observe`` (a caller sharing the census, see sharing.py) is handed each
    listing, and a listed table is then listed with every file's size and mtime."""
    rules = NameRules(ctx.options.require(DATA_FILE_PREFIX), ctx.options.require(CHANGELOG_FILE_PREFIX))
    layout = ctx.layout
    census = _Census(CandidateSet(ctx.options.require(ORPHAN_CANDIDATES_IN_MEMORY)), [], [], {})
    classify, add, is_data = rules.classify, census.candidates.add, rules.is_data_name
    seen: set[str] = set()
    for listing in _listings(ctx, pool, workers, cutoff_ms, file_list, with_stats=observe is not None):
        if observe is not None:
            observe(listing)
        directory, dir_kind, metadata_dir = listing.rel, listing.kind, listing.metadata_dir
        if not _count_directory(census, listing, seen):
            continue
        in_bucket = dir_kind is DirKind.BUCKET
        unstated_data: list[str] = []  # most of a bucket directory: added to the candidates at once, below
        for info in listing.entries:
            if info.is_dir:
                continue
            census.files += 1
            name = info.name
            if in_bucket and info.mtime_ms == UNKNOWN and is_data(name):
                unstated_data.append(name)
                continue
            kind = classify(dir_kind, name, metadata_dir)
            if kind is FileClass.ROOT_METADATA:
                continue
            if kind not in CANDIDATE_KINDS:
                census.unknown.append(layout.relative(info.path))
            elif info.mtime_ms == UNKNOWN:
                add(directory, name, 0, 0, kind)  # stat later, if nothing references it (_stat_unreferenced)
                if kind in MANIFEST_FILE_KINDS:
                    census.unstated_manifests.append(name)
            elif info.mtime_ms <= MIN_SANE_MTIME_MS:
                census.no_mtime.append(layout.relative(info.path))
            elif info.mtime_ms < cutoff_ms:
                add(directory, name, info.size, info.mtime_ms, kind)
                if kind in MANIFEST_FILE_KINDS:
                    census.old_manifests.append(name)
        if unstated_data:
            census.candidates.add_unstated(directory, unstated_data, FileClass.DATA)
    if file_list is not None:  # a path the list names twice is reported once
        census.unknown = list(dict.fromkeys(census.unknown))
        census.unstated_manifests = list(dict.fromkeys(census.unstated_manifests))
    return census


def _count_directory(census: _Census, listing: Listing, seen: set[str]) -> bool:
    """Count a listed directory once, and its entries in the census's directory nodes; False for the root of
    another table. A file list's directories are listed once per chunk of the list (census.walk_listed): their
    entries are added up, subdirectories counted again in each chunk (so never too few: a directory is removed
    only when none of its entries is left, and no directory is removed after a file list anyway)."""
    directory, dir_kind = listing.rel, listing.kind
    first = directory not in seen
    if first:
        seen.add(directory)
        census.directories += 1
    if dir_kind is DirKind.NESTED_TABLE:
        if first:
            census.nested.append(directory)
        return False
    if dir_kind in (DirKind.PARTITION, DirKind.BUCKET):
        node = census.nodes.get(directory)
        if node is None:
            parent = directory.rpartition("/")[0]
            census.nodes[directory] = _DirNode(
                directory, parent, directory.count("/") + 1, len(listing.entries), listing.mtime_ms
            )
        else:
            node.entries += len(listing.entries)
    return True


def _settle_manifests(ctx: TableContext, census: _Census, cutoff_ms: int) -> bool:
    """Give the manifest-like candidates listed without an mtime and still unreferenced their size and mtime, and
    drop those too young, gone or without a usable mtime; True if any manifest-like candidate remains."""
    candidates = census.candidates
    remaining = any(name in candidates for name in census.old_manifests)
    for name in census.unstated_manifests:
        if name not in candidates:
            continue
        info = ctx.io.stat_file(ctx.layout.manifest_file(name))
        if info is not None and _old_enough(info, cutoff_ms, TableLayout.manifest_rel(name), census.no_mtime):
            candidates.set_stats(MANIFEST_DIR, name, info.size, info.mtime_ms)
            remaining = True
        else:
            if info is None:
                census.gone += 1
            candidates.discard(name)
    return remaining


def _old_enough(info: FileInfo, cutoff_ms: int, path: str, no_mtime: list[str]) -> bool:
    """Whether a candidate stat'ed after the references were read is old enough to be an orphan: not when it is
    too young, nor when its mtime is unusable (then ``path`` is added to ``no_mtime``, as the census does)."""
    if info.mtime_ms <= MIN_SANE_MTIME_MS:
        no_mtime.append(path)
        return False
    return info.mtime_ms < cutoff_ms
