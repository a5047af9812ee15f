"""The one place snapshots are created: append, overwrite (static / dynamic / whole table) and drop partitions.

Every commit is exactly one snapshot, created with an atomic create-if-absent of ``snapshot/snapshot-N``. On a
lost race the commit is re-planned against the new latest snapshot (overwrites and drops recompute their DELETE
entries) and retried with exponential backoff and jitter. A retried commit is recognised by its
(commitUser, commitIdentifier) pair, which every snapshot carries forward in a bounded log in its properties, so
the check still works after older snapshots are expired.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from operator import attrgetter
from typing import Any

from tableformat.clock import system_clock
from tableformat.codec import json_codec
from tableformat.codec.entry_codec import EntryRecord
from tableformat.commit.carried_metadata import carried_fields
from tableformat.commit.data_writer import NewDataFile
from tableformat.commit.manifest_merge import ManifestMerger, MergePolicy
from tableformat.commit.uncommitted import discard_uncommitted
from tableformat.errors import (
    CommitConflictError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    MissingMetadataError,
    SnapshotNotFoundError,
    TableFormatError,
    ValidationError,
)
from tableformat.layout import NameFactory
from tableformat.live_set import PartitionPredicate, live_entries
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import CommitKind, Snapshot
from tableformat.options import (
    COMMIT_DEDUP_USERS,
    COMMIT_MAX_RETRIES,
    COMMIT_MAX_RETRY_WAIT,
    COMMIT_MIN_RETRY_WAIT,
    FILE_COMPRESSION_ZSTD_LEVEL,
    MANIFEST_FULL_COMPACTION_SIZE,
    MANIFEST_MERGE_MIN_COUNT,
    MANIFEST_TARGET_FILE_SIZE,
    TableOptions,
)
from tableformat.parallel import resolve_parallelism
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)

WRITER_VERSION = "tablefmt-0.1.0"
COMMIT_LOG_PROPERTY = "tablefmt.commit-log"


class ChangeKind(str, Enum):
    APPEND = "append"
    OVERWRITE = "overwrite"
    DROP = "drop"
    REPLACE = "replace"
    """Swap exactly ``replaced_files`` for ``new_files`` in one snapshot (compaction, record-level TTL rewrites)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitRequest:
    """What one commit changes.

    ``overwrite_scope``: for OVERWRITE, None = the whole table, else the partitions to replace (an OR of partial
    specs); ``dynamic`` = the partitions present in ``new_files``. For DROP, the partitions to mark deleted.
    """

    kind: ChangeKind
    new_files: Sequence[NewDataFile] = ()
    overwrite_scope: tuple[Mapping[str, Any], ...] | None = None
    dynamic: bool = False
    commit_user: str = field(default_factory=lambda: str(uuid.uuid4()))
    commit_identifier: int = 2**63 - 1
    expected_files: frozenset[Hashable] | None = None
    """DROP only: the files (ManifestEntry identifiers) the caller planned to delete (by default those of
    ``planned``, if given). At commit time a partition whose live files are not all among them (a file was added
    after planning) is left untouched and reported in ``CommitResult.changed_partitions``; the others lose exactly
    their planned files that are still live."""
    properties: Mapping[str, str] = field(default_factory=dict)
    """Snapshot properties to set (carried forward by later tablefmt commits, like every property)."""
    replaced_files: tuple[ManifestEntry, ...] = ()
    """REPLACE only: the live files the new files replace. The commit happens only if every one of them is still
    live in the latest snapshot (else nothing is committed and ``CommitResult.missing_files`` names them: a
    concurrent commit removed or overwrote them, and the caller re-plans or gives up)."""
    snapshot_kind: CommitKind = CommitKind.OVERWRITE
    """REPLACE only: the snapshot's commit kind (COMPACT for compaction, which changes no row)."""
    replaced_live_in: int | None = None
    """REPLACE only: a snapshot id in which the caller read ``replaced_files`` as live entries. When it is still the
    latest, they are live as given and the commit skips re-reading the manifests."""
    planned: PlannedDrop | None = None
    """DROP only: the drop as the caller planned it. Used as it is when the latest snapshot is still the one it was
    planned against; otherwise the commit re-plans, guarded by ``expected_files`` (by default the planned files)."""


@dataclass(frozen=True, slots=True)
class PlannedDrop:
    """A drop planned against snapshot ``base``: ``records`` are exactly the live files of the dropped partitions in
    ``base``. While ``base`` is the latest snapshot, the guarded drop's re-check would find exactly these files, so
    the commit writes their DELETE copies without reading the manifests again. ``base`` None: always re-checked."""

    base: Snapshot | None
    records: Sequence[EntryRecord]


def read_commit_log(snapshot: Snapshot | None) -> dict[str, int]:
    """The bounded {commitUser: last commitIdentifier} map a snapshot carries."""
    if snapshot is None or not snapshot.properties:
        return {}
    text = snapshot.properties.get(COMMIT_LOG_PROPERTY)
    if not text:
        return {}
    return json_codec.commit_log_from_text(text)


class Committer:
    """Creates snapshots for one table."""

    def __init__(self, store: MetadataStore, schema: TableSchema) -> None:
        self.store = store
        self.schema = schema
        self.options = TableOptions(schema.options)
        self.zstd_level = self.options.require(FILE_COMPRESSION_ZSTD_LEVEL)
        """Paimon writes manifests and manifest lists at the data files' zstd level (its Avro format's codec)."""
        self.codec = store.partition_codec(schema)
        self.partition_types = [f.type for f in schema.partition_fields]
        self._changed: tuple[dict[str, Any], ...] = ()
        self._missing: tuple[ManifestEntry, ...] = ()
        self._used_plan = False
        self._overwritten: frozenset[bytes] = frozenset()

    # --- public ----------------------------------------------------------------------------------------------
    def commit(self, request: CommitRequest) -> CommitResult:
        """Create one snapshot for the request.

        The result holds no snapshot when there is nothing to change (e.g. drop of a missing partition), and the
        existing latest snapshot with ``created=False`` when the same (commitUser, commitIdentifier) was already
        committed. Raises a CommitError (nothing referenced) or CommitStateUnknownError (do not clean up).
        """
        self._validate(request)
        max_retries = self.options.require(COMMIT_MAX_RETRIES)
        min_wait = self.options.require(COMMIT_MIN_RETRY_WAIT)
        max_wait = self.options.require(COMMIT_MAX_RETRY_WAIT)
        for attempt in range(max_retries):
            outcome = self._try_once(request)
            if not isinstance(outcome, _Lost):
                return outcome
            wait_ms = min(min_wait * (2**attempt), max_wait)
            time.sleep((wait_ms + random.uniform(0, 0.2 * wait_ms)) / 1000)
        raise CommitRetriesExhaustedError(
            f"commit gave up after {max_retries} attempts: other writers kept taking the next snapshot id"
        )

    # --- internals -------------------------------------------------------------------------------------------
    def _validate(self, request: CommitRequest) -> None:
        if request.kind == ChangeKind.OVERWRITE and request.overwrite_scope is not None and not request.dynamic:
            predicate = PartitionPredicate(request.overwrite_scope)
            outside = [f for f in request.new_files if not predicate.matches(self.codec.values(f.partition))]
            if outside:
                values = self.codec.values(outside[0].partition)
                raise ValidationError(
                    f"data for partition {values} is outside the overwritten partition(s) "
                    f"{list(request.overwrite_scope)}"
                )
        if request.kind == ChangeKind.DROP and request.new_files:
            raise ValidationError("drop partitions takes no data")
        if (request.kind == ChangeKind.REPLACE) != bool(request.replaced_files):
            raise ValidationError("a replace commit (and only one) names the live files it replaces")

    def _already_committed(self, latest: Snapshot | None, request: CommitRequest) -> bool:
        committed = read_commit_log(latest).get(request.commit_user)
        return committed is not None and committed >= request.commit_identifier

    def _guard_drop(
        self, deletes: list[ManifestEntry], expected: frozenset[Hashable]
    ) -> tuple[list[ManifestEntry], tuple[dict[str, Any], ...]]:
        """Keep the DELETE entries of partitions whose live files were all planned; name the other partitions."""
        by_partition: dict[tuple[Any, ...], list[ManifestEntry]] = {}
        for entry in deletes:
            by_partition.setdefault(tuple(self.codec.values(entry.partition).items()), []).append(entry)
        kept: list[ManifestEntry] = []
        changed: list[dict[str, Any]] = []
        for key, entries in by_partition.items():
            if all(e.identifier() in expected for e in entries):
                kept.extend(entries)
            else:
                changed.append(dict(key))
        return kept, tuple(changed)

    def _delta(self, latest: Snapshot | None, request: CommitRequest) -> list[ManifestEntry]:
        adds = [
            ManifestEntry(
                kind=FileKind.ADD, partition=f.partition, bucket=f.bucket, total_buckets=f.total_buckets, file=f.meta
            )
            for f in request.new_files
        ]
        if request.kind == ChangeKind.APPEND or latest is None:
            return adds
        if request.kind == ChangeKind.REPLACE:
            return self._replace_deletes(latest, request) + adds
        predicate: PartitionPredicate | None
        if request.dynamic:
            specs = {f.partition: self.codec.values(f.partition) for f in request.new_files}
            if not specs:
                return adds
            predicate = PartitionPredicate(tuple(specs.values()))
        elif request.overwrite_scope is None:
            predicate = None
        else:
            predicate = PartitionPredicate(request.overwrite_scope)
        threads = resolve_parallelism(self.options, self.store.io, None)  # inline on local disk: see parallel.py
        deletes = [e.as_kind(FileKind.DELETE) for e in live_entries(self.store, latest, self.codec, predicate, threads)]
        expected = request.expected_files
        if expected is None and request.planned is not None:
            expected = frozenset(r.identifier() for r in request.planned.records)
        if expected is not None:
            deletes, self._changed = self._guard_drop(deletes, expected)
        added = {e.identifier() for e in adds}
        if any(d.identifier() in added for d in deletes):
            raise CommitConflictError("a file to add is already live in the table (the commit was applied before?)")
        return deletes + adds

    def _replace_deletes(self, latest: Snapshot, request: CommitRequest) -> list[ManifestEntry]:
        """DELETE copies of the replaced files as they are live now; none (and ``_missing`` set) if any is gone."""
        if request.replaced_live_in == latest.id:  # nothing was committed since the caller read them
            return [e.as_kind(FileKind.DELETE) for e in request.replaced_files]
        wanted = {e.identifier() for e in request.replaced_files}
        specs = {e.partition: self.codec.values(e.partition) for e in request.replaced_files}
        predicate = PartitionPredicate(tuple(specs.values())) if self.codec.keys else None
        threads = resolve_parallelism(self.options, self.store.io, None)
        live = {e.identifier(): e for e in live_entries(self.store, latest, self.codec, predicate, threads)}
        missing = tuple(e for e in request.replaced_files if e.identifier() not in live)
        if missing:
            self._missing = missing
            return []
        return [live[key].as_kind(FileKind.DELETE) for key in wanted]

    def _planned_records(self, latest: Snapshot | None, request: CommitRequest) -> Sequence[EntryRecord] | None:
        """The planned drop's records when the latest snapshot is still the one it was planned against."""
        planned = request.planned
        if planned is None or planned.base is None or request.kind != ChangeKind.DROP or latest != planned.base:
            return None
        return planned.records

    def _write_delta(
        self, latest: Snapshot | None, request: CommitRequest, names: NameFactory, written: list[str]
    ) -> tuple[ManifestFileMeta, int, int] | None:
        """Write the delta manifest: (its row, added rows, deleted rows); None when there is nothing to change."""
        store = self.store
        copies = self._planned_records(latest, request)
        self._used_plan = copies is not None
        if copies is not None:
            if not copies:
                return None
            self._overwritten = frozenset(record.partition for record in copies)
            meta = store.write_manifest_copies(
                FileKind.DELETE, copies, names, self.schema.id, self.partition_types, written=written,
                level=self.zstd_level,
            )  # fmt: skip
            return meta, 0, sum(map(attrgetter("row_count"), copies))
        delta = self._delta(latest, request)
        if not delta:
            return None
        if request.kind in (ChangeKind.OVERWRITE, ChangeKind.DROP):
            self._overwritten = frozenset(e.partition for e in delta if e.kind == FileKind.DELETE)
        meta = store.write_manifest(
            delta, names, self.schema.id, self.partition_types, written=written, level=self.zstd_level
        )
        added_rows = sum(e.file.row_count for e in delta if e.kind == FileKind.ADD)
        deleted_rows = sum(e.file.row_count for e in delta if e.kind == FileKind.DELETE)
        return meta, added_rows, deleted_rows

    def _try_once(self, request: CommitRequest) -> CommitResult | _Lost:
        try:
            latest = self.store.latest_snapshot()
        except SnapshotNotFoundError:  # the id we found was expired before we read it: no longer the latest
            return _Lost()
        if self._already_committed(latest, request):
            log.info(
                "commit %s/%s is already in snapshot history; not committing again",
                request.commit_user,
                request.commit_identifier,
            )
            return CommitResult(latest, created=False)
        names = NameFactory()
        written: list[str] = []
        self._changed = ()
        self._missing = ()
        self._overwritten = frozenset()
        try:
            delta = self._write_delta(latest, request, names, written)
            if self._missing:
                return CommitResult(None, created=False, missing_files=self._missing)
            if delta is None:
                return CommitResult(None, created=False, changed_partitions=self._changed)
            snapshot = self._write_metadata(latest, request, delta, names, written)
            self.store.make_durable([*written, *(f.path for f in request.new_files)])
        except (MissingMetadataError, SnapshotNotFoundError):
            self._discard(written)
            if latest is not None and not self.store.snapshot_exists(latest.id):
                # Our base was expired while we read its manifests: re-plan against the new latest.
                return _Lost()
            raise
        except BaseException:
            self._discard(written)
            raise
        ambiguous = False
        try:
            try:
                won = self.store.write_snapshot_if_absent(snapshot)
            except OSError as exc:
                ambiguous = True
                resolved = self._resolve_unknown(snapshot, exc)
                if resolved is None:
                    if self.store.io.is_object_store:
                        # A request that failed on the wire may still be applied later: keep every file.
                        raise CommitStateUnknownError(
                            f"snapshot {snapshot.id} write failed ({exc}) and is not visible yet; it may still "
                            "land. Files are kept; re-run the commit with the same commit user and identifier "
                            "to resolve it (unreferenced files are reclaimed by orphan cleanup)"
                        ) from exc
                    raise  # local filesystems fail synchronously: nothing landed
                won = resolved
        except CommitStateUnknownError:
            raise
        except BaseException:
            self._discard(written)
            raise
        if not won:
            if not ambiguous:  # after an ambiguous write, a late-landing snapshot could still need these files
                self._discard(written)
            return _Lost()
        try:
            below = self._created_below_the_frontier(snapshot, request)
        except (TableFormatError, OSError) as exc:  # snapshot-N exists: whether it counts is unknown, keep its files
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} was created, but a newer snapshot could not be read to confirm it ({exc}); "
                "re-run the commit with the same commit user and identifier to resolve it"
            ) from exc
        if below:
            # snapshot-N was free, but newer snapshots exist that do not descend from ours: nothing of this attempt
            # is part of the table.
            self.store.io.delete_files([self.store.layout.snapshot_file(snapshot.id)])
            self._discard(written)
            if self.store.snapshot_exists(snapshot.id - 1):
                # A gap in the ids below newer snapshots and a stale LATEST hint just before it made N look free
                # (hint writes are best effort): correct the hint from the listing and re-plan on the real latest.
                ids = self.store.snapshot_ids()
                if ids:
                    self.store.write_hint("LATEST", ids[-1])
                return _Lost()
            # The id had been taken and expired while this attempt was prepared (ABA).
            raise CommitConflictError(
                f"snapshot id {snapshot.id} had already been used and expired while this commit was prepared "
                "(retention shorter than the commit took); nothing was committed, retry the commit"
            )
        self.store.write_hint("LATEST", snapshot.id)
        return CommitResult(snapshot, created=True, changed_partitions=self._changed, used_plan=self._used_plan)

    def _created_below_the_frontier(self, snapshot: Snapshot, request: CommitRequest) -> bool:
        """True if snapshot-N re-used an id that was committed and expired while this attempt was prepared (ABA).

        Expiration deletes snapshots in ascending order and never the latest, so while our base N-1 exists and no
        snapshot N+1 does, the id was free for the first time (two existence checks, the usual case). Otherwise the
        smallest newer snapshot decides: one that descends from ours carries this commit in its commit log. (N+1
        can exist already when the ids have a gap at N and a stale LATEST hint pointed just before it.)
        """
        if self.store.snapshot_exists(snapshot.id - 1) and not self.store.snapshot_exists(snapshot.id + 1):
            return False
        newer = [i for i in self.store.snapshot_ids() if i > snapshot.id]
        if not newer:
            return False
        successor = self.store.try_read_snapshot(newer[0])
        if successor is None:  # expired meanwhile: judge by the latest instead
            successor = self.store.latest_snapshot()
        return not self._already_committed(successor, request)

    def _resolve_unknown(self, snapshot: Snapshot, exc: OSError) -> bool | None:
        """After a failed snapshot write, read it back: ours = won (True), another writer's = lost (False),
        absent = the write did not happen (None: the caller re-raises the original error)."""
        try:
            stored = self.store.io.read_bytes(self.store.layout.snapshot_file(snapshot.id))
        except FileNotFoundError:
            return None
        except OSError as read_exc:
            raise CommitStateUnknownError(
                f"snapshot {snapshot.id} write failed ({exc}) and could not be read back ({read_exc}); "
                "re-run the commit with the same commit user and identifier to resolve it"
            ) from read_exc
        return stored == self.store.snapshot_bytes(snapshot)

    def _write_metadata(
        self,
        latest: Snapshot | None,
        request: CommitRequest,
        delta: tuple[ManifestFileMeta, int, int],
        names: NameFactory,
        written: list[str],
    ) -> Snapshot:
        store = self.store
        delta_meta, added_rows, deleted_rows = delta
        base_manifests: list[ManifestFileMeta] = store.manifests_of(latest) if latest is not None else []
        merger = ManifestMerger(
            store,
            names,
            self.schema.id,
            self.partition_types,
            self.codec,
            MergePolicy(
                target_size=self.options.require(MANIFEST_TARGET_FILE_SIZE),
                merge_min_count=self.options.require(MANIFEST_MERGE_MIN_COUNT),
                full_compaction_size=self.options.require(MANIFEST_FULL_COMPACTION_SIZE),
                zstd_level=self.zstd_level,
            ),
        )
        try:
            base = merger.merge(base_manifests)
        finally:
            written.extend(merger.written)
        base_list = store.write_manifest_list(base, names, written=written, level=self.zstd_level)
        delta_list = store.write_manifest_list([delta_meta], names, written=written, level=self.zstd_level)

        previous_total = latest.total_record_count if latest is not None else 0
        commit_log = read_commit_log(latest)
        commit_log.pop(request.commit_user, None)
        commit_log[request.commit_user] = request.commit_identifier
        retained = self.options.require(COMMIT_DEDUP_USERS)
        commit_log = dict(list(commit_log.items())[-retained:])
        properties = dict(latest.properties or {}) if latest is not None else {}
        properties.update(request.properties)
        properties[COMMIT_LOG_PROPERTY] = json_codec.commit_log_to_text(commit_log)
        kind = CommitKind.APPEND if request.kind == ChangeKind.APPEND else CommitKind.OVERWRITE
        if request.kind == ChangeKind.REPLACE:
            kind = request.snapshot_kind
        return Snapshot(
            id=(latest.id + 1) if latest is not None else 1,
            schema_id=self.schema.id,
            base_manifest_list=base_list.name,
            delta_manifest_list=delta_list.name,
            base_manifest_list_size=base_list.size,
            delta_manifest_list_size=delta_list.size,
            total_record_count=None if previous_total is None else previous_total + added_rows - deleted_rows,
            delta_record_count=added_rows - deleted_rows,
            commit_user=request.commit_user,
            commit_identifier=request.commit_identifier,
            commit_kind=kind,
            time_millis=system_clock(),
            properties=properties,
            uuid=str(uuid.uuid4()),
            writer_version=WRITER_VERSION,
            **carried_fields(store, latest, self.schema.id, self._overwritten, names, written, level=self.zstd_level),
        )

    def _discard(self, paths: list[str]) -> None:
        """Remove metadata files of an attempt that did not create a snapshot (nothing references them)."""
        discard_uncommitted(self.store.io, paths, "metadata file(s) of a failed commit attempt")


class _Lost:
    """Marker: another writer created the snapshot id this attempt wanted."""


@dataclass(frozen=True, slots=True)
class CommitResult:
    """The snapshot a commit created, or the existing one that already holds it (``created`` false)."""

    snapshot: Snapshot | None
    created: bool
    changed_partitions: tuple[dict[str, Any], ...] = ()
    """A guarded drop (``expected_files``): partitions left untouched because files were added after planning."""
    missing_files: tuple[ManifestEntry, ...] = ()
    """A replace: the replaced files that were no longer live, so nothing was committed."""
    used_plan: bool = False
    """The snapshot holds the request's PlannedDrop as it was (its base was still the latest snapshot)."""
