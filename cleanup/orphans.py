"""Remove orphan files: files the table format wrote that no snapshot, tag, changelog or branch references.

Plan, then execute (``remove_orphan_files`` does both; a dry run stops after planning):

1. **Candidates first.** List the table's own directories in parallel (:mod:`.file_census`) and keep, by name,
   the files whose names the format produces and whose mtime is older than the cutoff. Unknown names are
   reported, never deleted; metadata roots are never candidates.
2. **Then references.** Read every root of the main table and of every branch (snapshots, tags, changelogs;
   :mod:`.references`), their manifest lists and their manifests, and drop from the candidates every name any of
   them mentions: manifest lists, index manifests, statistics files, manifests, and the file name and extra files
   of every ADD *and* DELETE entry. Only candidates are held in memory; referenced names are never collected. A
   root that vanished concurrently is skipped; any unreadable root, list or manifest stops the run before deletion.
   Manifests are read only when data candidates exist, and then only those that can name a data file no other
   read manifest names (:class:`.references.DataManifestSelection`: live state of each run of snapshots plus the
   deltas up to its last DELETE); the manifest lists that selection needs are read first, every other list only
   when an old manifest-like candidate is still unreferenced after them.
   On the local filesystem, data, manifest and metadata directories are listed without a stat per file; only the
   files left unreferenced are stat'ed, after the references were read (as safe: table files are never
   rewritten, so a later stat sees the same mtime).
3. **Delete** what is left, in batches of ``DELETE_BATCH`` paths through ``FileIO.delete_files``, batches in
   parallel; report only what the store confirms deleted. Then remove partition and bucket directories that are
   empty (non-recursively, never on object stores, never the table root or a metadata directory).

Listing candidates before reading references closes the race of Paimon #3074: a file committed after step 2's
listing was either written after step 1 (not a candidate) or is younger than the cutoff (not a candidate), unless
a writer took longer than the cutoff between writing a file and committing it. The cutoff is the only protection of
such in-flight files, hence its minimum of one hour (``force`` lowers it; a cutoff in the future is always refused).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import timedelta

from tableformat.context import TableContext
from tableformat.data_paths import data_directory, require_data_inside_root
from tableformat.errors import (
    CorruptMetadataError,
    DeleteFailedError,
    MaintenanceError,
    StorageError,
    UnsafePathError,
    UnsupportedFormatError,
    ValidationError,
)
from tableformat.io.fileio import UNKNOWN, FileInfo
from tableformat.layout import LATEST
from tableformat.options import DATA_FILE_PREFIX, ORPHAN_OLDER_THAN
from tableformat.parallel import bounded_map, executor, resolve_delete_parallelism, resolve_parallelism

from .file_census import CANDIDATE_KINDS, DirKind, FileKind, NameRules, walk_table
from .references import (
    MAX_ROUNDS,
    DataManifestSelection,
    ListSummary,
    References,
    Root,
    list_owners,
    summarize,
)

log = logging.getLogger(__name__)

MIN_OLDER_THAN_MS = 3_600_000
"""Cutoffs closer to now than this are refused unless forced."""

DELETE_BATCH = 1000
"""Most paths per FileIO.delete_files call (one S3 DeleteObjects request); fewer when that spreads the paths over
all delete threads, but not under MIN_DELETE_BATCH."""

STAT_CHUNK = 128
"""Files stat'ed per thread task when listings left out their mtimes."""

MIN_DELETE_BATCH = 100
"""Batches are not split below this: a thread per handful of files costs more than it saves."""

MAX_PLAN_AGE_MS = 3_600_000
"""A plan older than this is refused by execute_orphan_plan: plan again."""

MIN_SANE_MTIME_MS = 10_000_000_000
"""Mtimes at or below this (April 1970) mean a store reporting seconds or nothing: such files are never deleted."""

_LOW32 = (1 << 32) - 1
_LOW64 = (1 << 64) - 1
_REFERENCE_ERRORS = (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, OSError)
_STAT_AFTER_REFERENCES = frozenset({DirKind.BUCKET, DirKind.METADATA, DirKind.MANIFEST})
"""Directories listed without file sizes and mtimes where that saves a call per file: most of their files are
referenced or never candidates (metadata roots), so only the unreferenced rest is stat'ed."""
_DATA_KINDS = frozenset({FileKind.DATA, FileKind.DATA_INDEX})
_MANIFEST_KINDS = frozenset({FileKind.MANIFEST, FileKind.MANIFEST_LIST, FileKind.INDEX_MANIFEST})


@dataclass(frozen=True, slots=True)
class OrphanFile:
    """A file planned for deletion: path relative to the table root, size and mtime."""

    path: str
    size: int
    mtime_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanPlan:
    """What an orphan cleanup would delete; immutable, produced by plan_orphan_removal."""

    root: str
    """The table root as a FileIO path (execute_orphan_plan refuses a plan made for another table)."""
    planned_at_ms: int
    cutoff_ms: int
    """Only files with an mtime before this are orphans."""
    orphans: tuple[OrphanFile, ...]
    skipped_unknown: tuple[str, ...]
    """Files whose names the format does not produce where they are: never deleted."""
    skipped_no_mtime: tuple[str, ...] = ()
    """Candidates whose store reports no usable mtime: never deleted."""
    empty_dirs: tuple[str, ...] = ()
    """Partition and bucket directories that are empty once the orphans are gone, deepest first."""
    skipped_nested_tables: tuple[str, ...] = ()
    """Roots of other tables where data directories were expected (they hold ``schema/`` or ``snapshot/``)."""
    directories_listed: int = 0
    files_listed: int = 0
    candidates: int = 0
    """Files named like table files and not known to be too young, before references were subtracted (files listed
    without an mtime count here; their age is checked once nothing references them)."""
    roots_read: int = 0

    @property
    def orphan_bytes(self) -> int:
        return sum(o.size for o in self.orphans)


@dataclass(frozen=True, slots=True, kw_only=True)
class OrphanResult:
    """The outcome of an orphan cleanup; paths are relative to the table root."""

    orphan_files: int
    """Orphans found (deleted, or to be deleted in a dry run)."""
    orphan_bytes: int
    deleted_paths: tuple[str, ...]
    """Confirmed deleted; in a dry run, exactly what the run would delete."""
    deleted_bytes: int
    skipped_unknown: tuple[str, ...]
    dry_run: bool
    cutoff_ms: int
    failed: tuple[str, ...] = ()
    """'path: reason' of orphans that could not be deleted."""
    removed_dirs: tuple[str, ...] = ()
    skipped_nested_tables: tuple[str, ...] = ()
    """Roots of other tables inside this one's data directories: never entered (see OrphanPlan)."""
    plan: OrphanPlan | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, object]:
        """The --json document."""
        return {
            "orphan_files": self.orphan_files,
            "orphan_bytes": self.orphan_bytes,
            "deleted_paths": list(self.deleted_paths),
            "deleted_files": len(self.deleted_paths),
            "deleted_bytes": self.deleted_bytes,
            "skipped_unknown": list(self.skipped_unknown),
            "failed": list(self.failed),
            "removed_dirs": list(self.removed_dirs),
            "skipped_nested_tables": list(self.skipped_nested_tables),
            "dry_run": self.dry_run,
            "cutoff_ms": self.cutoff_ms,
        }


def now_epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def resolve_older_than_ms(ctx: TableContext, older_than: timedelta | None, *, force: bool) -> int:
    """The guard in ms: the argument, else the table option; refused in the future, and under 1 h unless forced."""
    if older_than is None:
        older_ms = ctx.options.require(ORPHAN_OLDER_THAN)
    elif isinstance(older_than, timedelta):
        older_ms = older_than // timedelta(milliseconds=1)
    else:
        raise ValidationError(f"older_than must be a datetime.timedelta, got {type(older_than).__name__}")
    if older_ms < 0:
        raise ValidationError(f"older_than {older_ms} ms puts the cutoff in the future; refusing (even with force)")
    if older_ms < MIN_OLDER_THAN_MS and not force:
        raise ValidationError(
            f"older_than {older_ms / 60_000:g} min is under the 1 h minimum: files of writers still running would be "
            "deleted; pass force=True (--force) if no writer is running"
        )
    return older_ms


class CandidateSet:
    """Candidate files by name, compactly (one int per file): directory index, size and mtime packed together.

    Names are UUID-unique, so a name is normally in one directory; a name found in several keeps all of them.
    """

    def __init__(self) -> None:
        self.dirs: list[str] = []
        self._dir_index: dict[str, int] = {}
        self._by_name: dict[str, int] = {}
        self._more: dict[str, list[int]] = {}
        self.kinds: set[FileKind] = set()

    def add(self, directory: str, name: str, size: int, mtime_ms: int, kind: FileKind) -> None:
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

    def add_unstated(self, directory: str, names: list[str], kind: FileKind) -> None:
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


def _take_census(ctx: TableContext, pool: Executor, workers: int, cutoff_ms: int) -> _Census:
    rules = NameRules(ctx.options.require(DATA_FILE_PREFIX))
    layout = ctx.layout
    census = _Census(CandidateSet(), [], [], {})
    classify, add, is_data = rules.classify, census.candidates.add, rules.is_data_name
    lazy = _STAT_AFTER_REFERENCES
    data_dir = data_directory(ctx.options)
    keys = ctx.schema.partition_keys
    for listing in walk_table(ctx.io, layout, keys, pool, workers, without_file_stats=lazy, data_dir=data_dir):
        census.directories += 1
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
            if kind is FileKind.ROOT_METADATA:
                continue
            if kind not in CANDIDATE_KINDS:
                census.unknown.append(layout.relative(info.path))
            elif info.mtime_ms == UNKNOWN:
                add(directory, name, 0, 0, kind)  # stat later, if nothing references it (_stat_unreferenced)
                if kind in _MANIFEST_KINDS:
                    census.unstated_manifests.append(name)
            elif info.mtime_ms <= MIN_SANE_MTIME_MS:
                census.no_mtime.append(layout.relative(info.path))
            elif info.mtime_ms < cutoff_ms:
                add(directory, name, info.size, info.mtime_ms, kind)
                if kind in _MANIFEST_KINDS:
                    census.old_manifests.append(name)
        if unstated_data:
            census.candidates.add_unstated(directory, unstated_data, FileKind.DATA)
    return census


def _discard_referenced(ctx: TableContext, pool: Executor, parallelism: int, census: _Census, cutoff_ms: int) -> int:
    """Remove every referenced name from the candidates; returns the number of roots read.

    Manifest lists are read in two steps: first those the data selection needs (every delta list, the base lists
    at the ends of each run of snapshots); then, only if a manifest-like candidate is still unreferenced and old
    enough (its age is checked now, see _settle_manifests), every other list, to know every manifest in use.
    Then the read is closed (_close_over_new_roots): the roots are listed again, and every root that appeared
    meanwhile is read in full, until a listing shows no root that was not read.
    """
    refs = References(ctx, pool, parallelism)
    roots = refs.collect_roots()
    main_snapshots = [r for r in roots if r.kind == "snapshot" and not r.branch]
    if not main_snapshots and ctx.io.exists(ctx.layout.hint_file(LATEST)):
        raise MaintenanceError(
            f"{ctx.url()} lists no snapshot but has a LATEST hint: refusing to treat every file as an orphan"
        )
    read = _ReadSoFar()
    _discard_first_pass(ctx, refs, census, cutoff_ms, roots, read)
    return len(roots) + _close_over_new_roots(refs, census.candidates, roots, read)


@dataclass
class _ReadSoFar:
    """Manifest lists and manifests whose names were already discarded from the candidates."""

    lists: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)


def _discard_first_pass(
    ctx: TableContext, refs: References, census: _Census, cutoff_ms: int, roots: list[Root], read: _ReadSoFar
) -> None:
    candidates = census.candidates
    for root in roots:
        for _, name in refs.root_files(root):
            candidates.discard(name)
    if not candidates.kinds & (_DATA_KINDS | _MANIFEST_KINDS):
        return
    selection = DataManifestSelection(roots)
    summaries: dict[str, ListSummary] = {}
    for name, rows in refs.named_manifest_lists(selection.owners):
        for row in rows:
            candidates.discard(row.file_name)
        summaries[name] = summarize(rows)
    read.lists.update(selection.owners)
    if _settle_manifests(ctx, census, cutoff_ms):  # old manifest-like files nothing read so far names
        rest = {name: owners for name, owners in list_owners(roots).items() if name not in summaries}
        for _, rows in refs.named_manifest_lists(rest):
            for row in rows:
                candidates.discard(row.file_name)
        read.lists.update(rest)
    if not candidates.kinds & _DATA_KINDS:
        return
    manifests = selection.select(summaries)
    if manifests is None:  # a list vanished with its snapshot: read everything rather than reason about it
        log.info("a manifest list vanished during the run; reading every manifest")
        manifests = {row.file_name: None for _, rows in refs.manifest_lists(roots) for row in rows}
    for _, files in refs.manifest_file_names(manifests):
        for name in files:
            candidates.discard(name)
    read.manifests.update(manifests)


def _close_over_new_roots(refs: References, candidates: CandidateSet, roots: list[Root], read: _ReadSoFar) -> int:
    """List the roots again until a listing shows none that was not read; read every new one in full. Returns how
    many new roots were read.

    Why (issue 10, defect 2): while the first pass read, expiration may have removed the snapshots it had listed,
    with their manifest lists, and commits may have added newer snapshots that still name old files. A new root
    names only files that some root of an earlier listing names, or files written after the candidates were
    listed (too young to be candidates, assumption A3): a commit builds on the latest snapshot, a tag or branch
    copies an existing snapshot. So once a listing taken after all reading holds no unread root, every file any
    present or future root references has been discarded from the candidates.
    """
    seen = {(root.path, root.snapshot.base_manifest_list) for root in roots}
    added = 0
    for _ in range(MAX_ROUNDS):
        if not len(candidates):
            return added
        new = [root for root in refs.collect_roots() if (root.path, root.snapshot.base_manifest_list) not in seen]
        if not new:
            return added
        log.info("%d root(s) appeared while references were read; reading them too", len(new))
        seen.update((root.path, root.snapshot.base_manifest_list) for root in new)
        added += len(new)
        for root in new:
            for _, name in refs.root_files(root):
                candidates.discard(name)
        if not candidates.kinds & (_DATA_KINDS | _MANIFEST_KINDS):
            continue
        owners = {name: owners for name, owners in list_owners(new).items() if name not in read.lists}
        manifests: dict[str, None] = {}
        for _, rows in refs.named_manifest_lists(owners):
            for row in rows:
                candidates.discard(row.file_name)
                if row.file_name not in read.manifests:
                    manifests[row.file_name] = None
        read.lists.update(owners)
        if not candidates.kinds & _DATA_KINDS:
            continue
        for _, files in refs.manifest_file_names(manifests):
            for name in files:
                candidates.discard(name)
        read.manifests.update(manifests)
    raise MaintenanceError(
        f"the snapshots and tags of {refs.ctx.url()} kept changing over {MAX_ROUNDS} listings after the references "
        "were read; nothing was deleted, try again later"
    )


def _settle_manifests(ctx: TableContext, census: _Census, cutoff_ms: int) -> bool:
    """Give the manifest-like candidates listed without an mtime and still unreferenced their size and mtime, and
    drop those too young, gone or without a usable mtime; True if any manifest-like candidate remains."""
    candidates = census.candidates
    remaining = any(name in candidates for name in census.old_manifests)
    for name in census.unstated_manifests:
        if name not in candidates:
            continue
        info = ctx.io.stat_file(ctx.layout.join("manifest", name))
        if info is not None and _old_enough(info, cutoff_ms, f"manifest/{name}", census.no_mtime):
            candidates.set_stats("manifest", name, info.size, info.mtime_ms)
            remaining = True
        else:
            candidates.discard(name)
    return remaining


def _old_enough(info: FileInfo, cutoff_ms: int, path: str, no_mtime: list[str]) -> bool:
    """Whether a candidate stat'ed after the references were read is old enough to be an orphan: not when it is
    too young, nor when its mtime is unusable (then ``path`` is added to ``no_mtime``, as the census does)."""
    if info.mtime_ms <= MIN_SANE_MTIME_MS:
        no_mtime.append(path)
        return False
    return info.mtime_ms < cutoff_ms


def _stat_unreferenced(
    ctx: TableContext, threads: int, candidates: CandidateSet, cutoff_ms: int, no_mtime: list[str]
) -> list[OrphanFile]:
    """The unreferenced candidates older than the cutoff. Those listed without size and mtime are stat'ed now, in
    chunks over ``threads`` threads (inline on local disk, where a stat of a listed file is too quick for threads
    to pay off); a file gone since is skipped, one without a usable mtime goes to ``no_mtime``. Stat'ing after the
    references were read is as safe as at listing time: a table file is never rewritten, so its mtime can only be
    the same."""
    orphans: list[OrphanFile] = []
    unstated: list[str] = []
    for directory, name, size, mtime_ms in candidates.items():
        path = f"{directory}/{name}" if directory else name
        if mtime_ms:
            orphans.append(OrphanFile(path, size, mtime_ms))
        else:
            unstated.append(path)
    layout, file_io = ctx.layout, ctx.io

    def stat_chunk(chunk: list[str]) -> list[FileInfo | None]:
        return [file_io.stat_file(layout.join(rel)) for rel in chunk]

    chunks = [unstated[i : i + STAT_CHUNK] for i in range(0, len(unstated), STAT_CHUNK)]
    with executor(min(threads, len(chunks)), "tablefmt-stat") as pool:
        for chunk, infos in bounded_map(pool, stat_chunk, chunks, 2 * threads):
            for path, info in zip(chunk, infos):
                if info is not None and _old_enough(info, cutoff_ms, path, no_mtime):
                    orphans.append(OrphanFile(path, info.size, info.mtime_ms))
    orphans.sort(key=lambda o: o.path)
    return orphans


def _empty_dirs(census: _Census, orphans: list[OrphanFile], cutoff_ms: int) -> tuple[str, ...]:
    """Data directories that will be empty after the orphans are deleted, deepest first."""
    for orphan in orphans:
        node = census.nodes.get(orphan.path.rpartition("/")[0])
        if node is not None:
            node.gone += 1
    removable: list[str] = []
    for node in sorted(census.nodes.values(), key=lambda n: (-n.depth, n.rel)):
        if node.entries - node.gone > 0:
            continue
        emptied = node.gone > 0
        old_and_empty = node.entries == 0 and MIN_SANE_MTIME_MS < node.mtime_ms < cutoff_ms
        if emptied or old_and_empty:
            removable.append(node.rel)
            parent = census.nodes.get(node.parent)
            if parent is not None:
                parent.gone += 1
    return tuple(removable)


def plan_orphan_removal(
    ctx: TableContext,
    *,
    older_than: timedelta | None = None,
    force: bool = False,
    parallelism: int | None = None,
    now_ms: int | None = None,
) -> OrphanPlan:
    """List candidates, then subtract everything referenced; nothing is deleted.

    Raises ValidationError for a refused cutoff and MaintenanceError when any directory, root, manifest list or
    manifest cannot be read (nothing can be safely called an orphan then).
    """
    older_ms = resolve_older_than_ms(ctx, older_than, force=force)
    workers = resolve_parallelism(ctx.options, ctx.io, parallelism)
    require_data_inside_root(ctx.options, ctx.url(), "clean orphan files of")
    planned_at = now_epoch_ms() if now_ms is None else now_ms
    cutoff_ms = planned_at - older_ms
    with executor(workers, "tablefmt-orphans") as pool:
        try:
            census = _take_census(ctx, pool, workers, cutoff_ms)
            candidates = census.candidates
            found = len(candidates)
            roots_read = _discard_referenced(ctx, pool, workers, census, cutoff_ms) if found else 0
            orphans = _stat_unreferenced(ctx, workers, candidates, cutoff_ms, census.no_mtime)
        except MaintenanceError:
            raise
        except _REFERENCE_ERRORS as exc:
            raise MaintenanceError(f"orphan cleanup of {ctx.url()} stopped, nothing was deleted: {exc}") from exc
    layout = ctx.layout
    empty = () if ctx.io.is_object_store else _empty_dirs(census, orphans, cutoff_ms)
    log.info(
        "orphan plan for %s: %d dirs, %d files listed, %d candidates, %d roots read, %d orphans, %d unknown",
        ctx.url(layout.root),
        census.directories,
        census.files,
        found,
        roots_read,
        len(orphans),
        len(census.unknown),
    )
    return OrphanPlan(
        root=layout.root,
        planned_at_ms=planned_at,
        cutoff_ms=cutoff_ms,
        orphans=tuple(orphans),
        skipped_unknown=tuple(sorted(census.unknown)),
        skipped_no_mtime=tuple(sorted(census.no_mtime)),
        empty_dirs=empty,
        skipped_nested_tables=tuple(sorted(census.nested)),
        directories_listed=census.directories,
        files_listed=census.files,
        candidates=found,
        roots_read=roots_read,
    )


def _delete_batch(ctx: TableContext, paths: list[str]) -> tuple[list[str], list[str]]:
    """(deleted, failed) for one batch; a failed batch never stops the others."""
    try:
        return ctx.io.delete_files(paths), []
    except DeleteFailedError as exc:
        return list(exc.deleted), list(exc.failed)
    except OSError as exc:
        return [], [f"{path}: {exc}" for path in paths]


def execute_orphan_plan(
    ctx: TableContext, plan: OrphanPlan, *, parallelism: int | None = None, now_ms: int | None = None
) -> OrphanResult:
    """Delete a plan's orphans (batched, in parallel), then its empty directories; report confirmed deletions."""
    if plan.root != ctx.layout.root:
        raise ValidationError(f"the plan was made for {plan.root!r}, not for {ctx.layout.root!r}")
    now = now_epoch_ms() if now_ms is None else now_ms
    if now - plan.planned_at_ms > MAX_PLAN_AGE_MS:
        raise MaintenanceError("the orphan plan is more than an hour old; plan again (new commits may reference files)")
    workers = resolve_delete_parallelism(ctx.options, parallelism)
    layout = ctx.layout
    size_of = {layout.join(o.path): o.size for o in plan.orphans}
    paths = list(size_of)
    size = min(DELETE_BATCH, max(MIN_DELETE_BATCH, -(-len(paths) // workers)))  # spread over the workers
    batches = [paths[i : i + size] for i in range(0, len(paths), size)]
    deleted: list[str] = []
    failed: list[str] = []
    if batches:
        with executor(min(workers, len(batches)), "tablefmt-delete") as pool:
            for done, errors in pool.map(lambda batch: _delete_batch(ctx, batch), batches):
                deleted += done
                failed += errors
    if log.isEnabledFor(logging.INFO):
        for path in deleted:
            log.info("deleted orphan %s", ctx.url(path))
    for failure in failed:
        log.warning("could not delete orphan %s", failure)
    removed: list[str] = []
    if not ctx.io.is_object_store:
        for rel in plan.empty_dirs:
            try:
                if ctx.io.remove_empty_dir(layout.join(rel)):
                    removed.append(rel)
                    log.info("removed empty directory %s", ctx.url(layout.join(rel)))
            except OSError as exc:
                log.warning("could not remove empty directory %s: %s", rel, exc)
    deleted_rel = tuple(sorted(layout.relative(p) for p in deleted))
    return OrphanResult(
        orphan_files=len(plan.orphans),
        orphan_bytes=plan.orphan_bytes,
        deleted_paths=deleted_rel,
        deleted_bytes=sum(size_of[p] for p in deleted if p in size_of),
        skipped_unknown=plan.skipped_unknown,
        dry_run=False,
        cutoff_ms=plan.cutoff_ms,
        failed=tuple(failed),
        removed_dirs=tuple(removed),
        skipped_nested_tables=plan.skipped_nested_tables,
        plan=plan,
    )


def dry_run_result(plan: OrphanPlan) -> OrphanResult:
    """The result of a dry run: what execute_orphan_plan would delete, nothing deleted."""
    return OrphanResult(
        orphan_files=len(plan.orphans),
        orphan_bytes=plan.orphan_bytes,
        deleted_paths=tuple(o.path for o in plan.orphans),
        deleted_bytes=plan.orphan_bytes,
        skipped_unknown=plan.skipped_unknown,
        dry_run=True,
        cutoff_ms=plan.cutoff_ms,
        removed_dirs=plan.empty_dirs,
        skipped_nested_tables=plan.skipped_nested_tables,
        plan=plan,
    )


def remove_orphan_files(
    ctx: TableContext,
    *,
    older_than: timedelta | None = None,
    dry_run: bool = False,
    parallelism: int | None = None,
    force: bool = False,
    now_ms: int | None = None,
) -> OrphanResult:
    """Delete files no snapshot, tag, changelog or branch references and older than ``older_than``.

    ``older_than`` defaults to the table option ``orphan-files.older-than`` (1 day); under 1 hour is refused unless
    ``force``, a negative value always. ``parallelism`` defaults to ``file-operation.thread-num``. With
    ``dry_run`` nothing is deleted and ``deleted_paths`` lists exactly what a real run would delete.
    """
    plan = plan_orphan_removal(ctx, older_than=older_than, force=force, parallelism=parallelism, now_ms=now_ms)
    if dry_run:
        return dry_run_result(plan)
    return execute_orphan_plan(ctx, plan, parallelism=parallelism, now_ms=plan.planned_at_ms)
