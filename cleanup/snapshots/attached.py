"""The files a snapshot names besides its data files and data manifests, and which of them an expiration deletes:
its changelog (changelog manifest list, changelog manifests, the changelog files ADDed in them), its index manifest
(with the index files it lists) and its statistics file.

Paimon's rules with the changelog lifecycle coupled to the snapshots' (``changelogDecoupled`` false; decoupled, the
expired snapshots' changelogs are kept for their long-lived changelogs, changelog.py):

* ``ExpireSnapshotsImpl.collectChangelogFilesToDelete`` / ``FileDeletionBase.planAddedInChangelogManifest``: every
  expired snapshot but the one that ends the range gives up the changelog files ADDed in its changelog manifests;
* ``FileDeletionBase.planManifestsCleaner``: its changelog manifest list and changelog manifests, its index
  manifest with the index files in it, and its statistics file go too, except the names in the skipping set.

Paimon's skipping set holds what the end snapshot and the tags overlapping the range name, and it deletes the
changelog files of an expired snapshot even when a tag still names them. Here every kept root protects what it
names, as for data files and manifests: the end, the latest snapshot, every remaining tag, every snapshot and tag of
every branch, and every long-lived changelog (``changelog/changelog-<id>`` of the main table; branches' are among the
branch roots). A changelog manifest list a kept root names keeps its manifests and their files; a changelog file is
kept while any kept root's changelog manifests ADD it. Expired tags older than the end give up what they alone name.

Retained snapshots between the end and the latest are not read, by the contiguity argument plan.py makes for
manifests: a snapshot's statistics file and index manifest are carried from one snapshot to the next until replaced,
and a changelog belongs to the one snapshot that committed it. Unreadable metadata stops the plan (nothing deleted).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from tableformat.context import TableContext
from tableformat.errors import MissingMetadataError
from tableformat.layout import CHANGELOG_DIR, CHANGELOG_PREFIX, INDEX_DIR, STATISTICS_DIR, check_file_name
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.options import INDEX_FILE_IN_DATA_FILE_DIR

from .metadata import DataPaths, MetadataCache
from .planned import Attached, PlannedFile, manifest_files


@dataclass(slots=True)
class Referenced:
    """What a set of roots names besides data files and data manifests."""

    lists: set[str] = field(default_factory=set)
    """Changelog manifest lists."""
    manifests: set[str] = field(default_factory=set)
    """Changelog manifests."""
    files: set[str] = field(default_factory=set)
    """Changelog files (relative paths) ADDed in those manifests."""
    statistics: set[str] = field(default_factory=set)
    index_manifests: set[str] = field(default_factory=set)
    index_files: set[str] = field(default_factory=set)
    """Names of the index files any entry of those index manifests names."""

    def add(self, other: Referenced) -> None:
        self.lists |= other.lists
        self.manifests |= other.manifests
        self.files |= other.files
        self.statistics |= other.statistics
        self.index_manifests |= other.index_manifests
        self.index_files |= other.index_files

    def names(self) -> set[str]:
        """Every file name here but the changelog files' (those are relative paths)."""
        return self.lists | self.manifests | self.statistics | self.index_manifests | self.index_files


def names_attached(snapshot: Snapshot) -> bool:
    """Whether the snapshot names a changelog, a statistics file or an index manifest."""
    return bool(snapshot.changelog_manifest_list or snapshot.statistics or snapshot.index_manifest)


def changelog_roots(ctx: TableContext) -> list[Snapshot]:
    """The main table's long-lived changelogs (``changelog/changelog-<id>``), read; one deleted meanwhile is skipped
    (expired: it protects nothing any more)."""
    names = ctx.io.list_names(ctx.layout.join(CHANGELOG_DIR))
    keys = sorted(n[len(CHANGELOG_PREFIX) :] for n in names if n[len(CHANGELOG_PREFIX) :].isdigit())
    found = (ctx.store.read_changelog(key) for key in keys)
    return [snapshot for snapshot in found if snapshot is not None]


class AttachedFiles:
    """Plans the attached files of one expiration through the planner's cache (each list and manifest read once)."""

    def __init__(self, ctx: TableContext, cache: MetadataCache, paths: DataPaths) -> None:
        self.ctx = ctx
        self.cache = cache
        self.paths = paths
        self.external: set[str] = set()
        """Changelog and index files with an external path seen among the candidates (never deleted, reported)."""

    def referenced(self, roots: Iterable[Snapshot]) -> Referenced:
        """Everything the roots name (their changelog manifests read for the files they ADD)."""
        roots = list(roots)
        refs = Referenced()
        refs.lists = {s.changelog_manifest_list for s in roots if s.changelog_manifest_list}
        refs.statistics = {check_file_name(s.statistics, what="statistics name") for s in roots if s.statistics}
        self.cache.load_lists(sorted(refs.lists))
        metas = list({m.file_name: m for name in sorted(refs.lists) for m in self.cache.manifest_list(name)}.values())
        refs.manifests = {m.file_name for m in metas}
        for entries in self.cache.entries(metas):
            refs.files.update(p for e in entries if e.kind == FileKind.ADD and (p := self.paths.of(e)) is not None)
        refs.index_manifests = {_index_manifest_name(s) for s in roots if s.index_manifest}
        read = self.ctx.store.read_index_manifest_entries  # every entry keeps the file it names
        for index_entries in self.cache.read_all(read, sorted(refs.index_manifests), 1):
            refs.index_files.update(check_file_name(e.index_file.file_name) for e in index_entries)
        return refs

    def plan(
        self,
        gone: Sequence[Snapshot],
        kept: Sequence[Snapshot],
        changelogs: Sequence[Snapshot] = (),
        leaving: AbstractSet[int] = frozenset(),
    ) -> Attached:
        """What ``gone`` (the expired snapshots, which never include the end, and the expired tags older than the end;
        or expired long-lived changelogs) name and no ``kept`` root or long-lived changelog (but those ``leaving``)
        does; of ``changelogs`` (expired snapshots that become long-lived changelogs, changelog.py) the changelog is
        kept."""
        if not any(names_attached(s) for s in gone):
            return Attached()
        keep = self.referenced([*kept, *(c for c in changelog_roots(self.ctx) if c.id not in leaving)])
        new = self.referenced(changelogs)
        keep.add(Referenced(lists=new.lists, manifests=new.manifests, files=new.files))
        lists: dict[str, int] = {}
        for snapshot in gone:
            name = snapshot.changelog_manifest_list
            if name and name not in keep.lists:
                size = snapshot.changelog_manifest_list_size
                lists.setdefault(name, size if size is not None else self._size(self.ctx.layout.manifest_file(name)))
        self.cache.load_lists(sorted(lists))
        named = (m for name in sorted(lists) for m in self.cache.manifest_list(name))
        metas = list({m.file_name: m for m in named if m.file_name not in keep.manifests}.values())
        files = self._changelog_files(metas, keep)
        statistics: dict[str, int] = {}
        for snapshot in gone:
            name = snapshot.statistics
            if name and name not in keep.statistics:
                path = self.ctx.layout.join(STATISTICS_DIR, check_file_name(name, what="statistics name"))
                statistics.setdefault(name, self._size(path))
        index_manifests, index_files = self._index(gone, keep)
        return Attached(
            index_files=tuple(index_files[name] for name in sorted(index_files)),
            index_manifests=tuple(index_manifests[name] for name in sorted(index_manifests)),
            changelog_files=tuple(files[path] for path in sorted(files)),
            changelog_manifests=manifest_files({m.file_name: m.file_size for m in metas}),
            changelog_manifest_lists=manifest_files(lists),
            statistics_files=tuple(PlannedFile(f"{STATISTICS_DIR}/{n}", statistics[n]) for n in sorted(statistics)),
        )

    def _index(self, gone: Sequence[Snapshot], keep: Referenced) -> tuple[dict[str, PlannedFile], ...]:
        """(index manifests, index files) by name: the index manifests of ``gone`` no kept root names, and the index
        files their ADD entries name that no kept root's index manifest names (in ``index/``, or with
        ``index-file-in-data-file-dir`` in their bucket directory). An index manifest already gone is
        skipped, as Paimon does (nothing of it is left to delete); index files with an external path are reported,
        never deleted."""
        layout = self.ctx.layout
        in_buckets = self.ctx.options.require(INDEX_FILE_IN_DATA_FILE_DIR)
        manifests: dict[str, PlannedFile] = {}
        files: dict[str, PlannedFile] = {}
        for name in sorted({_index_manifest_name(s) for s in gone if s.index_manifest} - keep.index_manifests):
            try:
                entries = self.ctx.store.read_index_manifest(name)
            except MissingMetadataError:
                continue
            path = layout.index_manifest_file(name)
            manifests[name] = PlannedFile(layout.relative(path), self._size(path))
            for entry in entries:
                meta = entry.index_file
                if meta.external_path:
                    self.external.add(str(meta.external_path))
                elif meta.file_name not in keep.index_files:
                    where = self.paths.bucket_dir(entry.partition, entry.bucket) if in_buckets else INDEX_DIR
                    path = f"{where}/{check_file_name(meta.file_name, what='index file name')}"
                    files.setdefault(meta.file_name, PlannedFile(path, meta.file_size))
        return manifests, files

    def _changelog_files(self, metas: Sequence[ManifestFileMeta], keep: Referenced) -> dict[str, PlannedFile]:
        """The changelog files ADDed in these changelog manifests that no kept root's changelog ADDs."""
        files: dict[str, PlannedFile] = {}
        for entries in self.cache.entries(metas):
            for entry in entries:
                if entry.kind != FileKind.ADD:
                    continue
                path = self.paths.of(entry)
                if path is None:
                    self.external.add(str(entry.external_path))
                elif path not in keep.files:
                    files.setdefault(path, PlannedFile(path, entry.file_size, self.paths.extras(entry)))
        return files

    def _size(self, path: str) -> int:
        try:
            return self.ctx.io.file_size(path)
        except FileNotFoundError:
            return 0


def _index_manifest_name(snapshot: Snapshot) -> str:
    return check_file_name(str(snapshot.index_manifest), what=f"index manifest of snapshot {snapshot.id}")


def without_referenced(planned: Attached, refs: Referenced) -> Attached:
    """The planned attached files minus those ``refs`` names (roots that appeared after planning)."""
    names = refs.names()
    return planned.keeping(lambda f: f.path not in refs.files and f.path.rsplit("/", 1)[-1] not in names)
