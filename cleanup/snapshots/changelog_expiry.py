"""Plan a changelog expiration: which long-lived changelogs (``changelog/changelog-<id>``) expire, and the exact
files that go with them. Run by ``expire`` after snapshot expiration when the lifecycle is decoupled (Paimon's
``AbstractFileStoreTable.newExpireRunnable``: snapshots first, then ``ExpireChangelogImpl``).

Range (``ExpireChangelogImpl.expire``), with ``latest`` the latest snapshot id and ``first``/``last`` the smallest
and largest changelog ids: ``low = max(latest - changelog.num-retained.max + 1, first)`` and ``max_exclusive =
min(latest - changelog.num-retained.min + 1, smallest consumer nextSnapshot, first + snapshot.expire.limit, last)``
(the newest long-lived changelog always stays). Walking the ids from ``low`` up to ``max_exclusive`` inclusive, the
first changelog whose own commit time is at or after ``now - changelog.time-retained`` ends the range; else
``max_exclusive`` does. The changelogs in ``[first, end)`` expire (never one at or above the earliest snapshot).

Files: what the expired changelogs name and no kept root names, as for snapshots (plan.py): kept are the earliest and
the latest snapshot, every tag, every snapshot and tag of every branch and every other long-lived changelog. A
changelog of ``changelog-producer=none`` without a changelog list (changelog.py ``keeps_whole``) gives up its
manifest lists, manifests and live data files; every expired changelog gives up its changelog list, manifests and
files, statistics file and index manifest (attached.py). A file live in an expired changelog (below the earliest
snapshot) and in a retained snapshot is live in the earliest snapshot (contiguity, paimon-format.md section 9), so
the retained snapshots in between are not read. Unreadable metadata stops the plan: nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence

from tableformat.context import TableContext
from tableformat.errors import CorruptMetadataError, MaintenanceError, StorageError, UnsafePathError
from tableformat.live_set import merge_entries
from tableformat.model.snapshot import Snapshot
from tableformat.parallel import Workers

from ..roots import keeps_whole
from .attached import AttachedFiles
from .changelog import produces_changelog
from .config import ExpireConfig
from .metadata import DataPaths, MetadataCache, TagRef
from .planned import ExpirePlan, PlannedFile, branch_ref, emptied_dirs, manifest_files, new_plan_id
from .start import branch_roots


def plan_changelog_expiration(ctx: TableContext, config: ExpireConfig, now_ms: int, workers: Workers) -> ExpirePlan:
    """What one changelog expiration deletes (an empty plan unless the lifecycle is decoupled). Reads only."""
    empty = ExpirePlan(plan_id=new_plan_id(), now_ms=now_ms, end=None)
    if not config.changelog_decoupled:
        return empty
    try:
        ids = ctx.store.changelog_ids()
        latest, earliest = ctx.store.latest_snapshot_id(), ctx.store.earliest_snapshot_id()
        if not ids or latest is None or earliest is None:
            return empty
        end = _changelog_end(ctx, config, now_ms, ids, latest)
        expired = [i for i in ids if i < min(end, earliest)]
        if not expired:
            return empty
        return _ChangelogPlanner(ctx, workers, now_ms).plan(expired, end, earliest, latest)
    except (CorruptMetadataError, StorageError, UnsafePathError, OSError) as exc:
        raise MaintenanceError(f"changelog expiration stopped, nothing was deleted: {exc}") from exc


def _changelog_end(ctx: TableContext, config: ExpireConfig, now_ms: int, ids: Sequence[int], latest: int) -> int:
    """The first long-lived changelog id kept (Paimon's ``endExclusive``; see the module docstring)."""
    first, last = ids[0], ids[-1]
    low = max(latest - config.changelog_retain_max + 1, first)
    max_exclusive = latest - config.changelog_retain_min + 1
    consumer_next = min((c.next_snapshot for c in ctx.store.consumers()), default=None)
    if consumer_next is not None:
        max_exclusive = min(max_exclusive, consumer_next)
    max_exclusive = min(max_exclusive, first + config.limit, last)
    if max_exclusive <= first:
        return first
    older_than = now_ms - config.changelog_time_retained_ms
    present = set(ids)
    for changelog_id in range(low, max_exclusive + 1):
        changelog = ctx.store.read_changelog(str(changelog_id)) if changelog_id in present else None
        if changelog is not None and older_than <= changelog.time_millis:
            return changelog_id
    return max_exclusive


class _ChangelogPlanner:
    def __init__(self, ctx: TableContext, workers: Workers, now_ms: int) -> None:
        self.ctx = ctx
        self.now = now_ms
        self.cache = MetadataCache(ctx, workers)
        self.paths = DataPaths(ctx)

    def plan(self, expired: Sequence[int], end: int, earliest: int, latest: int) -> ExpirePlan:
        store, layout = self.ctx.store, self.ctx.layout
        gone = [self._read(i) for i in expired]
        tags = store.tags()
        roots, _ = branch_roots(self.ctx)
        leaving = set(expired)
        branches = [r for r in roots if not (r.kind == "changelog" and not r.branch and r.snapshot.id in leaving)]
        snapshots = [store.read_snapshot(i) for i in sorted({earliest, latest})]
        kept = [*snapshots, *(t.snapshot for t in tags), *(r.snapshot for r in branches)]
        produce = produces_changelog(self.ctx)
        whole = [s for s in gone if keeps_whole(s, produce)]
        data, lists, manifests = self._whole_files(whole, kept)
        attached = AttachedFiles(self.ctx, self.cache, self.paths)
        attached_files = attached.plan(gone, kept, leaving=leaving)
        root_files = []
        for changelog_id in expired:
            path = layout.changelog_file(str(changelog_id))
            root_files.append(PlannedFile(layout.relative(path), self._size(path)))
        return ExpirePlan(
            plan_id=new_plan_id(),
            now_ms=self.now,
            end=None,
            expired_changelogs=tuple(expired),
            changelog_end=end,
            changelog_root_files=tuple(root_files),
            data_files=tuple(data),
            manifests=manifest_files(manifests),
            manifest_lists=manifest_files(lists),
            attached=attached_files,
            protecting_tags=tuple(TagRef.of(t) for t in tags),
            protecting_branch_roots=tuple(branch_ref(r) for r in branches),
            branch_versions=tuple((r.label, r.version) for r in branches),
            skipped_external=tuple(sorted(attached.external)),
            empty_dir_candidates=emptied_dirs([*data, *attached_files.changelog_files], self.paths.directory_depth),
        )

    def _read(self, changelog_id: int) -> Snapshot:
        changelog = self.ctx.store.read_changelog(str(changelog_id))
        if changelog is None:
            raise MaintenanceError(f"long-lived changelog {changelog_id} vanished while planning; nothing was deleted")
        return changelog

    def _whole_files(
        self, whole: Sequence[Snapshot], kept: Sequence[Snapshot]
    ) -> tuple[list[PlannedFile], dict[str, int], dict[str, int]]:
        """Data files live in the ``whole`` changelogs, and their manifest lists and manifests, that no kept root
        (nor another long-lived changelog kept whole, among ``kept`` through the branch roots) holds."""
        if not whole:
            return [], {}, {}
        candidates: dict[str, PlannedFile] = {}
        partitions: set[bytes] = set()
        for root in whole:
            for entry in merge_entries(self.cache.entries(self.cache.manifests_of(root))).values():
                path = self.paths.of(entry)
                if path is not None:
                    candidates[path] = PlannedFile(path, entry.file_size, self.paths.extras(entry))
                    partitions.add(entry.partition)
        predicate = self.paths.predicate(partitions)
        for root in kept:
            for path in self.cache.live_paths(root, candidates.keys(), self.paths, predicate):
                candidates.pop(path, None)
        keep_lists = {n for s in kept for n in (s.base_manifest_list, s.delta_manifest_list)}
        keep_manifests = {m.file_name for s in kept for m in self.cache.manifests_of(s)}
        lists: dict[str, int] = {}
        manifests: dict[str, int] = {}
        for root in whole:
            for name in (root.base_manifest_list, root.delta_manifest_list):
                if name not in keep_lists:
                    lists.setdefault(name, self._size(self.ctx.layout.manifest_file(name)))
            for meta in self.cache.manifests_of(root):
                if meta.file_name not in keep_manifests:
                    manifests.setdefault(meta.file_name, meta.file_size)
        return [candidates[p] for p in sorted(candidates)], lists, manifests

    def _size(self, path: str) -> int:
        try:
            return self.ctx.io.file_size(path)
        except FileNotFoundError:
            return 0
