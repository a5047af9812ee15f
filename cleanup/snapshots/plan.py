"""Plan a snapshot expiration: which snapshots, tags and consumers expire, and the exact files that go with them.

Range (Paimon master, ``ExpireSnapshotsImpl.expire``): with ``earliest``/``latest`` snapshot ids,
``low = max(latest - retain_max + 1, earliest)`` (everything below expires whatever its age) and
``max_exclusive = min(latest - retain_min + 1, smallest consumer nextSnapshot, earliest + limit)``. Walking the
existing snapshots from ``low``, the first one whose *successor* committed at or after ``now - time_retained``
is kept (a snapshot was the table state until its successor committed). The snapshot that ends the range, ``end``,
always exists and becomes EARLIEST. Missing ids (gaps) never stall: the range is measured in ids, ``end`` moves
to the next existing snapshot, and snapshots stranded below a gap are expired with the range.

Data files, delta-based with reachability checks (chosen for cost: it reads only the deltas of the range, and
for the protection checks only the manifests that can hold a candidate):

* candidates: the DELETE entries of delta(s) for every s in (b, end], where b..end is the gap-free run ending at
  ``end``, in entry order (a DELETE followed by an ADD of the same file in one delta keeps the file); plus every
  file live in a stranded snapshot below a gap and in an expired tag older than ``end``;
* minus every file live in ``end``, in the latest snapshot and in ANY remaining tag or branch root (not only the
  nearest one).

That is exact reachability under the format's invariant that a file name is added once and its live range is one
contiguous run of snapshots (paimon-format.md section 9): a file live in some retained snapshot r > end and in an
expired one is live in ``end``. The check against ``end`` itself does not rely on the invariant; it reads only
what can decide it: a file's state in ``end`` is its last entry in base-then-delta order, so a candidate whose last
entry in end's delta (already read for the candidates) is a DELETE is not live there and end's base is read only
for the candidates end's delta does not mention (dropping a partition of a million files reads its delta once).
Manifests and manifest lists of expired snapshots (and of expired tags older than ``end``) are deleted unless
referenced by ``end``, the latest snapshot or any remaining tag or branch root, by the same contiguity argument for
manifests. A snapshot's changelog, index manifest and statistics file: attached.py.

Any metadata needed for a decision that cannot be read (snapshot, manifest list, manifest, tag, consumer) stops the
planner with a MaintenanceError naming the file; nothing is deleted. Read are: the range's snapshots, ``end``, the
latest snapshot (also when the range ends below it: a snapshot file is created atomically, so an unreadable one is
damage, not a commit in progress), every tag and branch root; their manifest lists; of their manifests, those that
may hold a candidate. Retained snapshots between ``end`` and the latest are not read (the cost follows what
expires): the contiguity argument covers them.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from tableformat.clock import resolve_now
from tableformat.codec.avro_projection import EntryRef
from tableformat.context import TableContext
from tableformat.errors import (
    CorruptMetadataError,
    MaintenanceError,
    SnapshotNotFoundError,
    StorageError,
    UnsafePathError,
    UnsupportedFormatError,
)
from tableformat.layout import EXPIRE_JOURNAL_PREFIX
from tableformat.live_set import PartitionPredicate, merge_entries
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.model.snapshot import Consumer, Snapshot, Tag
from tableformat.parallel import Workers

from ..roots import Root
from .attached import AttachedFiles
from .changelog import NewChangelogs
from .config import ExpireConfig
from .metadata import Candidate, DataPaths, MetadataCache, RangeReader, TagRef
from .planned import (
    ExpirePlan,
    PlannedFile,
    branch_ref,
    consumer_files,
    consumers_only,
    emptied_dirs,
    manifest_files,
    new_plan_id,
)
from .reason import StopReason, stop_reason
from .start import LatestVanished, PlanStart

log = logging.getLogger(__name__)


def plan_expiration(
    ctx: TableContext,
    config: ExpireConfig | None = None,
    now_ms: int | None = None,
    *,
    pending: Sequence[ExpirePlan] | Callable[[], Sequence[ExpirePlan]] = (),
    workers: Workers | None = None,
) -> ExpirePlan:
    """Decide what one run expires (``config`` defaults to the table's options). Reads metadata only.

    ``pending``: journaled plans this run completes (or, in a dry run, would complete) first: their snapshots,
    tags and consumers are treated as gone, and their snapshots count against this run's limit. A callable is
    called once the first reads are done (the journals can be gathered meanwhile); what it raises propagates as is.
    """
    now = resolve_now(now_ms)
    config = config or ExpireConfig.resolve(ctx.options)
    if workers is None:
        with Workers(config.parallelism) as own:
            return plan_expiration(ctx, config, now, pending=pending, workers=own)
    planner = _Planner(ctx, config, now, workers)
    try:
        return planner.plan(pending)
    except _PendingFailed as exc:
        raise exc.error from exc.error.__cause__
    except (_ConcurrentChange, LatestVanished) as exc:  # the latter: a rollback runs, nothing to do until it ends
        return ExpirePlan(plan_id=new_plan_id(), now_ms=now, end=None, note=str(exc))
    except (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, SnapshotNotFoundError) as exc:
        if planner.changed_underneath():
            note = f"another expiration changed the table while planning ({exc}); nothing done"
            log.info("%s", note)
            return ExpirePlan(plan_id=new_plan_id(), now_ms=now, end=None, note=note)
        raise MaintenanceError(f"expiration stopped, nothing was deleted: {exc}") from exc


class _PendingFailed(Exception):
    """Gathering the pending journals failed (raised as it was, not judged as planning's failure)."""

    def __init__(self, error: Exception) -> None:
        self.error = error


class _ConcurrentChange(Exception):
    """The snapshots being planned vanished: another expirer is at work."""


@dataclass
class _Range:
    earliest: int
    end: int
    end_snapshot: Snapshot
    expired: dict[int, tuple[Snapshot, int]] = field(default_factory=dict)


class _Planner:
    def __init__(self, ctx: TableContext, config: ExpireConfig, now_ms: int, workers: Workers) -> None:
        self.ctx = ctx
        self.config = config
        self.now = now_ms
        self.workers = workers
        self.cache = MetadataCache(ctx, workers)
        self.paths = DataPaths(ctx)
        self._listing: list[int] | None = None
        self._listing_lock = threading.Lock()
        self._earliest_seen: int | None = None

        self._started = False
        self._pending_ids: set[str] = set()
        self._snapshots: dict[int, tuple[Snapshot, int] | None] = {}
        self._reader: RangeReader | None = None
        """The range's reads while the range is planned (object stores), see RangeReader."""
        self._range_start = 0
        self._end_id: int | None = None

    # --- state that can change under us ----------------------------------------------------------------------
    def changed_underneath(self) -> bool:
        """True if another expirer moved the earliest snapshot or left a journal since planning began."""
        if not self._started:
            return False
        try:
            names = [f.name for f in self.ctx.io.list_dir(self.ctx.layout.snapshot_dir)]
            ours = {EXPIRE_JOURNAL_PREFIX + plan_id for plan_id in self._pending_ids}
            if any(n.startswith(EXPIRE_JOURNAL_PREFIX) and not n.endswith(".tmp") and n not in ours for n in names):
                return True
            return self.ctx.store.earliest_snapshot_id() != self._earliest_seen
        except OSError:
            return False

    def _ids(self) -> list[int]:
        with self._listing_lock:
            if self._listing is None:
                self._listing = self.ctx.store.snapshot_ids()
            return self._listing

    def _prefetch(self, first: int, last: int) -> None:
        """Read the snapshots first..last not read yet, at once (on object stores; elsewhere each is read when the
        walk needs it)."""
        if self.cache.parallel:
            ids = [i for i in range(first, last + 1) if i not in self._snapshots]
            reader = self._reader
            read = reader.read_now(ids) if reader else self.cache.read_all(self.cache.read_snapshot_file, ids)
            for sid, found in zip(ids, read):
                self._snapshots[sid] = found

    def _read(self, snapshot_id: int) -> tuple[Snapshot, int] | None:
        if snapshot_id not in self._snapshots:
            reader = self._reader
            read = reader.read_now([snapshot_id])[0] if reader else self.cache.read_snapshot_file(snapshot_id)
            self._snapshots[snapshot_id] = read
        return self._snapshots[snapshot_id]

    def _next_existing(self, snapshot_id: int, upto: int) -> int | None:
        """The smallest existing id >= snapshot_id and <= upto."""
        if snapshot_id <= upto and self._read(snapshot_id) is not None:
            return snapshot_id
        ids = self._ids()
        pos = bisect.bisect_left(ids, snapshot_id)
        return ids[pos] if pos < len(ids) and ids[pos] <= upto else None

    # --- planning ----------------------------------------------------------------------------------------------
    def _started_at(self, earliest: int | None) -> None:
        self._earliest_seen, self._started = earliest, True

    def plan(self, pending: Sequence[ExpirePlan] | Callable[[], Sequence[ExpirePlan]]) -> ExpirePlan:
        start = PlanStart(self.ctx, self.cache, self._read, self._ids)
        latest, all_tags, all_consumers, branches = start.run(self._started_at)
        if callable(pending):
            try:
                pending = pending()
            except Exception as exc:
                raise _PendingFailed(exc) from exc
        self._pending_ids = {p.plan_id for p in pending}
        gone_tags = {ref for p in pending for ref in p.expired_tags}
        gone_consumers = {c for p in pending for c in p.expired_consumers}
        ends = [p.end for p in pending if p.end is not None and p.expired_snapshots]
        floor = max(ends) if ends else None
        spent = sum(len(p.expired_snapshots) for p in pending)
        tags = [t for t in all_tags if TagRef.of(t) not in gone_tags]
        consumers = [c for c in all_consumers if c.consumer_id not in gone_consumers]
        cutoff = None if self.config.consumer_expiration_ms is None else self.now - self.config.consumer_expiration_ms
        dead = [c for c in consumers if cutoff is not None and c.modified_ms is not None and c.modified_ms < cutoff]
        alive = [c for c in consumers if c not in dead]
        expired_tags = [t for t in tags if t.expired(self.now) or t.name in self.config.delete_tags]
        held = {
            t.name: sorted({r.branch for r in branches if r.branch and r.snapshot.same_state(t.snapshot)})
            for t in expired_tags
        }
        notes = [
            f"tag {name!r} is past its time-retained but kept: branch {', '.join(users)} was created from it"
            for name, users in held.items()
            if users
        ]
        expired_tags = [t for t in expired_tags if not held[t.name]]
        protecting = [t for t in tags if t not in expired_tags]

        earliest = self._earliest_seen
        if earliest is None or latest is None:
            return consumers_only(self.ctx.layout, self.now, dead, cutoff)
        if floor is not None:
            earliest = max(earliest, floor)
        limit = self.config.limit - spent
        consumer_next = min((c.next_snapshot for c in alive), default=None)
        newest = self._newest(latest)
        kept = [newest, *[t.snapshot for t in protecting], *[r.snapshot for r in branches]]
        span = self._range(earliest, latest, consumer_next, limit, kept, [t.snapshot for t in expired_tags])
        why = self._why(span, latest, consumer_next, limit)
        notes.append(why.text)
        stale_tags = [t for t in expired_tags if t.snapshot.id < span.end]
        plan = self._files(span, newest, protecting, branches, expired_tags, stale_tags, dead, cutoff)
        versions = tuple((t.name, start.tag_versions.get(t.name, "")) for t in tags)
        hint = start.earliest_hint
        branch_versions = tuple((root.label, root.version) for root in branches)
        plan = replace(plan, backlog=why.left, tag_versions=versions, branch_versions=branch_versions)
        plan = replace(plan, earliest_hint=hint, earliest_hint_read=True)
        return replace(plan, note="; ".join(notes)) if notes else plan

    def _newest(self, latest: int) -> Snapshot:
        """The latest snapshot (read by PlanStart: unreadable, it stopped the plan there). The plan keeps what it
        holds, as a tag's: its lists are read and the manifests that may hold a file to delete."""
        found = self._read(latest)
        if found is None:
            raise _ConcurrentChange(f"the latest snapshot {latest} disappeared while planning")
        return found[0]

    def _range(
        self,
        earliest: int,
        latest: int,
        consumer_next: int | None,
        limit: int,
        kept: list[Snapshot],
        tags: list[Snapshot],
    ) -> _Range:
        """Where the range ends (``_select_end``) and its snapshots read with their lists (``_expired_range``). On
        object stores one RangeReader does every read, and the snapshots expired whatever the walk finds are read
        while it walks."""
        end = earliest
        self._range_start, self._reader = earliest, self.cache.range_reader(self._deletes_read, self.paths)
        try:
            if limit > 0 and earliest <= latest:
                if self._reader is not None:
                    low, max_exclusive = self._bounds(earliest, latest, consumer_next, limit)
                    certain = range(earliest, min(low, max_exclusive))
                    read = [found[0] for i in certain if (found := self._snapshots.get(i)) is not None]
                    self._reader.start([i for i in certain if i not in self._snapshots], [*kept, *read])
                end = self._select_end(earliest, latest, consumer_next, limit)
            return self._expired_range(earliest, end, latest, kept, tags)
        finally:
            if self._reader is not None:
                self._reader.close()
            self._reader = None

    def _bounds(self, earliest: int, latest: int, consumer_next: int | None, limit: int) -> tuple[int, int]:
        """(low, max_exclusive): the range ends at or after ``low`` (retain-max), before ``max_exclusive``
        (retain-min, the consumers, the limit) or at it. ``_select_end`` never returns less than the smaller of
        the two (or ``earliest``, when max_exclusive is not above it), so the snapshots below it are expired
        whatever the time rule finds."""
        config = self.config
        low = max(latest - config.retain_max + 1, earliest)
        max_exclusive = latest - config.retain_min + 1
        if consumer_next is not None:
            max_exclusive = min(max_exclusive, consumer_next)
        return low, min(max_exclusive, earliest + limit)

    def _select_end(self, earliest: int, latest: int, consumer_next: int | None, limit: int) -> int:
        low, max_exclusive = self._bounds(earliest, latest, consumer_next, limit)
        if max_exclusive <= earliest:
            return earliest
        threshold = self.now - self.config.time_retained_ms
        candidate: int | None = None
        current = self._next_existing(low, latest)
        window = 2  # read ahead in doubling windows: the walk often stops after a snapshot or two
        while current is not None:
            if current not in self._snapshots:
                self._prefetch(current, min(current + window - 1, max_exclusive))
                window = min(2 * window, 8 * self.workers.threads)
            found = self._read(current)
            if found is None:  # vanished while walking
                raise _ConcurrentChange(f"snapshot {current} disappeared while planning; another expirer is at work")
            if candidate is not None and found[0].time_millis >= threshold:
                return candidate
            if current >= max_exclusive:
                break
            candidate = current
            current = self._next_existing(current + 1, latest)
        return max_exclusive

    def _why(self, span: _Range, latest: int, consumer_next: int | None, limit: int) -> StopReason:
        """What ended the range (printed by dry runs and real runs alike; reason.py)."""

        def read(snapshot_id: int) -> Snapshot | None:
            found = self._read(snapshot_id)
            return None if found is None else found[0]

        return stop_reason(
            self.config,
            ids=self._ids,
            expired=len(span.expired),
            earliest=span.earliest,
            latest=latest,
            end=span.end,
            consumer_next=consumer_next,
            limit=limit,
            now_ms=self.now,
            read=read,
        )

    def _deletes_read(self, sid: int, exists: Callable[[int], bool]) -> bool:
        """Whether the planner reads the manifests of snapshot ``sid``'s delta for candidates: when s-1 is in the range
        and exists, _candidates reads delta(s) (s in (begin, end]), else s is stranded below a gap and
        _add_live_files reads all its manifests. Before the end is known, only snapshots below it are asked about."""
        end = self._end_id
        return (
            self._range_start < sid
            and (end is None or sid <= end)
            and (exists(sid - 1) or self._snapshots.get(sid - 1) is not None)
        )

    def _expired_range(
        self, earliest: int, end: int, latest: int, kept: list[Snapshot], tags: list[Snapshot]
    ) -> _Range:
        """The range's snapshots, read with (object stores) the lists _files reads: theirs, end's, the ``kept`` roots'
        and those of the expired ``tags`` older than the end."""
        end_id = self._next_existing(end, latest)
        found_end = None if end_id is None else self._read(end_id)
        if end_id is None or found_end is None:
            raise _ConcurrentChange(f"snapshot {end} and all after it up to {latest} disappeared while planning")
        span = _Range(earliest=earliest, end=end_id, end_snapshot=found_end[0])
        ahead = [i for i in range(earliest, min(end, end_id)) if i not in self._snapshots]
        known = [found[0] for i, found in self._snapshots.items() if found is not None and earliest <= i < end_id]
        self._end_id = end_id
        roots = [*kept, *[t for t in tags if t.id < end_id], *known]
        if self._reader is not None:  # ahead includes what start() queued: each snapshot is read once
            protected = [span.end_snapshot, self._newest(latest)]
            read = self._reader.finish(ahead, roots, [span.end_snapshot], protected=protected)
        else:
            read = [self.cache.read_snapshot_file(i) for i in ahead]
        for sid, found in zip(ahead, read):
            self._snapshots[sid] = found
        sid = earliest
        while sid < end_id:
            found = self._read(sid)
            if found is not None:
                span.expired[sid] = found
                sid += 1
                continue
            ids = self._ids()  # a gap: jump to the next listed id instead of probing every missing one
            pos = bisect.bisect_right(ids, sid)
            sid = ids[pos] if pos < len(ids) else end_id
        return span

    def _files(
        self,
        span: _Range,
        newest: Snapshot,
        protecting: list[Tag],
        branches: list[Root],
        expired_tags: list[Tag],
        stale_tags: list[Tag],
        dead: list[Consumer],
        cutoff: int | None,
    ) -> ExpirePlan:
        layout = self.ctx.layout
        expired = [span.expired[i][0] for i in sorted(span.expired)]
        protected = [t.snapshot for t in protecting] + [r.snapshot for r in branches]
        changelogs = NewChangelogs.of(self.config, expired)  # decoupled: the expired leave changelog roots
        keep_roots = [span.end_snapshot, *([newest] if newest.id != span.end else []), *protected, *changelogs.whole]
        gone_roots = [*expired, *[t.snapshot for t in stale_tags]]
        roots = [*keep_roots, *gone_roots]
        self.cache.load_lists(n for s in roots for n in (s.base_manifest_list, s.delta_manifest_list))
        self.cache.kept_manifests = {m.file_name for s in keep_roots for m in self.cache.manifests_of(s)}

        candidates, external = self._unprotected_data(span, stale_tags, keep_roots)
        lists, manifests = self._unreferenced_metadata(keep_roots, gone_roots)
        attached = AttachedFiles(self.ctx, self.cache, self.paths)
        attached_files = attached.plan(gone_roots, keep_roots, changelogs.changelog_only)
        data = []
        for path in sorted(candidates):
            candidate = candidates.pop(path)  # frees as it goes: this is the planner's peak on huge tables
            data.append(PlannedFile(path, candidate.size, candidate.extras))
        del candidates
        fingerprints = [(s.id, s.base_manifest_list) for s in [*expired, span.end_snapshot]]
        tag_names, sizes = [t.name for t in expired_tags], {i: found[1] for i, found in span.expired.items()}
        return ExpirePlan(
            plan_id=new_plan_id(),
            now_ms=self.now,
            end=span.end,
            expired_snapshots=tuple(s.id for s in expired),
            changelog_roots=changelogs.ids,
            fingerprints=tuple(fingerprints),
            snapshot_files=tuple(
                PlannedFile(layout.relative(layout.snapshot_file(i)), size) for i, size in sorted(sizes.items())
            ),
            data_files=tuple(data),
            manifests=manifest_files(manifests),
            manifest_lists=manifest_files(lists),
            tag_files=tuple(PlannedFile(layout.relative(p), self._size(p)) for p in map(layout.tag_file, tag_names)),
            consumer_files=consumer_files(self.ctx.layout, dead),
            expired_tags=tuple(TagRef.of(t) for t in expired_tags),
            protecting_tags=tuple(TagRef.of(t) for t in protecting),
            protecting_branch_roots=tuple(branch_ref(r) for r in branches),
            expired_consumers=tuple(c.consumer_id for c in dead),
            consumer_cutoff_ms=cutoff,
            attached=attached_files,
            skipped_external=tuple(sorted(external | attached.external)),
            empty_dir_candidates=emptied_dirs([*data, *attached_files.changelog_files], self.paths.directory_depth),
        )

    def _unprotected_data(
        self, span: _Range, stale_tags: list[Tag], keep_roots: list[Snapshot]
    ) -> tuple[dict[str, Candidate], set[str]]:
        """The candidate data files (see _candidates) that no kept root holds live, and the external paths seen."""
        candidates, partitions, external, end_added = self._candidates(span, stale_tags)
        if candidates:
            # A live view, not a copy: files found live in one root leave it, which never changes what is live in
            # another root among the files still wanted.
            wanted = candidates.keys()
            predicate = self.paths.predicate(partitions)
            for path in self._live_in_end(span.end_snapshot, candidates, wanted, end_added, predicate):
                candidates.pop(path, None)
            for root in keep_roots[1:]:
                for path in self.cache.live_paths(root, wanted, self.paths, predicate):
                    candidates.pop(path, None)
        return candidates, external

    def _unreferenced_metadata(
        self, keep_roots: list[Snapshot], gone_roots: list[Snapshot]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """Manifest lists and manifests (name -> size) of the gone roots that no kept root references."""
        layout = self.ctx.layout
        keep_lists = {n for s in keep_roots for n in (s.base_manifest_list, s.delta_manifest_list)}
        keep_manifests = self.cache.kept_manifests
        lists: dict[str, int] = {}
        manifests: dict[str, int] = {}
        for snap in gone_roots:
            for name, size in (
                (snap.base_manifest_list, snap.base_manifest_list_size),
                (snap.delta_manifest_list, snap.delta_manifest_list_size),
            ):
                if name not in keep_lists:
                    lists.setdefault(name, size if size is not None else self._size(layout.manifest_file(name)))
            for meta in self.cache.manifests_of(snap):
                if meta.file_name not in keep_manifests:
                    manifests.setdefault(meta.file_name, meta.file_size)
        return lists, manifests

    def _size(self, path: str) -> int:
        try:
            return self.ctx.io.file_size(path)
        except FileNotFoundError:
            return 0

    def _live_in_end(
        self,
        end: Snapshot,
        candidates: dict[str, Candidate],
        wanted: AbstractSet[str],
        end_added: set[str] | None,
        predicate: PartitionPredicate | None,
    ) -> set[str]:
        """The candidates live in ``end`` (what ``cache.live_paths(end, ...)`` returns), reading less.

        A file's state in a snapshot is decided by its last entry in base-then-delta order. When ``_candidates``
        read all of end's delta (``end_added`` is not None), a candidate whose last entry there is a DELETE
        (``dead_in_end``) is not live and one whose last entry there is an ADD (``end_added``) is; only the others
        are looked up, in end's base manifests.
        """
        if end_added is None:
            return self.cache.live_paths(end, wanted, self.paths, predicate)
        live = {p for p in end_added if p in wanted}
        if all(c.dead_in_end or p in live for p, c in candidates.items()):
            return live
        base = self.cache.manifest_list(end.base_manifest_list)
        for path in self.cache.live_among(base, wanted, self.paths, predicate):
            if not candidates[path].dead_in_end and path not in end_added:
                live.add(path)
        return live

    def _candidates(
        self, span: _Range, stale_tags: list[Tag]
    ) -> tuple[dict[str, Candidate], set[bytes], set[str], set[str] | None]:
        """Data files that stop being referenced: see the module docstring.

        Also returns the files whose last entry in the delta of ``end`` is an ADD when that delta was read (None
        when it was not); candidates whose last entry there is a DELETE are marked ``dead_in_end``.
        """
        candidates: dict[str, Candidate] = {}
        partitions: set[bytes] = set()
        external: set[str] = set()
        end_added: set[str] | None = None
        paths = self.paths
        of = paths.of
        add = FileKind.ADD
        begin = span.end
        while begin - 1 in span.expired:
            begin -= 1
        for sid in range(begin + 1, span.end + 1):
            snap = span.end_snapshot if sid == span.end else span.expired[sid][0]
            metas = self.cache.manifest_list(snap.delta_manifest_list)
            if not any(m.num_deleted_files > 0 for m in metas):
                continue  # a pure append retires nothing
            is_end = sid == span.end
            pending: dict[str, Candidate] = {}
            added: set[str] = set()
            for entries in self._remembering(metas):
                for entry in entries:
                    path = of(entry)
                    if path is None:
                        if entry.kind != add:
                            external.add(str(entry.external_path))
                        continue
                    if entry.kind == add:
                        pending.pop(path, None)
                        if is_end:
                            added.add(path)
                    else:
                        extras = paths.extras(entry) if entry.extra_files else ()
                        pending[path] = Candidate(entry.file_size, extras, is_end)
                        # Partitions only narrow which manifests the protection checks read: one of a file
                        # re-added later in this delta only widens that, never changes the result.
                        partitions.add(entry.partition)
                        if is_end:
                            added.discard(path)
            if is_end:
                end_added = added
            if candidates:
                candidates.update(pending)
            else:
                candidates = pending  # the common case (one drop or overwrite): no copy of a huge dict
            del pending
        stranded = [span.expired[i][0] for i in sorted(span.expired) if i < begin]
        self._add_live_files([*stranded, *[t.snapshot for t in stale_tags]], candidates, partitions, external)
        return candidates, partitions, external, end_added

    def _remembering(self, metas: list[ManifestFileMeta]) -> Iterator[list[EntryRef]]:
        """``cache.entries(metas)``, each manifest that a kept root references remembered on the way (the
        protection checks then need not read it again)."""
        for meta, entries in zip(metas, self.cache.entries(metas)):
            self.cache.remember(meta.file_name, entries, self.paths)
            yield entries

    def _add_live_files(
        self, roots: list[Snapshot], candidates: dict[str, Candidate], partitions: set[bytes], external: set[str]
    ) -> None:
        """Every file live in these roots (snapshots stranded below a gap, expired tags) becomes a candidate."""
        of, paths = self.paths.of, self.paths
        for snap in roots:
            live = merge_entries(self._remembering(self.cache.manifests_of(snap)))
            for entry in live.values():
                path = of(entry)
                if path is None:
                    external.add(str(entry.external_path))
                    continue
                known = candidates.get(path)  # what end's delta says about a path holds whichever entry named it
                dead = known is not None and known.dead_in_end
                candidates[path] = Candidate(entry.file_size, paths.extras(entry), dead)
                partitions.add(entry.partition)
