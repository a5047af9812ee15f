"""Deletion vectors, hash indexes and statistics attached to a real table, in Paimon's on-disk formats.

``PaimonIndex(table)`` writes, through the table's MetadataStore:

* deletion-vector index files (``index/index-<uuid>-<n>``: ``DeletionVectorsIndexFile`` / ``DeletionFileWriter``,
  32-bit ``BitmapDeletionVector`` or 64-bit ``Bitmap64DeletionVector``), one per partition and bucket of the data
  files given, each replacing the one that bucket had (Paimon's ``IndexManifestFileHandler.BucketedCombiner``);
* hash index files (``HashIndexFile``: big-endian int32s);
* statistics files (``statistics/stat-<uuid>-<n>``: ``Statistics`` JSON, as ``FileStoreCommitImpl.commitStatistics``
  writes for ANALYZE);

and attaches them the way ``FileStoreCommitImpl.tryCommitOnce`` does: a new snapshot N+1 whose base manifest list
holds the previous snapshot's base and delta manifests, whose delta list is empty, and whose ``indexManifest`` is a
new index manifest (``manifest/index-manifest-<uuid>-<n>``, ``IndexManifestFile``: the full set of index files, ADD
entries only) or the previous one when the commit changes no index file; ``statistics`` is the new file or the
previous one (Paimon inherits it while the schema is unchanged). The snapshot is created if absent, then LATEST.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tableformat.codec.binary_row import encode_row
from tableformat.data_paths import DataPaths
from tableformat.layout import LATEST, NameFactory
from tableformat.live_set import merge_entries
from tableformat.model.index import DELETION_VECTORS_INDEX, IndexManifestEntry, Statistics
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.model.snapshot import CommitKind, Snapshot
from tableformat.table import Table


class PaimonIndex:
    """Index files and statistics of one table, committed as Paimon commits them."""

    def __init__(self, table: Table, *, bitmap64: bool = False, in_data_file_dir: bool = False) -> None:
        self.ctx = table.context
        self.store = table.context.store
        self.types = [f.type for f in table.context.schema.partition_fields]
        self.names = NameFactory()
        self.bitmap64 = bitmap64
        self.in_data_file_dir = in_data_file_dir
        """Put index files in the data files' bucket directories (``index-file-in-data-file-dir``)."""
        self.paths = DataPaths(table.context.schema)

    # --- what the table holds ----------------------------------------------------------------------------------
    def latest(self) -> Snapshot:
        snapshot = self.store.latest_snapshot()
        assert snapshot is not None, "the table has no snapshot"
        return snapshot

    def live_files(self, snapshot: Snapshot | None = None) -> dict[str, ManifestEntry]:
        """Data file name -> its live ADD entry in ``snapshot`` (the latest by default)."""
        metas = self.store.manifests_of(snapshot or self.latest())
        live = merge_entries(self.store.read_manifest(m.file_name) for m in metas)
        return {e.file.file_name: e for e in live.values()}

    def index_entries(self, snapshot: Snapshot | None = None) -> list[IndexManifestEntry]:
        """The live index files of ``snapshot`` (the latest by default)."""
        name = (snapshot or self.latest()).index_manifest
        return self.store.read_index_manifest(name) if name else []

    def bucket_dir(self, partition: bytes, bucket: int) -> str | None:
        return self.paths.bucket_dir(partition, bucket) if self.in_data_file_dir else None

    def partition(self, values: Sequence[Any]) -> bytes:
        return encode_row(list(values), self.types)

    # --- writing index files ---------------------------------------------------------------------------------
    def deletion_vector_entries(self, deletes: Mapping[str, Iterable[int]]) -> list[IndexManifestEntry]:
        """Write the deletion vectors of ``deletes`` (data file name -> deleted row positions, merged with the
        positions each file's current vector holds) as one file per partition and bucket; the ADD entries."""
        live = self.live_files()
        current = {
            (e.partition, e.bucket): e
            for e in self.index_entries()
            if e.index_file.index_type == DELETION_VECTORS_INDEX
        }
        groups: dict[tuple[bytes, int], dict[str, set[int]]] = {}
        for name, positions in deletes.items():
            entry = live[name]
            groups.setdefault((entry.partition, entry.bucket), {})[name] = set(positions)
        added = []
        for (partition, bucket), vectors in groups.items():
            previous = current.get((partition, bucket))
            merged: dict[str, set[int]] = {}
            if previous is not None:
                old = self.store.read_deletion_vectors(previous.index_file, self.bucket_dir(partition, bucket))
                merged = {name: {int(p) for p in positions} for name, positions in old.items()}
            for name, positions in vectors.items():
                merged[name] = merged.get(name, set()) | positions
            meta = self.store.write_deletion_vector_file(
                {name: sorted(merged[name]) for name in sorted(merged)},
                self.names,
                bitmap64=self.bitmap64,
                bucket_dir=self.bucket_dir(partition, bucket),
            )
            added.append(IndexManifestEntry(kind=FileKind.ADD, partition=partition, bucket=bucket, index_file=meta))
        return added

    def hash_index_entry(
        self, hashes: Iterable[int], partition: Sequence[Any] = (), bucket: int = 0
    ) -> IndexManifestEntry:
        """Write a hash index file of ``hashes`` for a partition (values) and bucket; its ADD entry."""
        row = self.partition(partition)
        meta = self.store.write_hash_index(hashes, self.names, bucket_dir=self.bucket_dir(row, bucket))
        return IndexManifestEntry(kind=FileKind.ADD, partition=row, bucket=bucket, index_file=meta)

    def statistics_file(
        self, *, merged_record_count: int | None = None, col_stats: Mapping[str, Any] | None = None
    ) -> str:
        """Write the statistics of the latest snapshot (as ANALYZE collects them) and return the file name."""
        latest = self.latest()
        stats = Statistics(
            snapshot_id=latest.id,
            schema_id=latest.schema_id,
            merged_record_count=latest.total_record_count if merged_record_count is None else merged_record_count,
            merged_record_size=None,
            col_stats=dict(col_stats or {}),
        )
        return self.store.write_statistics(stats, self.names)

    # --- committing ----------------------------------------------------------------------------------------
    def commit(
        self,
        adds: Sequence[IndexManifestEntry] = (),
        *,
        statistics: str | None = None,
        kind: CommitKind = CommitKind.APPEND,
        time_millis: int | None = None,
    ) -> Snapshot:
        """Snapshot N+1 of the latest snapshot N with ``adds`` combined into its index files (an ADD replaces the
        file of its partition, bucket and index type) and ``statistics`` when given; returns it."""
        latest = self.latest()
        index_manifest = latest.index_manifest
        if adds:
            replaced = {(e.partition, e.bucket, e.index_file.index_type) for e in adds}
            kept = [
                e
                for e in self.index_entries(latest)
                if (e.partition, e.bucket, e.index_file.index_type) not in replaced
            ]
            index_manifest = self.store.write_index_manifest([*kept, *adds], self.names)
        base = self.store.write_manifest_list(self.store.manifests_of(latest), self.names)
        delta = self.store.write_manifest_list([], self.names)
        snapshot = dataclasses.replace(
            latest,
            id=latest.id + 1,
            base_manifest_list=base.name,
            base_manifest_list_size=base.size,
            delta_manifest_list=delta.name,
            delta_manifest_list_size=delta.size,
            changelog_manifest_list=None,
            changelog_manifest_list_size=None,
            index_manifest=index_manifest,
            statistics=statistics or latest.statistics,
            commit_kind=kind,
            time_millis=latest.time_millis + 1 if time_millis is None else time_millis,
            delta_record_count=0,
            uuid=str(uuid.uuid4()),
        )
        assert self.store.write_snapshot_if_absent(snapshot), f"snapshot {snapshot.id} exists"
        self.store.write_hint(LATEST, snapshot.id)
        return snapshot

    def delete_rows(self, deletes: Mapping[str, Iterable[int]]) -> Snapshot:
        """Commit deletion vectors for ``deletes`` (data file name -> row positions): Paimon's DV commit."""
        return self.commit(self.deletion_vector_entries(deletes))

    def analyze(self, **kwargs: Any) -> Snapshot:
        """Commit a statistics file of the latest snapshot: Paimon's ANALYZE commit."""
        return self.commit(statistics=self.statistics_file(**kwargs), kind=CommitKind.ANALYZE)
