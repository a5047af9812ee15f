"""The files ``check`` verifies: every file the roots reference, with the size recorded for it.

Referenced files are those of every root (snapshots, tags and changelogs of the main table and of every branch):
their manifest lists (sizes from the snapshot where it records them), index manifests and statistics files, the
manifests of the lists (``_FILE_SIZE`` of the list rows), each root's **live** data files (the ADD and DELETE entries
of its base and delta lists merged; ``_FILE_SIZE`` of the entry) and its changelog files (the ADD entries of its
changelog list). The lists and manifests are read here, tolerating what is missing or unreadable (recorded), or
handed over by orphan cleanup's planner (:class:`PlannerRead`), which reads them once for both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from tableformat.codec.avro_projection import ScanRef
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import (
    CorruptMetadataError,
    StorageError,
    UnsafePathError,
    UnsupportedFormatError,
)
from tableformat.layout import INDEX_DIR, STATISTICS_DIR, TableLayout, check_file_name
from tableformat.live_set import merge_entries
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.options import INDEX_FILE_IN_DATA_FILE_DIR
from tableformat.parallel import bounded_map

from .orphans.census import DirKind, Listing
from .orphans.spill import SpillDirectory
from .roots import References, Root

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A referenced file that is missing (``actual_size`` None) or has another size than recorded."""

    path: str
    """Relative to the table root."""
    kind: str
    """'data', 'changelog', 'manifest', 'manifest-list', 'index-manifest', 'index' or 'statistics'."""
    referenced_by: str
    expected_size: int | None
    actual_size: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "referenced_by": self.referenced_by,
            "expected_bytes": self.expected_size,
            "actual_bytes": self.actual_size,
        }


@dataclass(frozen=True, slots=True)
class Ref:
    kind: str
    expected_size: int | None
    referenced_by: str


class Verifier:
    """Each referenced file against the size it was listed with, as the references are read: nothing is kept per
    file but its listed size (marked once verified). The whole listing must be given (:meth:`list_files`) before the
    first :meth:`add`. Files referenced but not listed are kept (few: written after the listing, or missing) until
    :meth:`resolve_unlisted` stats them.

    Over ``in_memory`` listed files (``orphan-files.candidates-in-memory``), the sizes are spilled to local disk by
    the hash of their path, and so is every reference from then on (:class:`_SpilledVerification`); the references
    are verified bucket by bucket when resolved, holding one bucket's sizes at a time."""

    def __init__(self, in_memory: int = 1 << 62) -> None:
        self.sizes: dict[str, int] = {}
        """Listed size by path relative to the root; ``~size`` (negative) once verified."""
        self._in_memory = max(1, in_memory)
        self._spill: _SpilledVerification | None = None
        self.unlisted: dict[str, Ref] = {}
        self._unsized: set[str] = set()
        """Verified without a recorded size: a later reference that records one is compared."""
        self.found = 0
        self.found_bytes = 0
        self.missing: list[FileProblem] = []
        self.mismatched: list[FileProblem] = []
        self.errors: list[str] = []
        self.external = 0

    def restarted(self) -> Verifier:
        """A verifier to start over with (the planner stopped part way: what it handed over is dropped), keeping
        the errors recorded so far."""
        if self._spill is not None:
            self._spill.close()
        fresh = Verifier(self._in_memory)
        fresh.errors = self.errors
        return fresh

    def list_files(self, files: Iterable[tuple[str, int]]) -> None:
        """Listed files: (path relative to the root, size)."""
        self.sizes.update(files)
        if len(self.sizes) >= self._in_memory:
            if self._spill is None:
                self._spill = _SpilledVerification()
                log.info("check: over %d listed files, spilling to %s", self._in_memory, self._spill.directory)
            self._spill.spill_sizes(self.sizes)
            self.sizes = {}

    def list_listing(self, listing: Listing) -> None:
        """The files of one listed directory, with the sizes they were listed with."""
        prefix = f"{listing.rel}/"
        self.list_files((prefix + info.name, info.size) for info in listing.files)

    def add(self, rel: str, kind: str, size: int | None, by: str) -> None:
        if self._spill is not None:
            if self.sizes:  # the rest of the listing, before the first reference
                self._spill.spill_sizes(self.sizes)
                self.sizes = {}
            self._spill.reference(rel, kind, size, by)
            return
        self._verify(rel, kind, size, by)

    def _verify(self, rel: str, kind: str, size: int | None, by: str) -> None:
        actual = self.sizes.get(rel)
        if actual is None:
            known = self.unlisted.get(rel)
            if known is None or (known.expected_size is None and size is not None):
                self.unlisted[rel] = Ref(kind, size, by)
        elif actual >= 0:
            self.sizes[rel] = ~actual
            self._found(rel, kind, size, by, actual)
        elif size is not None and rel in self._unsized:
            self._unsized.discard(rel)
            if size != ~actual:
                self.mismatched.append(FileProblem(rel, kind, by, size, ~actual))

    def _found(self, rel: str, kind: str, size: int | None, by: str, actual: int) -> None:
        self.found += 1
        self.found_bytes += actual
        if size is None:
            self._unsized.add(rel)
        elif size != actual:
            self.mismatched.append(FileProblem(rel, kind, by, size, actual))

    def resolve_unlisted(self, stat: Callable[[list[str]], Iterable[int | None]]) -> None:
        """Verify the spilled references, bucket by bucket; then stat the files referenced but not listed (``stat``
        maps paths to sizes, None for a missing file)."""
        if self._spill is not None:
            try:
                for sizes, references in self._spill.buckets():
                    self.sizes = sizes
                    for rel, kind, size, by in references:
                        self._verify(rel, kind, size, by)
            finally:
                self.sizes = {}
                self._spill.close()
        unlisted = list(self.unlisted)
        for rel, actual in zip(unlisted, stat(unlisted)):
            ref = self.unlisted[rel]
            if actual is None:
                self.missing.append(FileProblem(rel, ref.kind, ref.referenced_by, ref.expected_size, None))
            else:
                self._found(rel, ref.kind, ref.expected_size, ref.referenced_by, actual)
        self.unlisted.clear()
        self.missing.sort(key=lambda problem: problem.path)
        self.mismatched.sort(key=lambda problem: problem.path)

    @property
    def referenced(self) -> int:
        return self.found + len(self.missing) + len(self.unlisted)


class _SpilledVerification(SpillDirectory):
    """Listed sizes and references spilled to bucket files by the hash of the path (cleanup/orphans/spill.py), so
    that a bucket's sizes and its references are read back together and a reference meets the size listed for its
    path. Any failure to write or read them raises MaintenanceError (check reports it)."""

    def __init__(self) -> None:
        super().__init__()
        self._sizes = self.bucket_files("sizes", "check's spill file of listed sizes")
        self._refs = self.bucket_files("references", "check's spill file of references")

    def spill_sizes(self, sizes: dict[str, int]) -> None:
        self._sizes.append_pairs(sizes.items())

    def reference(self, rel: str, kind: str, size: int | None, by: str) -> None:
        self._refs.buffer(rel, (rel, kind, size, by))

    def buckets(self) -> Iterator[tuple[dict[str, int], list[tuple[str, str, int | None, str]]]]:
        """Per bucket: the listed sizes of its paths, and its references in the order they were made."""
        self._refs.flush()
        for sizes_file, refs_file in zip(self._sizes.files, self._refs.files):
            sizes = dict(sizes_file.pairs_read())
            references = [tuple(ref) for ref in refs_file.items_read()]
            yield sizes, references


@dataclass
class ManifestsRead:
    """The manifest lists (name -> rows) and manifests (name -> entries) read for the roots; a manifest verified as
    it was read (see PlannerRead) is not kept."""

    lists: dict[str, list[ManifestFileMeta]]
    entries: dict[str, list[ScanRef]]


class PlannerRead:
    """What orphan cleanup's planner lists and reads, for ``check`` (a SharedRead, cleanup/orphans/sharing.py): the
    size of every listed file in the directories ``check`` verifies, the roots and their lists. A manifest that only
    roots whose lists hold no DELETE entries name (an append table's usual history), or a changelog manifest, has
    only live ADD entries: they are verified as it is handed over, and it is not kept."""

    def __init__(self, kinds: frozenset[DirKind], verifier: Verifier, paths: DataPaths) -> None:
        self._kinds = kinds
        self.verifier = verifier
        self.paths = paths
        self.table_roots: list[Root] | None = None
        self.read = ManifestsRead({}, {})
        self._streamed: dict[str, tuple[str, str] | None] | None = None

    def listed(self, listing: Listing) -> None:  # the plan reports other tables' roots (skipped_nested_tables)
        if listing.kind in self._kinds:
            self.verifier.list_listing(listing)

    def roots(self, roots: list[Root]) -> None:
        self.table_roots = list(roots)

    def manifest_list(self, name: str, rows: list[ManifestFileMeta]) -> None:
        self.read.lists[name] = rows

    def manifest(self, name: str, entries: list[ScanRef]) -> None:
        if self._streamed is None:  # every list is read before the first manifest is handed over
            self._streamed = _streamable(self.table_roots or [], self.read.lists)
        verify_as = self._streamed.get(name)
        if verify_as is None:
            self.read.entries[name] = entries
            return
        kind, label = verify_as
        _verify_entries(self.verifier, self.paths, entries, kind, label, names_checked=True)


def _has_deletes(snapshot: Snapshot, lists: dict[str, list[ManifestFileMeta]]) -> bool:
    """Whether the base or delta list of ``snapshot`` has a manifest with DELETE entries."""
    names = (snapshot.base_manifest_list, snapshot.delta_manifest_list)
    return any(row.num_deleted_files for name in names if name for row in lists.get(name, ()))


def _streamable(roots: list[Root], lists: dict[str, list[ManifestFileMeta]]) -> dict[str, tuple[str, str] | None]:
    """Manifest name -> (kind, label of the first root naming it) for manifests whose every entry is live in every
    root naming it; None for those a root with DELETE entries names (its files are merged per root)."""
    found: dict[str, tuple[str, str] | None] = {}
    for root in roots:
        s = root.snapshot
        merged = _has_deletes(s, lists)
        for name in (s.base_manifest_list, s.delta_manifest_list):
            for row in lists.get(name, ()) if name else ():
                if merged:
                    found[row.file_name] = None
                else:
                    found.setdefault(row.file_name, ("data", root.label))
        for row in lists.get(s.changelog_manifest_list or "", ()):
            found.setdefault(row.file_name, ("changelog", root.label))
    return found


def collect_references(
    ctx: TableContext,
    refs: References,
    roots: list[Root],
    verifier: Verifier,
    paths: DataPaths | None,
    read: ManifestsRead,
    *,
    names_checked: bool,
) -> None:
    """Verify every file the roots reference, with recorded sizes: the roots' own files, the manifests of their
    lists, each root's live data files after merging (not when ``paths`` is None: the table's data directory is
    outside the root) and its changelog files, from the lists and the manifests ``read`` kept, and the index files.
    ``names_checked``: the entries' file names were checked to be plain names when read."""
    index_manifests: dict[str, str] = {}
    for root in roots:
        s = root.snapshot
        sized = [
            (s.base_manifest_list, s.base_manifest_list_size),
            (s.delta_manifest_list, s.delta_manifest_list_size),
            (s.changelog_manifest_list, s.changelog_manifest_list_size),
        ]
        for name, size in sized:
            if name:
                verifier.add(TableLayout.manifest_rel(name), "manifest-list", size, root.label)
        if s.index_manifest:
            verifier.add(TableLayout.manifest_rel(s.index_manifest), "index-manifest", None, root.label)
            index_manifests.setdefault(s.index_manifest, root.label)
        if s.statistics:
            verifier.add(f"{STATISTICS_DIR}/{s.statistics}", "statistics", None, root.label)
    for name, rows in read.lists.items():
        for row in rows:
            verifier.add(TableLayout.manifest_rel(row.file_name), "manifest", row.file_size, f"manifest list {name}")
    if paths is not None:
        for root in roots:
            _collect_files_of(root, read, verifier, paths, names_checked=names_checked)
    _collect_index_files(ctx, refs, index_manifests, verifier, paths)


def read_tolerantly(ctx: TableContext, refs: References, roots: list[Root], verifier: Verifier) -> ManifestsRead:
    """Every list and manifest of the roots; a missing one is left out (its files are reported missing), an
    unreadable one too (recorded in the verifier's errors)."""
    store = ctx.store
    names = dict.fromkeys(name for root in roots for name in root.snapshot.manifest_lists())
    read = ManifestsRead({}, {})
    read_lists = bounded_map(refs.pool, lambda n: _tolerant(verifier, store.read_manifest_list, n), names, refs.window)
    for name, rows in read_lists:
        if rows is not None:
            read.lists[name] = rows
    wanted = dict.fromkeys(row.file_name for rows in read.lists.values() for row in rows)
    read_refs = store.read_manifest_scan_refs  # projected: no statistics decoded (a third of the full decode)
    read_manifests = bounded_map(refs.pool, lambda n: _tolerant(verifier, read_refs, n), wanted, refs.window)
    for name, entries in read_manifests:
        if entries is not None:
            read.entries[name] = entries
    return read


def _collect_index_files(
    ctx: TableContext, refs: References, owners: dict[str, str], verifier: Verifier, paths: DataPaths | None
) -> None:
    """The index files the index manifests (name -> the label of a root naming it) hold, with their recorded sizes:
    in ``index/``, or in their bucket directory on a table with ``index-file-in-data-file-dir`` (not checked when
    ``paths`` is None); those with an external path are outside the root and not checked."""
    in_bucket = ctx.options.require(INDEX_FILE_IN_DATA_FILE_DIR)
    read = bounded_map(refs.pool, lambda n: _tolerant(verifier, ctx.store.read_index_manifest, n), owners, refs.window)
    for name, entries in read:
        for entry in entries or ():
            meta = entry.index_file
            if meta.external_path or (in_bucket and paths is None):
                verifier.external += 1
                continue
            file_name = check_file_name(meta.file_name, what=f"index file name in {name}")
            directory = paths.bucket_dir(entry.partition, entry.bucket) if in_bucket and paths else INDEX_DIR
            verifier.add(f"{directory}/{file_name}", "index", meta.file_size, owners[name])


def _collect_files_of(
    root: Root, read: ManifestsRead, verifier: Verifier, paths: DataPaths, *, names_checked: bool
) -> None:
    """The live data files of a root (its base and delta lists merged) and its changelog files (the ADD entries of
    its changelog list: a changelog file is never DELETEd, it goes when its snapshot or changelog expires), of the
    manifests ``read`` kept (those not kept were verified as they were read)."""
    snapshot = root.snapshot

    def entries(*list_names: str) -> list[list[ScanRef]]:
        kept = read.entries
        return [kept[row.file_name] for n in list_names if n for row in read.lists.get(n, ()) if row.file_name in kept]

    data = entries(snapshot.base_manifest_list, snapshot.delta_manifest_list)
    if _has_deletes(snapshot, read.lists) or any(e.kind is FileKind.DELETE for es in data for e in es):
        live: list[ScanRef] = list(merge_entries(data).values())
        _verify_entries(verifier, paths, live, "data", root.label, names_checked=names_checked)
    else:  # only ADDs (an append table's usual history): every entry is live, no merge needed
        for es in data:
            _verify_entries(verifier, paths, es, "data", root.label, names_checked=names_checked)
    for es in entries(snapshot.changelog_manifest_list or ""):
        _verify_entries(verifier, paths, es, "changelog", root.label, names_checked=names_checked)


def _verify_entries(
    verifier: Verifier, paths: DataPaths, entries: list[ScanRef], kind: str, label: str, *, names_checked: bool
) -> None:
    """Verify the files of the ADD entries (and their extra files) as files of ``kind`` referenced by ``label``;
    those with an external path are counted, not checked."""
    bucket_dir, add = paths.bucket_dir, verifier.add
    for entry in entries:
        if entry.kind is not FileKind.ADD:
            continue
        if entry.external_path:
            verifier.external += 1
            continue
        if names_checked:
            add(f"{bucket_dir(entry.partition, entry.bucket)}/{entry.file_name}", kind, entry.file_size, label)
        else:
            add(paths.of_entry(entry), kind, entry.file_size, label)
        if entry.extra_files:
            for extra in paths.extras_of(entry.partition, entry.bucket, entry.extra_files):
                add(extra, kind, None, label)


def _tolerant(verifier: Verifier, read: Callable[[str], list[T]], name: str) -> list[T] | None:
    """``read(name)``; None when the file is missing or unreadable (the latter recorded as an error)."""
    try:
        check_file_name(name, what="manifest name")
        return read(name)
    except CorruptMetadataError as exc:
        if "missing" not in exc.reason:
            verifier.errors.append(str(exc))
        return None
    except (UnsafePathError, StorageError, UnsupportedFormatError) as exc:
        verifier.errors.append(str(exc))
        return None
