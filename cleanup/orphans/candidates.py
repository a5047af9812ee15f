"""The census of candidates: every file named like a table file in the table's own directories and not known
to be too young, held compactly by name; and the late age check of those listed without an mtime."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field

from tableformat.context import TableContext
from tableformat.data_paths import data_directory
from tableformat.io.fileio import UNKNOWN, FileInfo
from tableformat.layout import MANIFEST_DIR, TableLayout
from tableformat.options import CHANGELOG_FILE_PREFIX, DATA_FILE_PREFIX

from .census import (
    CANDIDATE_KINDS,
    MANIFEST_FILE_KINDS,
    DirKind,
    FileClass,
    Listing,
    NameRules,
    walk_listed,
    walk_table,
)
from .file_list import FileList
from .model import MIN_SANE_MTIME_MS

log = logging.getLogger(__name__)


_LOW32 = (1 << 32) - 1
_LOW64 = (1 << 64) - 1
_STAT_AFTER_REFERENCES = frozenset({DirKind.BUCKET, DirKind.METADATA, DirKind.MANIFEST})
"""Directories listed without file sizes and mtimes where that saves a call per file: most of their files are
referenced or never candidates (metadata roots), so only the unreferenced rest is stat'ed."""


class CandidateSet:
    """Candidate files by name, compactly (one int per file): directory index, size and mtime packed together.

    Names are UUID-unique, so a name is normally in one directory; a name found in several keeps all of them.
    """

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self._dir_index: dict[str, int] = {}
        self._by_name: dict[str, int] = {}
        self._more: dict[str, list[int]] = {}
        self.kinds: set[FileClass] = set()

    def add(self, directory: str, name: str, size: int, mtime_ms: int, kind: FileClass) -> None:
        index = self._dir_index.get(directory)
        if index is None:
            index = self._dir_index[directory] = len(self.dirs)
            self.dirs.append(directory)
        packed = (((mtime_ms << 64) | size) << 32) | index
        if name in self._by_name:
            self._more.setdefault(name, []).append(packed)
        else:
            self._by_name[name] = packed
        self.kinds.add(kind)

    def add_unstated(self, directory: str, names: list[str], kind: FileClass) -> None:
        """``add(directory, name, 0, 0, kind)`` for every name (files whose size and mtime are not known yet)."""
        index = self._dir_index.get(directory)
        if index is None:
            index = self._dir_index[directory] = len(self.dirs)
            self.dirs.append(directory)
        by_name, more = self._by_name, self._more
        for name in names:
            if by_name.setdefault(name, index) != index:  # the name is a candidate in another directory too
                more.setdefault(name, []).append(index)
        self.kinds.add(kind)

    def set_stats(self, directory: str, name: str, size: int, mtime_ms: int) -> None:
        """The size and mtime of candidate ``name`` in ``directory`` (which must be a candidate there)."""
        index = self._dir_index[directory]
        packed = (((mtime_ms << 64) | size) << 32) | index
        if self._by_name[name] & _LOW32 == index:
            self._by_name[name] = packed
        else:
            self._more[name] = [packed if value & _LOW32 == index else value for value in self._more[name]]

    def discard(self, name: str) -> None:
        if self._by_name.pop(name, None) is not None:
            self._more.pop(name, None)

    def __len__(self) -> int:
        return len(self._by_name) + sum(len(v) for v in self._more.values())

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def items(self) -> Iterator[tuple[str, str, int, int]]:
        """(directory, name, size, mtime_ms) of every candidate."""
        for name, packed in self._by_name.items():
            for value in (packed, *self._more.get(name, ())):
                yield self.dirs[value & _LOW32], name, (value >> 32) & _LOW64, value >> 96


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
    gone: list[str] = field(default_factory=list)
    """Candidates of a file list that were gone when stat'ed (never orphans)."""


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
    files = [f if f.mtime_ms >= cutoff_ms else FileInfo(f.path, UNKNOWN, UNKNOWN, False) for f in file_list.files]
    return walk_listed(files, ctx.layout, keys, data_dir=data_dir)


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
    census = _Census(CandidateSet(), [], [], {})
    classify, add, is_data = rules.classify, census.candidates.add, rules.is_data_name
    for listing in _listings(ctx, pool, workers, cutoff_ms, file_list, with_stats=observe is not None):
        census.directories += 1
        if observe is not None:
            observe(listing)
        directory, dir_kind, metadata_dir = listing.rel, listing.kind, listing.metadata_dir
        if dir_kind is DirKind.NESTED_TABLE:
            census.nested.append(directory)
            continue
        if dir_kind in (DirKind.PARTITION, DirKind.BUCKET):
            parent = directory.rpartition("/")[0]
            census.nodes[directory] = _DirNode(
                directory, parent, directory.count("/") + 1, len(listing.entries), listing.mtime_ms
            )
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
    return census


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
                census.gone.append(TableLayout.manifest_rel(name))
            candidates.discard(name)
    return remaining


def _old_enough(info: FileInfo, cutoff_ms: int, path: str, no_mtime: list[str]) -> bool:
    """Whether a candidate stat'ed after the references were read is old enough to be an orphan: not when it is
    too young, nor when its mtime is unusable (then ``path`` is added to ``no_mtime``, as the census does)."""
    if info.mtime_ms <= MIN_SANE_MTIME_MS:
        no_mtime.append(path)
        return False
    return info.mtime_ms < cutoff_ms
