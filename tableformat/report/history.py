"""Storage over time from the snapshot history, reading each manifest once.

The earliest retained snapshot's manifests are read in full (projected: names, sizes, identities); every later
snapshot only through its delta manifests, applied to the running live set. A file is in the live set of snapshot N
after its ADD and before its DELETE; it is held by an older snapshot or tag when any retained snapshot up to N or a
tag references it. Row counts are the snapshots' own ``totalRecordCount`` (no data file is read).

:class:`CachingStore` keeps the projected reads, so the keep-up count that follows (which reads the same delta
manifests) reads nothing twice.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

from tableformat.codec.avro_projection import EntryRef
from tableformat.errors import CorruptMetadataError
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.parallel import bounded_map, executor
from tableformat.store import MetadataStore

from .model import StorageHistory, StoragePoint


class CachingStore(MetadataStore):
    """A metadata store that reads each manifest list and manifest (projected) once: they never change."""

    def __init__(self, file_io: FileIO, layout: TableLayout) -> None:
        super().__init__(file_io, layout)
        self._lists: dict[str, list[ManifestFileMeta]] = {}
        self._refs: dict[str, list[EntryRef]] = {}
        self.manifests_read = 0

    def read_manifest_list_fast(self, name: str, reader: object | None = None) -> list[ManifestFileMeta]:
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = super().read_manifest_list_fast(name)
        return found

    def read_manifest_refs(self, name: str) -> list[EntryRef]:
        found = self._refs.get(name)
        if found is None:
            found = self._refs[name] = super().read_manifest_refs(name)
            self.manifests_read += 1
        return found


@dataclass(slots=True)
class _Running:
    """The live set and every file held so far, with sizes."""

    live: dict[Hashable, int] = field(default_factory=dict)
    held: dict[Hashable, int] = field(default_factory=dict)
    live_bytes: int = 0
    held_bytes: int = 0

    def add(self, ref: EntryRef) -> int:
        key = ref.identifier()
        if key in self.live:
            return 0
        self.live[key] = ref.file_size
        self.live_bytes += ref.file_size
        self.hold(key, ref.file_size)
        return ref.file_size

    def hold(self, key: Hashable, size: int) -> None:
        if key not in self.held:
            self.held[key] = size
            self.held_bytes += size

    def remove(self, ref: EntryRef) -> int:
        size = self.live.pop(ref.identifier(), None)
        if size is None:
            return 0
        self.live_bytes -= size
        return size


def _entries(store: MetadataStore, list_name: str) -> list[EntryRef]:
    metas = store.read_manifest_list_fast(list_name)
    return [ref for meta in metas for ref in store.read_manifest_refs(meta.file_name)]


def _snapshots(store: MetadataStore, workers: int) -> Iterator[Snapshot]:
    ids = store.snapshot_ids()
    with executor(workers, "tablefmt-report") as pool:
        for _, snapshot in bounded_map(pool, store.try_read_snapshot, ids, max(4, 2 * workers)):
            if snapshot is not None:
                yield snapshot


def _delta_of(store: MetadataStore, snapshot: Snapshot) -> tuple[Snapshot, list[EntryRef]]:
    return snapshot, _entries(store, snapshot.delta_manifest_list)


def _apply(running: _Running, refs: list[EntryRef]) -> tuple[int, int]:
    added = removed = 0
    for ref in refs:
        if ref.kind == FileKind.ADD:
            added += running.add(ref)
        else:
            removed += running.remove(ref)
    return added, removed


def _tag_files(store: MetadataStore, running: _Running, earliest: int, notes: list[str]) -> int:
    """Hold the files of tags whose snapshot is older than the earliest retained one; their bytes."""
    before = running.held_bytes
    for tag in store.tags():
        if tag.snapshot.id >= earliest:
            continue  # its snapshot is in the chain read below
        try:
            refs = _entries(store, tag.snapshot.base_manifest_list) + _entries(store, tag.snapshot.delta_manifest_list)
        except CorruptMetadataError as exc:
            notes.append(f"tag {tag.name} not counted: {exc}")
            continue
        live = _Running()
        _apply(live, refs)
        for key, size in live.live.items():
            running.hold(key, size)
    return running.held_bytes - before


def storage_history(store: CachingStore, workers: int = 1) -> StorageHistory:
    """One point per retained snapshot of the main branch, oldest first (see the module doc)."""
    notes = [
        "bytes are data files only (manifests, manifest lists and snapshot files are not counted)",
        "held by older snapshots/tags: as if nothing was expired since the earliest retained snapshot "
        "(the history before it is gone)",
    ]
    if store.branch_names():
        notes.append("branches are not counted (their snapshots may hold more files)")
    running = _Running()
    points: list[StoragePoint] = []
    previous: int | None = None
    tag_only = snapshots_read = 0
    earliest: int | None = None
    with executor(workers, "tablefmt-report") as pool:
        deltas = bounded_map(pool, lambda s: _delta_of(store, s), _snapshots(store, workers), max(4, 2 * workers))
        for snapshot, delta in (pair for _, pair in deltas):
            snapshots_read += 1
            if previous is None or snapshot.id != previous + 1:  # the first, or after a gap: read it whole
                if earliest is None:
                    earliest = snapshot.id
                    tag_only = _tag_files(store, running, snapshot.id, notes)
                else:
                    notes.append(f"snapshot {previous + 1 if previous is not None else '?'} is missing: re-read "
                                 f"snapshot {snapshot.id} whole")
                base = _entries(store, snapshot.base_manifest_list)
                running.live.clear()
                running.live_bytes = 0
                _apply(running, base)
            added, removed = _apply(running, delta)
            previous = snapshot.id
            points.append(
                StoragePoint(
                    snapshot_id=snapshot.id,
                    time_ms=snapshot.time_millis,
                    commit_kind=snapshot.commit_kind.value,
                    live_bytes=running.live_bytes,
                    live_files=len(running.live),
                    live_rows=snapshot.total_record_count,
                    older_only_bytes=running.held_bytes - running.live_bytes,
                    added_bytes=added,
                    removed_bytes=removed,
                )
            )
    if any(p.live_rows is None for p in points):
        notes.append("rows unknown for snapshots whose writer did not record totalRecordCount")
    return StorageHistory(
        points=tuple(points),
        earliest_snapshot=earliest,
        tag_only_bytes=tag_only,
        manifests_read=store.manifests_read,
        snapshots_read=snapshots_read,
        notes=tuple(notes),
    )
