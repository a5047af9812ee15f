"""Metadata reading for expiration: cached manifest reads and data file paths relative to the table root.

Every read failure propagates (a missing or corrupt manifest list, manifest, snapshot or tag is never treated as
"empty"): the caller turns it into a MaintenanceError before anything is deleted.

Cost (issue 3): each manifest list is read once per run (cached by name; consecutive base lists share their
decoded prefix, avro_projection.ManifestListReader); manifest entries are decoded only as far as expiration needs them
(avro_projection.EntryRef: kind, partition, bucket, file name, size, level, extra files, embedded index, external path),
which is exactly what the full decoder returns for those fields; a manifest that is only deleted is never read.
Metadata is read in parallel only on object stores, where a read waits on the network; on a local disk a pool task
costs more than the read and decoding holds the GIL. Deletes are parallel everywhere (expire._Deleter).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from tableformat.codec.avro_projection import EntryRef, ManifestListReader
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths as TableDataPaths
from tableformat.layout import check_file_name
from tableformat.live_set import PartitionPredicate, PathEntry, merge_entries
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.model.snapshot import Snapshot, Tag
from tableformat.parallel import READ_CHUNK, Workers

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class TagRef:
    """A tag as expiration saw it: name plus the snapshot it holds (a re-created tag is a different TagRef)."""

    name: str
    snapshot_id: int
    base_manifest_list: str

    @classmethod
    def of(cls, tag: Tag) -> TagRef:
        return cls(tag.name, tag.snapshot.id, tag.snapshot.base_manifest_list)


class Candidate(NamedTuple):
    """A data file that expiration may delete: size from its manifest entry and its extra files (same directory).

    ``dead_in_end``: its last entry in the delta of the snapshot that ends the range is a DELETE, so it is not live
    in that snapshot whatever that snapshot's base says (the planner then need not read the base for it).
    """

    size: int
    extras: tuple[str, ...] = ()
    dead_in_end: bool = False


ENTRIES_IN_FLIGHT = 100_000
"""Manifest entries decoded at once (projected, about 300 bytes each): bounds peak memory on tables with many files."""

REMEMBERED_ENTRIES = 200_000
"""Entries (as kind + path, about 70 bytes each) of manifests read for the candidates and kept in case the
protection checks need the same manifests: beyond this, such a manifest is read again (bounded memory wins)."""


_DOTS = (".", "..")


class DataPaths(TableDataPaths):
    """Data file paths relative to the table root (:class:`tableformat.data_paths.DataPaths`) for the projected
    entries expiration reads, plus the partition pruning of its manifest reads."""

    def __init__(self, ctx: TableContext) -> None:
        super().__init__(ctx.schema, ctx.partition_codec())

    def of(self, entry: EntryRef) -> str | None:
        """The entry's file path relative to the root (``data_paths.file_in`` with its name check spelled out for
        speed); None for a file with an external path (never ours to delete)."""
        if entry.external_path:
            return None
        name = entry.file_name
        if not name or name in _DOTS or "/" in name or "\\" in name or "\x00" in name or ":" in name:
            check_file_name(name, what="data file name")  # raises: the same check, spelled out for speed
        directory = self._dirs.get((entry.partition, entry.bucket))
        if directory is None:
            directory = self.bucket_dir(entry.partition, entry.bucket)
        return f"{directory}/{name}"

    def extras(self, entry: EntryRef) -> tuple[str, ...]:
        """Relative paths of the entry's extra files (e.g. ``.index`` sidecars next to the data file)."""
        if not entry.extra_files or entry.external_path:
            return ()
        return self.extras_of(entry.partition, entry.bucket, entry.extra_files)

    def predicate(self, partitions: Iterable[bytes]) -> PartitionPredicate | None:
        """A predicate matching exactly these partitions (None for an unpartitioned table: everything matches)."""
        if not self.partitioned:
            return None
        return PartitionPredicate(tuple(dict(self._codec.values(p)) for p in set(partitions)))

    def may_hold(self, meta: ManifestFileMeta, predicate: PartitionPredicate | None) -> bool:
        return predicate is None or predicate.may_match(meta, self._codec)


class MetadataCache:
    """Manifest lists (cached by name) and manifests (read on demand) for one expiration run."""

    def __init__(self, ctx: TableContext, workers: Workers) -> None:
        self.ctx = ctx
        self.workers = workers
        self._lists: dict[str, list[ManifestFileMeta]] = {}
        self._filtered: dict[str, list[PathEntry]] = {}
        self.kept_manifests: AbstractSet[str] = frozenset()
        """Manifests some kept root references: the protection checks may read them (see ``remember``)."""
        self._remembered: dict[str, list[PathEntry]] = {}
        self._remembered_count = 0
        self._reader = ManifestListReader()
        self._prefetched: dict[str, list[EntryRef] | BaseException] = {}
        """Manifests read ahead by a RangeReader (entries, or the read's error), each taken once."""
        # Parallel reads pay off where a read waits on the network. On a local disk a read costs less than a pool
        # task, and decoding holds the GIL: reading in order in this thread is faster (and lets consecutive
        # manifest lists share their decoded prefixes).
        self.parallel = ctx.io.is_object_store

    def read_all(self, fn: Callable[[T], R], items: Sequence[T], chunk: int = READ_CHUNK) -> list[R]:
        """``[fn(x) for x in items]`` for metadata reads: in parallel chunks on object stores, in order otherwise."""
        if self.parallel:  # small tasks: a read is a wait, and the threads must not idle at the end of a batch
            return self.workers.map_chunked(fn, items, min(chunk, 2))
        return [fn(item) for item in items]

    def read_snapshot_file(self, snapshot_id: int) -> tuple[Snapshot, int] | None:
        """The snapshot and its file size, or None when ``snapshot-N`` does not exist."""
        return self.ctx.store.read_snapshot_sized(snapshot_id)

    def load_lists(self, names: Iterable[str]) -> None:
        """Read every named manifest list not read yet (in parallel chunks, each list once)."""
        missing = list(dict.fromkeys(n for n in names if n not in self._lists))
        reader = self._reader
        store = self.ctx.store
        read = lambda name: store.read_manifest_list_fast(name, reader)  # noqa: E731
        for name, metas in zip(missing, self.read_all(read, missing)):
            self._lists[name] = metas

    def range_reader(
        self, deletes_read: Callable[[int, Callable[[int], bool]], bool], paths: DataPaths
    ) -> RangeReader | None:
        """The reads of one plan's range on object stores (None elsewhere: there the planner reads the snapshots in
        order as it goes, each list and manifest when it needs it).

        The reader reads each snapshot id it is given and, as each is decoded, its manifest lists; the lists of the
        ``roots`` it is given (the planner reads every one of them next); the manifests of a delta list with DELETE
        entries (of a snapshot read here or of a ``delta_roots`` snapshot) when ``deletes_read(id, exists)`` says
        the planner will read them (``exists(id)``: that snapshot was read and exists); and the manifests of the
        ``protected`` snapshots (the end and the latest) that the planner will check those DELETE entries' files
        against (``paths``: partition pruning, as the planner's). Each object once; see RangeReader for the order of
        reads."""
        return RangeReader(self, deletes_read, paths) if self.parallel else None

    def manifest_list(self, name: str) -> list[ManifestFileMeta]:
        if name not in self._lists:
            self.load_lists([name])
        return self._lists[name]

    def manifests_of(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Base then delta manifests (the order that merging needs)."""
        self.load_lists([snapshot.base_manifest_list, snapshot.delta_manifest_list])
        return self._lists[snapshot.base_manifest_list] + self._lists[snapshot.delta_manifest_list]

    def entries(self, metas: Sequence[ManifestFileMeta]) -> Iterator[list[EntryRef]]:
        """Entries of each manifest in order (projected: avro_projection.EntryRef), read in parallel chunks (bounded
        memory)."""
        chunk: list[str] = []
        pending = 0
        for meta in metas:
            chunk.append(meta.file_name)
            pending += meta.num_added_files + meta.num_deleted_files
            if len(chunk) >= self.workers.threads * 4 or pending >= ENTRIES_IN_FLIGHT:
                yield from self._entries_of(chunk)
                chunk, pending = [], 0
        if chunk:
            yield from self._entries_of(chunk)

    def _entries_of(self, names: list[str]) -> list[list[EntryRef]]:
        """Entries of each named manifest: taken from the read-ahead, the rest read (one manifest per task: a few
        manifests spread over every thread)."""
        ready = [self._prefetched.pop(name, None) for name in names]
        missing = [name for name, got in zip(names, ready) if got is None]
        read = iter(self.read_all(self.ctx.store.read_manifest_refs, missing, 1) if missing else ())
        result: list[list[EntryRef]] = []
        for got in ready:
            if isinstance(got, BaseException):
                raise got
            result.append(next(read) if got is None else got)
        return result

    def remember(self, name: str, entries: list[EntryRef], paths: DataPaths) -> None:
        """Keep the entries (kind and path) of a manifest read for another purpose when a kept root references it,
        so that ``live_among`` does not read it again (within REMEMBERED_ENTRIES)."""
        fits = self._remembered_count + len(entries) <= REMEMBERED_ENTRIES
        if fits and name in self.kept_manifests and name not in self._remembered:
            of = paths.of
            kept = [PathEntry(e.kind, path) for e in entries if (path := of(e)) is not None]
            self._remembered[name] = kept
            self._remembered_count += len(kept)

    def live_paths(
        self,
        snapshot: Snapshot,
        candidates: AbstractSet[str],
        paths: DataPaths,
        predicate: PartitionPredicate | None,
    ) -> set[str]:
        """The candidates that are live in ``snapshot`` (ADD/DELETE merged in manifest order).

        Manifests whose partition statistics exclude every candidate partition are not read. Per manifest only the
        entries naming a candidate are kept (cached), so memory stays bounded by the candidate set.
        """
        return self.live_among(self.manifests_of(snapshot), candidates, paths, predicate)

    def live_among(
        self,
        manifests: Sequence[ManifestFileMeta],
        candidates: AbstractSet[str],
        paths: DataPaths,
        predicate: PartitionPredicate | None,
    ) -> set[str]:
        """The candidates whose last entry in these manifests (in order) is an ADD; see ``live_paths``."""
        wanted = candidates
        metas = [m for m in manifests if paths.may_hold(m, predicate)]
        for meta in metas:
            remembered = self._remembered.get(meta.file_name)
            if remembered is not None and meta.file_name not in self._filtered:
                self._filtered[meta.file_name] = [entry for entry in remembered if entry.path in wanted]
        unread = list({m.file_name: m for m in metas if m.file_name not in self._filtered}.values())
        of = paths.of
        for meta, entries in zip(unread, self.entries(unread)):
            kept: list[PathEntry] = []
            for entry in entries:
                path = of(entry)
                if path is not None and path in wanted:
                    kept.append(PathEntry(entry.kind, path))
            self._filtered[meta.file_name] = kept
        return {entry.path for entry in merge_entries(self._filtered[meta.file_name] for meta in metas).values()}


class RangeReader:
    """``MetadataCache.range_reader``: the reads of one plan's range on object stores: snapshots, then each
    one's manifest lists, then the manifests the planner will read, every read queued as soon as what names it is
    decoded and at most ``threads`` reads in flight. Nothing is requested twice: a list or manifest name is claimed
    under a lock before its read is queued, a snapshot id when it is first queued.

    Reads are taken by priority, then in the order they were queued: snapshots the planner waits for (``read_now``:
    the walk that finds where the range ends), manifests (they decide the candidates and the protection checks, the
    last reads of a plan) and the end snapshot's lists (they name the protection checks' manifests), snapshots of the
    range (they name the lists), delta lists (a deleting one names manifests),
    base lists (they name nothing read here). So the range's snapshots that are expired whatever the walk finds are
    read while it walks (``start``); and the manifests that a deleting delta names, and those of the ``protected``
    snapshots that the planner then checks its candidates against (the end and the latest: their manifests whose
    partition statistics may hold a partition with a DELETE entry read so far), are read while the other lists still
    are, not after all of them.
    """

    _NOW, _MANIFEST, _SNAPSHOT, _DELTA_LIST, _BASE_LIST = range(5)

    def __init__(
        self,
        cache: MetadataCache,
        deletes_read: Callable[[int, Callable[[int], bool]], bool],
        paths: DataPaths,
    ) -> None:
        self.cache = cache
        self.deletes_read = deletes_read
        self.found: dict[int, tuple[Snapshot, int] | None] = {}
        self._claimed: set[str] = set(cache._lists)
        self._entries = 0
        self._lock = threading.Lock()
        self._futures: list[Future[None]] = []
        self._queue: list[tuple[int, int, Callable[..., None], tuple[object, ...]]] = []
        self._order = itertools.count()
        self._runners = 0
        self._ready: dict[int, threading.Event] = {}
        self._taken: set[int] = set()
        self._failed: dict[int, BaseException] = {}
        self._protected: tuple[tuple[str, str], ...] = ()
        """(base, delta) manifest list of each snapshot the candidates are checked against (see ``finish``)."""
        self._paths = paths
        self._deleted_in: set[bytes] = set()
        """Partitions of the DELETE entries read so far (what the protection checks will look for)."""
        self._error: BaseException | None = None
        """The first read that failed: it stops the reads (see ``_stop``) and ``finish`` raises it."""
        self._closed = False

    # --- what the planner calls ------------------------------------------------------------------------------
    def start(self, ids: Iterable[int], roots: Iterable[Snapshot] = ()) -> None:
        """Queue the snapshots (with their lists, as they are decoded) and the roots' lists; returns at once."""
        for root in roots:
            self._lists_of(None, root, self._SNAPSHOT)
        for sid in ids:
            self._snapshot_read(sid, self._SNAPSHOT, lists=True)

    def read_now(self, ids: Sequence[int]) -> list[tuple[Snapshot, int] | None]:
        """The snapshots (None: missing), read ahead of everything queued, without their lists. Raises the read's
        error, or the first error of any read when the reads stopped before this one was made."""
        events = [self._snapshot_read(sid, self._NOW, lists=False) for sid in ids]
        for sid, event in zip(ids, events):
            event.wait()
            if sid in self._failed:
                raise self._failed[sid]
            if sid not in self.found:  # set without a result: the reads stopped (or were closed) first
                raise self._error or RuntimeError(f"snapshot {sid} asked for after the plan's reads were closed")
        return [self.found[sid] for sid in ids]

    def finish(
        self,
        ids: Sequence[int],
        roots: Iterable[Snapshot] = (),
        delta_roots: Iterable[Snapshot] = (),
        protected: Iterable[Snapshot] = (),
    ) -> list[tuple[Snapshot, int] | None]:
        """Queue the rest (see ``MetadataCache.range_reader``), wait until every read is answered (the first
        error propagates) and return the snapshots ``ids``."""
        self._protected = tuple((root.base_manifest_list, root.delta_manifest_list) for root in protected)
        for root in delta_roots:  # the end's lists: few, and they name the protection checks' manifests
            self._lists_of(root.id, root, self._MANIFEST)
        for root in roots:
            self._lists_of(None, root, self._SNAPSHOT)
        for sid in ids:
            self._snapshot_read(sid, self._SNAPSHOT, lists=True)
        self._protect()
        while True:  # tasks add tasks: wait until none is left
            with self._lock:
                if not self._futures:
                    break
                future = self._futures.pop()
            future.result()
        if self._error is not None:
            raise self._error
        return [self.found[sid] for sid in ids]

    def close(self) -> None:
        """Take no more reads (a planner that stopped early): what is queued is dropped; reads under way end on
        their own and queue nothing more."""
        with self._lock:
            self._closed = True
            self._queue.clear()
            waiting = list(self._ready.values())
        for event in waiting:  # nobody should be waiting; if somebody is, it must not wait for good
            event.set()

    # --- the queue ---------------------------------------------------------------------------------------------
    def _submit(self, priority: int, fn: Callable[..., None], *args: object) -> None:
        """Queue a read; start a runner for it unless ``threads`` runners are at work already."""
        with self._lock:
            if self._closed:
                return
            heapq.heappush(self._queue, (priority, next(self._order), fn, args))
            if self._runners >= self.cache.workers.threads:
                return
            self._runners += 1
        try:
            future = self.cache.workers.submit(self._drain)
        except BaseException as exc:  # e.g. the pool shut down under a planner that stopped
            with self._lock:
                self._runners -= 1
            self._stop(exc)
            return
        with self._lock:
            self._futures.append(future)

    def _drain(self) -> None:
        """A runner: take the first queued read until none is left. A failing read stops the reads (``_stop``);
        the runner never dies with reads left in the queue (a planner waiting in ``read_now`` would wait for good)."""
        while True:
            with self._lock:
                if not self._queue:
                    self._runners -= 1
                    return
                _, _, fn, args = heapq.heappop(self._queue)
            try:
                fn(*args)
            except BaseException as exc:
                self._stop(exc)

    def _stop(self, exc: BaseException) -> None:
        """The first error ends the reads: it is kept (``finish`` raises it), what is queued is dropped and every
        planner waiting in ``read_now`` wakes up (and raises it, unless its own read failed)."""
        with self._lock:
            if self._error is None:
                self._error = exc
            self._closed = True
            self._queue.clear()
            waiting = list(self._ready.values())
        for event in waiting:
            event.set()

    def _claim(self, name: str) -> bool:
        with self._lock:
            if name in self._claimed:
                return False
            self._claimed.add(name)
            return True

    def _budget(self, size: int) -> bool:
        """Whether ``size`` more entries may be held read ahead (the planner's bound on entries held at once)."""
        with self._lock:
            if self._entries + size > ENTRIES_IN_FLIGHT:
                return False
            self._entries += size
            return True

    # --- the reads ---------------------------------------------------------------------------------------------
    def _snapshot_read(self, sid: int, priority: int, *, lists: bool) -> threading.Event:
        """Queue snapshot ``sid`` unless it is queued already (a ``read_now`` queues it again, ahead of everything: the
        first of the two to run reads it); its event is set once it is read, failed, or the reads stopped."""
        with self._lock:
            event = self._ready.get(sid)
            queued = event is not None
            if event is None:
                event = self._ready[sid] = threading.Event()
            if self._closed:  # the reads stopped: nothing will read it, the waiter must not wait
                event.set()
                return event
        if not queued or priority == self._NOW:  # a waiting planner overtakes the queued read (taken once)
            self._submit(priority, self._snapshot, sid, lists)
        return event

    def _snapshot(self, sid: int, lists: bool) -> None:
        with self._lock:
            if sid in self._taken:
                return
            self._taken.add(sid)
        try:
            found = self.cache.read_snapshot_file(sid)
        except BaseException as exc:
            self._failed[sid] = exc
            self._ready[sid].set()
            raise
        self.found[sid] = found  # before the event: a woken waiter finds either the result or an error
        self._ready[sid].set()
        if found is not None and lists:
            self._lists_of(sid, found[0], self._DELTA_LIST)

    def _lists_of(self, sid: int | None, snapshot: Snapshot, priority: int) -> None:
        """Queue the snapshot's lists at ``priority``, except a range snapshot's base list (``priority`` is that of
        delta lists): after every delta list."""
        if self._claim(snapshot.base_manifest_list):
            base = self._BASE_LIST if priority == self._DELTA_LIST else priority
            self._submit(base, self._list, snapshot.base_manifest_list, None)
        if self._claim(snapshot.delta_manifest_list):
            self._submit(priority, self._list, snapshot.delta_manifest_list, sid)

    def _list(self, name: str, delta_of: int | None) -> None:
        metas = self.cache.ctx.store.read_manifest_list_fast(name, self.cache._reader)
        self.cache._lists[name] = metas
        if any(name in pair for pair in self._protected):
            self._protect()
        if delta_of is None or not any(m.num_deleted_files > 0 for m in metas):
            return
        if not self.deletes_read(delta_of, lambda sid: self.found.get(sid) is not None):
            return
        if not self._budget(sum(m.num_added_files + m.num_deleted_files for m in metas)):
            return
        for meta in metas:
            if self._claim("manifest/" + meta.file_name):
                self._submit(self._MANIFEST, self._manifest, meta.file_name, True)

    def _manifest(self, name: str, deleting: bool) -> None:
        try:
            entries = self.cache.ctx.store.read_manifest_refs(name)
        except Exception as exc:  # raised where the planner reads it (ordered after its own checks)
            self.cache._prefetched[name] = exc
            return
        self.cache._prefetched[name] = entries
        if deleting:  # recorded even before the end (and what it protects) is known
            add = FileKind.ADD
            found = {entry.partition for entry in entries if entry.kind != add}
            with self._lock:
                new = found - self._deleted_in
                self._deleted_in |= new
            if new:
                self._protect()

    def _protect(self) -> None:
        """Queue the protected snapshots' manifests that may hold a partition deleted from (each snapshot once its
        lists are read, and once a DELETE entry is)."""
        paths = self._paths
        with self._lock:
            partitions = set(self._deleted_in)
        if not partitions:
            return
        predicate = paths.predicate(partitions)
        for pair in self._protected:
            lists = [self.cache._lists.get(name) for name in pair]
            if None in lists:
                continue
            for meta in (meta for metas in lists for meta in metas or ()):
                if paths.may_hold(meta, predicate) and self._claim("manifest/" + meta.file_name):
                    if not self._budget(meta.num_added_files + meta.num_deleted_files):
                        return
                    self._submit(self._MANIFEST, self._manifest, meta.file_name, False)
