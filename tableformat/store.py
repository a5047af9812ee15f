"""Read and write a table's metadata files through its FileIO (schemas, snapshots, hints, manifests, tags; index
manifests, index files and statistics in its mixin :class:`tableformat.index_store.IndexFileStore`): the only module
that turns metadata paths into bytes and bytes into models (through the codecs)."""

from __future__ import annotations

import copy
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, TypeVar

from tableformat.audit_store import AuditStore
from tableformat.changelog_store import ChangelogStore
from tableformat.codec import avro_codec, avro_projection, entry_codec, journal_codec, json_codec, maintain_codec
from tableformat.codec.binary_row import decode_row, encode_row
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.erasure_store import ErasureStore
from tableformat.errors import (
    CorruptMetadataError,
    MissingMetadataError,
    SnapshotNotFoundError,
    StorageError,
    TableNotFoundError,
)
from tableformat.index_store import IndexFileStore
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.layout import (
    BRANCH_DIR,
    BRANCH_PREFIX,
    CLAIM_PREFIX,
    CONSUMER_PREFIX,
    EARLIEST,
    EXPIRE_JOURNAL_PREFIX,
    LATEST,
    LEASE_PREFIX,
    MANIFEST_LIST_PREFIX,
    MANIFEST_PREFIX,
    SCHEMA_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    NameFactory,
    TableLayout,
    parse_id,
)
from tableformat.model.maintain import CLAIM_KINDS, Claim, Lease, MaintainState
from tableformat.model.manifest import EMPTY_STATS, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Consumer, Snapshot, Tag
from tableformat.model.types import DataType
from tableformat.threads import thread_pool
from tableformat.undo_store import UndoStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A metadata file this process wrote (name inside its directory, full path, size)."""

    name: str
    path: str
    size: int


_T = TypeVar("_T")


class MetadataStore(IndexFileStore, ChangelogStore, AuditStore, UndoStore, ErasureStore):
    """Metadata access for one table (one FileIO, one root)."""

    def __init__(self, file_io: FileIO, layout: TableLayout) -> None:
        self.io = file_io
        self.layout = layout
        self._codecs: dict[int, PartitionCodec] = {}
        self._last_manifests: tuple[tuple[str, str], tuple[ManifestFileMeta, ...]] | None = None

    def through(self, file_io: FileIO) -> MetadataStore:
        """This store, its caches included, through another FileIO (e.g. a guarded one)."""
        other = copy.copy(self)
        other.io = file_io
        return other

    def partition_codec(self, schema: TableSchema) -> PartitionCodec:
        """The partition codec of ``schema``, one per schema id: plans, commits and manifest statistics of one
        context decode each partition row once."""
        codec = self._codecs.get(schema.id)
        if codec is None or codec.keys != schema.partition_keys:
            codec = self._codecs[schema.id] = PartitionCodec(schema)
        return codec

    # --- generic ---------------------------------------------------------------------------------------------
    def _read(self, path: str) -> bytes:
        try:
            return self.io.read_bytes(path)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot read {self.io.url(path)}: {exc}") from exc

    def _read_manifest_file(self, name: str, what: str) -> tuple[bytes, str]:
        """The bytes and URL of ``manifest/<name>`` (a manifest or a manifest list: ``what``); MissingMetadataError
        naming it when it does not exist."""
        path = self.layout.manifest_file(name)
        try:
            return self._read(path), self.io.url(path)
        except FileNotFoundError:
            raise MissingMetadataError(self.io.url(path), f"{what} is missing") from None

    # --- schemas ---------------------------------------------------------------------------------------------
    def schema_ids(self) -> list[int]:
        ids = [parse_id(name, SCHEMA_PREFIX) for name in self.io.list_names(self.layout.schema_dir)]
        return sorted(i for i in ids if i is not None)

    def read_schema(self, schema_id: int) -> TableSchema:
        path = self.layout.schema_file(schema_id)
        try:
            data = self._read(path)
        except FileNotFoundError:
            raise CorruptMetadataError(self.io.url(path), "schema file is missing") from None
        return json_codec.schema_from_json(data, self.io.url(path))

    def latest_schema(self) -> TableSchema:
        ids = self.schema_ids()
        if not ids:
            raise TableNotFoundError(f"no table at {self.io.url(self.layout.root)} (no schema/schema-0)")
        return self.read_schema(ids[-1])

    def write_schema_if_absent(self, schema: TableSchema) -> bool:
        return self.io.write_if_absent(self.layout.schema_file(schema.id), json_codec.schema_to_json(schema))

    # --- snapshots and hints ---------------------------------------------------------------------------------
    def snapshot_ids(self) -> list[int]:
        """Ids of every snapshot file present (the listing is the truth; hints are only hints)."""
        ids = [parse_id(name, SNAPSHOT_PREFIX) for name in self.io.list_names(self.layout.snapshot_dir)]
        return sorted(i for i in ids if i is not None)

    def snapshot_versions(self) -> list[tuple[int, str]]:
        """(id, listing version) of every snapshot file present, by id: ``FileInfo.version`` says which content each
        has where the listing tells (see tag_infos); no stat per file."""
        listed = self.io.list_dir_without_file_stats(self.layout.snapshot_dir)
        ids = ((parse_id(info.name, SNAPSHOT_PREFIX), info.version) for info in listed if not info.is_dir)
        return sorted((i, version) for i, version in ids if i is not None)

    def snapshot_exists(self, snapshot_id: int) -> bool:
        """Whether ``snapshot-N`` exists: one HEAD on object stores."""
        return self.io.file_exists(self.layout.snapshot_file(snapshot_id))

    def read_snapshot(self, snapshot_id: int) -> Snapshot:
        """The snapshot; SnapshotNotFoundError if its file does not exist."""
        path = self.layout.snapshot_file(snapshot_id)
        try:
            data = self._read(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"snapshot {snapshot_id} does not exist (it may have been expired)") from None
        snapshot = json_codec.snapshot_from_json(data, self.io.url(path))
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(self.io.url(path), f"file holds snapshot id {snapshot.id}")
        return snapshot

    def read_snapshot_sized(self, snapshot_id: int) -> tuple[Snapshot, int] | None:
        """The snapshot and the size of its file, or None when ``snapshot-N`` does not exist."""
        path = self.layout.snapshot_file(snapshot_id)
        try:
            data = self._read(path)
        except FileNotFoundError:
            return None
        snapshot = json_codec.snapshot_from_json(data, self.io.url(path))
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(self.io.url(path), f"file holds snapshot id {snapshot.id}")
        return snapshot, len(data)

    def try_read_snapshot(self, snapshot_id: int) -> Snapshot | None:
        try:
            return self.read_snapshot(snapshot_id)
        except SnapshotNotFoundError:
            return None

    def read_hint(self, which: str) -> int | None:
        """The LATEST or EARLIEST hint as written (None when missing or unreadable: hints are only hints)."""
        try:
            return json_codec.hint_from_bytes(self.io.read_bytes(self.layout.hint_file(which)))
        except OSError:
            return None

    def latest_snapshot_id(self) -> int | None:
        """LATEST if snapshot-LATEST exists and snapshot-(LATEST+1) does not; otherwise the listing's max."""
        hint = self.read_hint(LATEST)
        if hint is not None and not self.snapshot_exists(hint + 1) and self.snapshot_exists(hint):
            return hint
        ids = self.snapshot_ids()
        return ids[-1] if ids else None

    def earliest_snapshot_id(self) -> int | None:
        """EARLIEST if that snapshot exists and the one before it does not; otherwise the listing's min."""
        return self.earliest_from_hint(self.read_hint(EARLIEST))

    def earliest_from_hint(self, hint: int | None) -> int | None:
        """``earliest_snapshot_id`` for an EARLIEST hint the caller has read already (None: missing)."""
        if hint is not None and self.snapshot_exists(hint) and not self.snapshot_exists(hint - 1):
            return hint
        ids = self.snapshot_ids()
        return ids[0] if ids else None

    def latest_snapshot(self) -> Snapshot | None:
        """The snapshot ``latest_snapshot_id`` names, reading it once: with a LATEST hint whose successor does not
        exist, the read of ``snapshot-LATEST`` itself says whether it exists (3 requests on object stores: the
        hint, a HEAD of the successor, the snapshot); otherwise the listing's max."""
        hint = self.read_hint(LATEST)
        if hint is not None and not self.snapshot_exists(hint + 1):
            found = self.try_read_snapshot(hint)
            if found is not None:
                return found
        ids = self.snapshot_ids()
        return None if not ids else self.read_snapshot(ids[-1])

    def make_durable(self, paths: Sequence[str]) -> None:
        """Make the files at ``paths`` survive a power loss (FileIO.sync), with the directories that name them: each
        file's directory and the ones above it, up to the table's root (a commit may have created a partition's
        directories). A commit calls it before its snapshot names the files."""
        root = self.layout.root.rstrip("/")
        directories: dict[str, None] = {}
        for path in paths:
            directory = path.rpartition("/")[0]
            while directory and directory not in directories:
                directories[directory] = None
                if root == directory or root.startswith(directory + "/"):
                    break  # the root, or above it (a branch's files live in the main table's directories)
                directory = directory.rpartition("/")[0]
        self.io.sync(paths, list(directories))

    def write_snapshot_if_absent(self, snapshot: Snapshot) -> bool:
        return self.io.write_if_absent(self.layout.snapshot_file(snapshot.id), json_codec.snapshot_to_json(snapshot))

    def snapshot_bytes(self, snapshot: Snapshot) -> bytes:
        return json_codec.snapshot_to_json(snapshot)

    def delete_snapshot(self, snapshot_id: int) -> bool:
        """Delete ``snapshot/snapshot-N`` (a rollback's newer snapshots); False if it was not there."""
        return bool(self.io.delete_files([self.layout.snapshot_file(snapshot_id)]))

    def write_hint(self, which: str, snapshot_id: int) -> None:
        """Best effort: a failed hint write is logged, never raised (hints are only hints)."""
        try:
            self.io.write_bytes(self.layout.hint_file(which), json_codec.hint_to_bytes(snapshot_id))
        except OSError as exc:
            log.warning("could not write %s hint %d: %s", which, snapshot_id, exc)

    # --- manifests -------------------------------------------------------------------------------------------
    def read_manifest_list(self, name: str) -> list[ManifestFileMeta]:
        data, url = self._read_manifest_file(name, "manifest list")
        return avro_codec.read_manifest_list(data, url)

    def read_manifest(self, name: str) -> list[ManifestEntry]:
        data, url = self._read_manifest_file(name, "manifest file")
        return entry_codec.read_entries(data, url)

    def read_manifest_records(self, name: str) -> list[entry_codec.EntryRecord]:
        """``read_manifest(name)`` reduced to entry_codec.EntryRecord (identity, counts, creation time and the encoded
        entry, which ``write_manifest_copies`` writes again without re-encoding)."""
        data, url = self._read_manifest_file(name, "manifest file")
        return entry_codec.read_entry_records(data, url)

    def read_manifest_list_fast(
        self, name: str, reader: avro_projection.ManifestListReader | None = None
    ) -> list[ManifestFileMeta]:
        """Exactly ``read_manifest_list(name)``, decoded faster (avro_projection.read_manifest_list_fast); pass one
        ``reader`` for the many lists of one job to share work between them (avro_projection.ManifestListReader)."""
        data, url = self._read_manifest_file(name, "manifest list")
        if reader is not None:
            return reader.read(data, url)
        return avro_projection.read_manifest_list_fast(data, url)

    def read_manifest_refs(self, name: str) -> list[avro_projection.EntryRef]:
        """``read_manifest(name)`` projected to what names and identifies each file (avro_projection.EntryRef)."""
        data, url = self._read_manifest_file(name, "manifest file")
        return avro_projection.read_manifest_refs(data, url)

    def read_manifest_scan_refs(self, name: str) -> list[avro_projection.ScanRef]:
        """``read_manifest(name)`` projected to what a read of each file needs (avro_projection.ScanRef): no
        statistics decoded, no full entries built."""
        data, url = self._read_manifest_file(name, "manifest file")
        return avro_projection.read_manifest_scan_refs(data, url)

    def manifests_of(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        """Base then delta manifests of a snapshot, in order.

        The lists of the snapshot asked for last are kept: a plan and the commit after it (both on the latest
        snapshot) read them once. Manifest lists never change once written, and those of the latest snapshot are
        never deleted while it is the latest. Where each read waits on a network (S3) the two lists are read at
        once: a commit or a scan waits for one round trip instead of two."""
        key = (snapshot.base_manifest_list, snapshot.delta_manifest_list)
        last = self._last_manifests
        if last is not None and last[0] == key:
            return list(last[1])
        metas = self._read_lists(*key)
        self._last_manifests = (key, tuple(metas))
        return metas

    def _read_lists(self, base: str, delta: str) -> list[ManifestFileMeta]:
        if not self.io.latency_bound or base == delta:
            return self.read_manifest_list_fast(base) + self.read_manifest_list_fast(delta)
        with thread_pool(1, "tablefmt-lists") as pool:
            later = pool.submit(self.read_manifest_list_fast, delta)
            first = self.read_manifest_list_fast(base)  # should it raise, leaving the block waits for ``later``
            return first + later.result()

    def write_manifest(
        self,
        entries: Sequence[ManifestEntry],
        names: NameFactory,
        schema_id: int,
        partition_types: Sequence[DataType],
        *,
        written: list[str] | None = None,
        level: int | None = None,
    ) -> ManifestFileMeta:
        """Write one manifest file and return its manifest-list row (with partition statistics).

        ``written`` gets the path before the write, so a write whose acknowledgement is lost is still cleaned up.
        ``level`` is the zstd level (Paimon writes manifests at ``file.compression.zstd-level``; None: fastavro's).
        """
        added = sum(1 for e in entries if e.kind == FileKind.ADD)
        return self._write_manifest(
            entry_codec.write_entries(entries, level=level),
            (added, len(entries) - added),
            [e.partition for e in entries],
            ({e.bucket for e in entries}, {e.file.level for e in entries}),
            names,
            (schema_id, partition_types),
            written,
        )

    def write_manifest_copies(
        self,
        kind: FileKind,
        records: Sequence[entry_codec.EntryRecord],
        names: NameFactory,
        schema_id: int,
        partition_types: Sequence[DataType],
        *,
        written: list[str] | None = None,
        level: int | None = None,
    ) -> ManifestFileMeta:
        """``write_manifest`` of the records' full entries as entries of ``kind`` (the same bytes), written from
        their encoded bodies (entry_codec.write_copies)."""
        count = len(records)
        return self._write_manifest(
            entry_codec.write_copies(kind, records, level=level),
            (count, 0) if kind == FileKind.ADD else (0, count),
            list(map(attrgetter("partition"), records)),
            (set(map(attrgetter("bucket"), records)), set(map(attrgetter("level"), records))),
            names,
            (schema_id, partition_types),
            written,
        )

    def _write_manifest(
        self,
        data: bytes,
        counts: tuple[int, int],
        partitions: list[bytes],
        buckets_levels: tuple[set[int], set[int]],
        names: NameFactory,
        schema: tuple[int, Sequence[DataType]],
        written: list[str] | None,
    ) -> ManifestFileMeta:
        """Write manifest bytes: ``counts`` of ADD and DELETE entries, their partitions, buckets and levels."""
        name = names.next(MANIFEST_PREFIX)
        path = self.layout.manifest_file(name)
        if written is not None:
            written.append(path)
        self.io.write_bytes(path, data)
        buckets, levels = buckets_levels
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=counts[0],
            num_deleted_files=counts[1],
            partition_stats=partition_stats(partitions, schema[1], source=self.io.url(path), rows=self._rows(schema)),
            schema_id=schema[0],
            min_bucket=min(buckets) if buckets else None,
            max_bucket=max(buckets) if buckets else None,
            min_level=min(levels) if levels else None,
            max_level=max(levels) if levels else None,
        )

    def _rows(self, schema: tuple[int, Sequence[DataType]]) -> Callable[..., Sequence[object]] | None:
        """The cached decoder of partition rows of this schema id and these types, if a codec exists."""
        codec = self._codecs.get(schema[0])
        return codec.row if codec is not None and codec.types == list(schema[1]) else None

    def write_manifest_list(
        self,
        metas: Sequence[ManifestFileMeta],
        names: NameFactory,
        *,
        written: list[str] | None = None,
        level: int | None = None,
    ) -> WrittenFile:
        name = names.next(MANIFEST_LIST_PREFIX)
        data = entry_codec.write_manifest_list(metas, level=level)
        path = self.layout.manifest_file(name)
        if written is not None:
            written.append(path)
        self.io.write_bytes(path, data)
        return WrittenFile(name, path, len(data))

    # --- tags and consumers ----------------------------------------------------------------------------------
    def tag_names(self) -> list[str]:
        names = [n[len(TAG_PREFIX) :] for n in self.io.list_names(self.layout.tag_dir) if n.startswith(TAG_PREFIX)]
        return sorted(n for n in names if n)  # temp files of atomic writes start with '.', not with the prefix

    def tag_infos(self) -> list[FileInfo]:
        """The tag files as listed, by name (``FileInfo.version`` says which content each has where the store
        tells, so a caller that read a tag already can tell whether it changed; no stat per file)."""
        infos = [
            info
            for info in self.io.list_dir_without_file_stats(self.layout.tag_dir)
            if not info.is_dir and info.name.startswith(TAG_PREFIX) and len(info.name) > len(TAG_PREFIX)
        ]
        return sorted(infos, key=lambda info: info.name)

    def read_tag(self, name: str) -> Tag:
        path = self.layout.tag_file(name)
        try:
            data = self._read(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(f"tag {name!r} does not exist") from None
        return json_codec.tag_from_json(name, data, self.io.url(path))

    def tags(self) -> list[Tag]:
        """Every tag; an unreadable tag raises (callers that protect files must never skip one)."""
        return [self.read_tag(name) for name in self.tag_names()]

    def write_tag_if_absent(self, tag: Tag) -> bool:
        return self.io.write_if_absent(self.layout.tag_file(tag.name), json_codec.tag_to_json(tag))

    def replace_tag(self, tag: Tag) -> None:  # erase --include-tags: the same snapshot over rewritten files
        self.io.write_bytes(self.layout.tag_file(tag.name), json_codec.tag_to_json(tag))

    def delete_tag(self, name: str) -> bool:
        return bool(self.io.delete_files([self.layout.tag_file(name)]))

    # --- expiration journals ----------------------------------------------------------------------------------
    def expire_journals(self) -> list[str]:
        """Paths of pending expiration journals (temp files of an interrupted write are not journals). Names only,
        by prefix: no stat per snapshot file on local disk, one request on object stores whatever the history."""
        names = self.io.list_names_with_prefix(self.layout.snapshot_dir, EXPIRE_JOURNAL_PREFIX)
        return sorted(f"{self.layout.snapshot_dir}/{n}" for n in names if not n.endswith(".tmp"))

    def write_expire_journal(self, plan_id: str, document: Mapping[str, Any]) -> str:
        """Write the journal of plan ``plan_id`` (atomically, FileIO.write_bytes); returns its path."""
        path = self.layout.expire_journal_file(plan_id)
        self.io.mkdirs(self.layout.snapshot_dir)
        self.io.write_bytes(path, journal_codec.encode_journal(document))
        self.make_durable([path])  # before the first deletion it describes
        return path

    def read_expire_journal(self, path: str) -> dict[str, Any] | None:
        """The journal document at ``path``; None when it is gone. StorageError when it cannot be read, ValueError
        (or UnicodeDecodeError) when it is not a journal this code reads."""
        try:
            data = self._read(path)
        except FileNotFoundError:
            return None
        return journal_codec.decode_journal(data)

    def delete_expire_journal(self, path: str) -> None:
        """Remove a journal this run wrote or listed (known to exist: no existence check first)."""
        self.io.delete_listed([path])

    # --- the maintainer's lease and state (tablefmt maintain) --------------------------------------------------
    def lease_generations(self) -> list[int]:
        """Generations of the lease files present, ascending (temp files of an interrupted create are not leases)."""
        ids = (parse_id(name, LEASE_PREFIX) for name in self.io.list_names(self.layout.maintain_dir))
        return sorted(i for i in ids if i is not None)

    def read_lease(self, generation: int) -> Lease | None:
        """Lease ``generation``; None when it is gone. CorruptMetadataError when it is not a lease."""
        return self._read_if_present(self.layout.lease_file(generation), maintain_codec.lease_from_json)

    def lease_exists(self, generation: int) -> bool:  # a lease is a file: one HEAD on object stores
        return self.io.file_exists(self.layout.lease_file(generation))

    def create_lease(self, lease: Lease) -> bool:
        """Create the lease file of ``lease.generation`` if absent (atomically); False when another got there first."""
        self.io.mkdirs(self.layout.maintain_dir)
        return self.io.write_if_absent(self.layout.lease_file(lease.generation), maintain_codec.lease_to_json(lease))

    def delete_leases(self, generations: Iterable[int]) -> None:  # listed or created by the caller: no HEAD first
        paths = [self.layout.lease_file(g) for g in generations]
        if paths:
            self.io.delete_listed(paths)

    def claim_names(self) -> list[tuple[str, str]]:
        """(kind, owner) of every claim file present (tableformat/claims.py), in name order."""
        names = sorted(n for n in self.io.list_names(self.layout.maintain_dir) if n.startswith(CLAIM_PREFIX))
        split = (name[len(CLAIM_PREFIX) :].partition("-") for name in names)
        return [(kind, owner) for kind, _, owner in split if kind in CLAIM_KINDS and owner]

    def read_claim(self, kind: str, owner: str) -> Claim | None:
        """A claim; None when it is gone. CorruptMetadataError when it is not a claim."""
        return self._read_if_present(self.layout.claim_file(kind, owner), maintain_codec.claim_from_json)

    def write_claim(self, claim: Claim) -> None:  # also a renewal: only its owner writes a claim
        self.io.mkdirs(self.layout.maintain_dir)
        self.io.write_bytes(self.layout.claim_file(claim.kind, claim.owner), maintain_codec.claim_to_json(claim))

    def delete_claims(self, names: Iterable[tuple[str, str]]) -> None:  # listed or written by this run: they exist
        self.io.delete_listed([self.layout.claim_file(kind, owner) for kind, owner in names])

    def read_maintain_state(self) -> MaintainState | None:
        """The maintainer's state; None when there is none yet. CorruptMetadataError when unreadable as one."""
        return self._read_if_present(self.layout.maintain_state_file, maintain_codec.state_from_json)

    def _read_if_present(self, path: str, decode: Callable[[bytes, str], _T]) -> _T | None:
        """``decode(bytes, url)`` of the file at ``path``; None when it does not exist, StorageError when it cannot
        be read."""
        try:
            data = self._read(path)
        except FileNotFoundError:
            return None
        return decode(data, self.io.url(path))

    def write_maintain_state(self, state: MaintainState) -> None:
        self.io.mkdirs(self.layout.maintain_dir)
        self.io.write_bytes(self.layout.maintain_state_file, maintain_codec.state_to_json(state))

    # --- branches --------------------------------------------------------------------------------------------
    def branch_names(self) -> list[str]:
        """Every branch (a ``branch/branch-<name>`` directory), by name."""
        names = [
            info.name[len(BRANCH_PREFIX) :]
            for info in self.io.list_dir(self.layout.join(BRANCH_DIR))
            if info.is_dir and info.name.startswith(BRANCH_PREFIX)
        ]
        return sorted(n for n in names if n)

    def branch_store(self, name: str) -> MetadataStore:
        """The metadata of branch ``name`` (its manifests and data files are the main table's directories)."""
        return MetadataStore(self.io, self.layout.branch(name))

    def branches_holding(self, snapshot: Snapshot) -> list[str]:
        """Branches that hold ``snapshot`` as one of their own snapshots or tags: those created from it (Paimon copies
        the snapshot, and the tag it was created from, into the branch). Unreadable branch metadata raises."""
        holding = []
        for name in self.branch_names():
            branch = self.branch_store(name)
            own = branch.try_read_snapshot(snapshot.id)
            if (own is not None and own.same_state(snapshot)) or any(
                tag.snapshot.same_state(snapshot) for tag in branch.tags()
            ):
                holding.append(name)
        return holding

    def consumers(self) -> list[Consumer]:
        result = []
        for info in self.io.list_dir(self.layout.consumer_dir):
            if not info.name.startswith(CONSUMER_PREFIX) or info.is_dir:  # temp files start with '.'
                continue
            consumer_id = info.name[len(CONSUMER_PREFIX) :]
            try:
                data = self._read(info.path)
            except FileNotFoundError:
                continue
            result.append(json_codec.consumer_from_json(consumer_id, data, self.io.url(info.path), info.mtime_ms))
        return result

    def write_consumer(self, consumer: Consumer) -> None:
        self.io.write_bytes(self.layout.consumer_file(consumer.consumer_id), json_codec.consumer_to_json(consumer))


def partition_stats(
    partitions: Iterable[bytes],
    types: Sequence[DataType],
    *,
    source: str,
    rows: Callable[..., Sequence[object]] | None = None,
) -> SimpleStats:
    """Min/max binary rows and per-entry null counts over partition rows (manifest pruning statistics); ``rows``
    decodes a row as ``decode_row`` does (a codec's cached ``row``)."""
    if not types:
        return EMPTY_STATS
    counts = Counter(partitions)  # counted in C
    if not counts:
        return SimpleStats(null_counts=tuple(0 for _ in types))
    decode = rows or (lambda p, source: decode_row(p, types, source=source))
    decoded = [(decode(p, source=source), n) for p, n in counts.items()]
    mins: list[object] = []
    maxs: list[object] = []
    nulls: list[int | None] = []
    for index in range(len(types)):
        values = [row[index] for row, _ in decoded if row[index] is not None]
        mins.append(min(values) if values else None)  # type: ignore[type-var]
        maxs.append(max(values) if values else None)  # type: ignore[type-var]
        nulls.append(sum(n for row, n in decoded if row[index] is None))
    return SimpleStats(min_values=encode_row(mins, types), max_values=encode_row(maxs, types), null_counts=tuple(nulls))
