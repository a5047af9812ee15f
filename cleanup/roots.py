"""Find every metadata root that keeps files alive and read what it references, tolerating concurrent expiration.

Roots are the snapshots, tags and changelogs of the main table and of every branch (``branch/branch-<name>/``;
branches have their own metadata but share ``manifest/`` and the data directories with the main table).

Concurrency rules (the cleaners and the checker rely on them):

* Roots are listed, read, then listed again until a listing shows nothing that was not read (at most
  ``MAX_ROUNDS`` rounds; a table whose roots never settle stops the caller). A root that vanished between listing
  and reading was removed by expiration, rollback or tag deletion and protects nothing any more: it is skipped.
* A manifest list that is missing is an error unless every root that references it has vanished too.
* A manifest that is missing is an error unless no root present now references it (checked by listing and
  reading the roots again, which only happens on this rare path).
* Any other read failure (corrupt file, storage error, a name that is not a plain file name) raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from typing import TypeVar

from tableformat.codec.avro_projection import EntryRef, ScanRef
from tableformat.context import TableContext
from tableformat.errors import CorruptMetadataError, MaintenanceError, MissingMetadataError, SnapshotNotFoundError
from tableformat.io.fileio import DistributedMap, FileIO
from tableformat.layout import CHANGELOG_PREFIX, MANIFEST_DIR, STATISTICS_DIR, TAG_PREFIX, TableLayout, check_file_name
from tableformat.model.manifest import ManifestEntry, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.options import CHANGELOG_PRODUCER
from tableformat.parallel import bounded_map
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)

MAX_ROUNDS = 10
"""Listings of the roots before giving up on a table whose snapshots and tags keep changing."""

R = TypeVar("R")
E = TypeVar("E", EntryRef, ScanRef)


@dataclass(frozen=True, slots=True)
class Root:
    """A snapshot-like metadata file that keeps its files alive."""

    label: str
    """For messages: 'snapshot 5', 'tag v1', 'branch b snapshot 3', 'changelog 4'."""
    path: str
    snapshot: Snapshot
    kind: str = "snapshot"
    """'snapshot', 'tag' or 'changelog'."""
    branch: str = ""
    """'' for the main table."""
    version: str = ""
    """The listing's version of the file (S3: its ETag) where known: the same non-empty version is the same bytes.
    Known for the roots of branches (expiration's re-check need not read an unchanged one again)."""


@dataclass(frozen=True, slots=True)
class _Source:
    """Roots of one kind in one branch: how to list their keys and read one."""

    label: str
    kind: str
    branch: str
    list_keys: Callable[[], list[tuple[str, str]]]
    """(key, listed version or '')."""
    path_of: Callable[[str], str]
    read: Callable[[str], Snapshot | None]


class References:
    """Reads the roots of one table and the manifests they reference."""

    def __init__(self, ctx: TableContext, pool: Executor, parallelism: int) -> None:
        self.ctx = ctx
        self.pool = pool
        self.window = max(2, 2 * parallelism)
        self.unchanged_labels: set[str] = set()
        """Labels of the roots the last ``collect_roots`` found unchanged (see its ``unchanged``)."""
        self._listed_versions: dict[str, str] = {}

    # --- roots -----------------------------------------------------------------------------------------------
    def _listed(self, include_main: bool, main_changelogs: bool) -> list[tuple[_Source, list[tuple[str, str]]]]:
        """Every source with its keys: the main table's listed while ``branch/`` is (all at once in a pool)."""
        store = self.ctx.store
        branches = self.pool.submit(store.branch_names)
        main = self._sources_of("", store) if include_main or main_changelogs else []
        main = main if include_main else [source for source in main if source.kind == "changelog"]
        listed = list(self.pool.map(lambda s: (s, s.list_keys()), main))
        others = [source for name in branches.result() for source in self._sources_of(name, store.branch_store(name))]
        return listed + list(self.pool.map(lambda s: (s, s.list_keys()), others))

    def _sources_of(self, branch: str, store: MetadataStore) -> list[_Source]:
        layout = store.layout
        prefix = f"branch {branch} " if branch else ""

        def read_snapshot(key: str) -> Snapshot | None:
            try:
                return store.read_snapshot(int(key))
            except SnapshotNotFoundError:
                return None

        def read_tag(key: str) -> Snapshot | None:
            try:
                return store.read_tag(key).snapshot
            except SnapshotNotFoundError:
                return None

        def changelog_keys() -> list[str]:
            names = self.ctx.io.list_names(layout.join("changelog"))
            return sorted(n[len(CHANGELOG_PREFIX) :] for n in names if n[len(CHANGELOG_PREFIX) :].isdigit())

        produce = self.ctx.options.require(CHANGELOG_PRODUCER) != "none"

        def read_changelog(key: str) -> Snapshot | None:
            changelog = store.read_changelog(key)
            return None if changelog is None else changelog_root_view(changelog, produce)

        def snapshot_keys() -> list[tuple[str, str]]:
            if not branch:
                return [(str(i), "") for i in store.snapshot_ids()]
            return [(str(i), version) for i, version in store.snapshot_versions()]

        def tag_keys() -> list[tuple[str, str]]:
            if not branch:
                return [(name, "") for name in store.tag_names()]
            return [(info.name[len(TAG_PREFIX) :], info.version) for info in store.tag_infos()]

        return [
            _Source(
                f"{prefix}snapshot",
                "snapshot",
                branch,
                snapshot_keys,
                lambda key: layout.snapshot_file(int(key)),
                read_snapshot,
            ),
            _Source(f"{prefix}tag", "tag", branch, tag_keys, layout.tag_file, read_tag),
            _Source(
                f"{prefix}changelog",
                "changelog",
                branch,
                lambda: [(key, "") for key in changelog_keys()],
                layout.changelog_file,
                read_changelog,
            ),
        ]

    def collect_roots(
        self,
        *,
        include_main: bool = True,
        known: Iterable[Root] = (),
        settle: bool = True,
        unchanged: Mapping[str, str] | None = None,
        main_changelogs: bool = False,
    ) -> list[Root]:
        """Every root present, read; listed again after reading until the set of roots is stable.

        ``include_main=False``: only the branches' roots (snapshot expiration reads the main table itself), and with
        ``main_changelogs`` the main table's long-lived changelogs.
        ``known``: roots read before; one listed again under the same label is taken as read, not read again.
        ``settle=False``: one listing, its roots read, no listing again unless a root vanished meanwhile (for a caller
        that lists again itself after reading what the roots reference, as orphan cleanup does).
        ``unchanged``: {label: version} of roots read before; one listed with that same non-empty version holds the
        same bytes: it is neither read nor returned, and its label is in ``self.unchanged_labels`` afterwards.
        """
        read: dict[tuple[str, str], Root | None] = {}
        for root in known:
            source_label, _, key = root.label.rpartition(" ")
            read[(source_label, key)] = root
        same = unchanged or {}
        for _ in range(MAX_ROUNDS):
            present = []
            self.unchanged_labels = set()
            for source, keys in self._listed(include_main, main_changelogs):
                for key, version in keys:
                    label = f"{source.label} {key}"
                    if version and same.get(label) == version:
                        self.unchanged_labels.add(label)
                    else:
                        present.append((source, key))
                        self._listed_versions[label] = version
            todo = [(source, key) for source, key in present if (source.label, key) not in read]
            if not todo:
                roots = [read[(source.label, key)] for source, key in present]
                return [root for root in roots if root is not None]
            for (source, key), snapshot in bounded_map(self.pool, lambda sk: sk[0].read(sk[1]), todo, self.window):
                if snapshot is None:
                    log.info("%s %s vanished while being read (expired or deleted); skipped", source.label, key)
                    read[(source.label, key)] = None
                else:
                    label = f"{source.label} {key}"
                    version = self._listed_versions.get(label, "")
                    root = Root(label, source.path_of(key), snapshot, source.kind, source.branch, version)
                    read[(source.label, key)] = root
            if not settle and all(read.get((source.label, key)) is not None for source, key in todo):
                found = (read.get((source.label, key)) for source, key in present)
                return [root for root in found if root is not None]
            # A root listed, found missing and listed again (an id reused after a rollback) is read again.
            read = {k: v for k, v in read.items() if v is not None}
        raise MaintenanceError(
            f"the snapshots and tags of {self.ctx.url()} kept changing over {MAX_ROUNDS} listings; "
            "nothing was deleted, try again later"
        )

    def root_exists(self, root: Root) -> bool:
        return self.ctx.io.exists(root.path)

    # --- names ------------------------------------------------------------------------------------------------
    @staticmethod
    def root_files(root: Root) -> list[tuple[str, str]]:
        """(directory, name) of the files a root names itself: manifest lists, index manifest, statistics."""
        snapshot = root.snapshot
        what = f"manifest list of {root.label}"
        names = [(MANIFEST_DIR, check_file_name(n, what=what)) for n in snapshot.manifest_lists()]
        if snapshot.index_manifest:
            index_manifest = check_file_name(snapshot.index_manifest, what=f"index manifest of {root.label}")
            names.append((MANIFEST_DIR, index_manifest))
        if snapshot.statistics:
            statistics = check_file_name(snapshot.statistics, what=f"statistics of {root.label}")
            names.append((STATISTICS_DIR, statistics))
        return names

    # --- manifest lists ---------------------------------------------------------------------------------------
    def _unless_missing(self, read: Callable[[str], R], name: str) -> R | None:
        """``read(name)`` of a file in manifest/, or None if that file does not exist (a corrupt one raises)."""
        try:
            return read(name)
        except CorruptMetadataError:
            if not self.ctx.io.exists(self.ctx.layout.manifest_file(name)):
                return None
            raise

    def _read_list(self, name: str) -> list[ManifestFileMeta] | None:
        """A manifest list, or None if its file does not exist."""
        return self._unless_missing(self.ctx.store.read_manifest_list_fast, name)

    def manifest_lists(self, roots: list[Root]) -> Iterator[tuple[str, list[ManifestFileMeta]]]:
        """(name, rows) of every manifest list of the roots, each read once.

        A missing list is skipped only when every root naming it has vanished; otherwise CorruptMetadataError.
        """
        return self.named_manifest_lists(list_owners(roots))

    def named_manifest_lists(self, owners: dict[str, list[Root]]) -> Iterator[tuple[str, list[ManifestFileMeta]]]:
        """(name, rows) of the given manifest lists, each named by the roots in ``owners[name]``."""
        for name, roots in owners.items():
            check_file_name(name, what=f"manifest list of {roots[0].label}")
        for name, rows in bounded_map(self.pool, self._read_list, list(owners), self.window):
            if rows is None:
                alive = [root.label for root in owners[name] if self.root_exists(root)]
                if alive:
                    raise CorruptMetadataError(
                        self.ctx.url(self.ctx.layout.manifest_file(name)), f"missing, but {alive[0]} references it"
                    )
                log.info("manifest list %s vanished with its snapshots; skipped", name)
                continue
            for row in rows:
                check_file_name(row.file_name, what=f"manifest name in {name}")
            yield name, rows

    # --- manifests --------------------------------------------------------------------------------------------
    def _read_manifest(self, name: str) -> list[ManifestEntry] | None:
        return self._unless_missing(self.ctx.store.read_manifest, name)

    def manifests(self, names: Iterable[str]) -> Iterator[tuple[str, list[ManifestEntry]]]:
        """(name, entries) of each manifest, read in parallel with a bounded number in flight.

        Entry file names are checked to be plain names. A missing manifest still referenced by a root present
        now raises CorruptMetadataError; one that no present root references (expired concurrently) is skipped.
        """
        for name, entries in bounded_map(self.pool, self._read_manifest, names, self.window):
            if entries is None:
                self._vanished_manifest(name)
                continue
            for entry in entries:
                _check_entry_names(entry, name)
            yield name, entries

    def manifest_file_names(self, names: Iterable[str]) -> Iterator[tuple[str, list[str]]]:
        """Like manifests(), but only the file names of each manifest's entries (data files and extra files).

        The entries are reduced to names in the worker threads, so at most ``parallelism`` manifests are ever
        held as full entries: memory stays bounded by the manifest size, not by the table size. When the run's
        storage maps work elsewhere (``FileIO.distributed_map``: Spark's executors, for the distributed orphan
        cleaner), the manifests are read and reduced to names there, a batch at a time.
        """
        distributed = self.ctx.io.distributed_map()
        if distributed is not None:
            return self._names_read_elsewhere(distributed, list(names))
        return self._checked_refs(names, self.ctx.store.read_manifest_refs, _file_names)  # names, not whole entries

    def _names_read_elsewhere(self, distributed: DistributedMap, names: list[str]) -> Iterator[tuple[str, list[str]]]:
        """manifest_file_names() through ``distributed``: the same checks, a vanished manifest judged here."""
        for name, files in distributed(ManifestNames(self.ctx.layout), names, "read the file names of manifests"):
            if files is None:
                self._vanished_manifest(name)
                continue
            yield name, files

    def manifest_scan_refs(self, names: Iterable[str]) -> Iterator[tuple[str, list[ScanRef]]]:
        """Like manifest_file_names(), but each manifest's entries projected (no statistics), for a caller that
        needs their partition, bucket, kind and size too (``check``, reading through orphan cleanup's planner)."""
        return self._checked_refs(names, self.ctx.store.read_manifest_scan_refs, lambda refs: refs)

    def _checked_refs(
        self, names: Iterable[str], read: Callable[[str], list[E]], reduce: Callable[[list[E]], R]
    ) -> Iterator[tuple[str, R]]:
        """(name, ``reduce`` of its entries read by ``read``, their file names checked) of each manifest, in the
        worker threads, half the window at a time. A missing manifest still referenced by a root present now raises
        CorruptMetadataError; one that no present root references (expired concurrently) is skipped."""

        def read_checked(name: str) -> R | None:
            refs = self._unless_missing(read, name)
            return None if refs is None else reduce(_checked_names(refs, name))

        for name, value in bounded_map(self.pool, read_checked, names, max(1, self.window // 2)):
            if value is None:
                self._vanished_manifest(name)
                continue
            yield name, value

    # --- index manifests --------------------------------------------------------------------------------------
    def index_file_names(self, owners: dict[str, list[Root]]) -> Iterator[tuple[str, list[str]]]:
        """(name, index file names) of each index manifest of ``owners`` (name -> the roots naming it): the file of
        every entry, ADD or DELETE. A missing index manifest is skipped only when every root naming it has vanished;
        otherwise, and when one cannot be read, CorruptMetadataError (nothing can be called an orphan then)."""

        def read_names(name: str) -> list[str] | None:
            entries = self._unless_missing(self.ctx.store.read_index_manifest_entries, name)
            if entries is None:
                return None
            return [check_file_name(e.index_file.file_name, what=f"index file name in {name}") for e in entries]

        for name, roots in owners.items():
            check_file_name(name, what=f"index manifest of {roots[0].label}")
        for name, files in bounded_map(self.pool, read_names, list(owners), self.window):
            if files is None:
                alive = [root.label for root in owners[name] if self.root_exists(root)]
                if alive:
                    path = self.ctx.url(self.ctx.layout.manifest_file(name))
                    raise CorruptMetadataError(path, f"missing, but {alive[0]} references it")
                log.info("index manifest %s vanished with its snapshots; skipped", name)
                continue
            yield name, files

    def _vanished_manifest(self, name: str) -> None:
        holder = self.referencing_root(name)
        if holder is not None:
            path = self.ctx.url(self.ctx.layout.manifest_file(name))
            raise CorruptMetadataError(path, f"missing, but {holder} references it")
        log.info("manifest %s vanished with its snapshots; skipped", name)

    def referencing_root(self, manifest_name: str) -> str | None:
        """The label of a root present now whose manifest lists name ``manifest_name`` (slow path, sequential)."""
        for root in self.collect_roots():
            for list_name in root.snapshot.manifest_lists():
                rows = self._read_list(list_name)
                if rows is None and self.root_exists(root):
                    path = self.ctx.url(self.ctx.layout.manifest_file(list_name))
                    raise CorruptMetadataError(path, f"missing, but {root.label} references it")
                if rows is not None and any(row.file_name == manifest_name for row in rows):
                    return root.label
        return None


def _checked_names(refs: list[E], manifest: str) -> list[E]:
    """``refs``, once every file name they give is checked to be a plain name (UnsafePathError otherwise)."""
    for ref in refs:
        check_file_name(ref.file_name, what=f"data file name in manifest {manifest}")
        for extra in ref.extra_files:
            check_file_name(extra, what=f"extra file name in manifest {manifest}")
    return refs


def _file_names(refs: list[EntryRef]) -> list[str]:
    """The data file and extra file names of entries."""
    return [file for ref in refs for file in (ref.file_name, *ref.extra_files)]


@dataclass(frozen=True, slots=True)
class ManifestNames:
    """What runs elsewhere for :meth:`References.manifest_file_names` (a Spark task): the checked file names of one
    manifest's entries, or None when the manifest does not exist (the driver judges whether it vanished with its
    snapshots). Anything unreadable raises, and the whole read fails."""

    layout: TableLayout

    def __call__(self, file_io: FileIO, name: str) -> tuple[str, list[str] | None]:
        try:
            refs = MetadataStore(file_io, self.layout).read_manifest_refs(name)
        except MissingMetadataError:
            return name, None
        return name, _file_names(_checked_names(refs, name))


def keeps_whole(changelog: Snapshot, produce_changelog: bool) -> bool:
    """Whether a long-lived changelog (``changelog/changelog-<id>``) needs its base and delta manifest lists: with
    ``changelog-producer=none`` and no changelog manifest list its delta's data files are the changelog, and Paimon
    keeps its lists and data files; otherwise Paimon deleted those lists with its snapshot."""
    return not produce_changelog and not changelog.changelog_manifest_list


def changelog_root_view(changelog: Snapshot, produce_changelog: bool) -> Snapshot:
    """A long-lived changelog as a root: itself when it keeps_whole, else without its base and delta manifest lists
    (they name nothing it keeps), so it references its changelog list, index manifest and statistics only."""
    if keeps_whole(changelog, produce_changelog):
        return changelog
    return replace(
        changelog,
        base_manifest_list="",
        base_manifest_list_size=None,
        delta_manifest_list="",
        delta_manifest_list_size=None,
    )


def index_manifest_owners(roots: list[Root]) -> dict[str, list[Root]]:
    """The roots naming each index manifest of ``roots`` (many snapshots share one while no index file changes)."""
    owners: dict[str, list[Root]] = {}
    for root in roots:
        if root.snapshot.index_manifest:
            owners.setdefault(root.snapshot.index_manifest, []).append(root)
    return owners


def list_owners(roots: list[Root]) -> dict[str, list[Root]]:
    """The roots naming each manifest list of ``roots``."""
    owners: dict[str, list[Root]] = {}
    for root in roots:
        for name in root.snapshot.manifest_lists():
            owners.setdefault(name, []).append(root)
    return owners


def _check_entry_names(entry: ManifestEntry, manifest: str) -> None:
    check_file_name(entry.file.file_name, what=f"data file name in manifest {manifest}")
    for extra in entry.file.extra_files:
        check_file_name(extra, what=f"extra file name in manifest {manifest}")
