"""The reading half of the Table API: snapshots, time travel, and the rows of a snapshot for Arrow, pandas, Polars
and DuckDB (a mixin of :class:`tableformat.table.Table`).

Every read goes through :meth:`TableReaders.scan`, which builds one :class:`tableformat.scan.dataset.TableScan` over
exactly the snapshot's live files: the one place where a per-scan row filter and file pruning apply. pandas, Polars
and DuckDB are optional (``pip install 'tablefmt[pandas]'`` etc.) and imported only when their method is called.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.codec.avro_projection import ScanRef
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import (
    CorruptMetadataError,
    SnapshotExpiredWhileReadingError,
    SnapshotNotFoundError,
    StorageError,
    ValidationError,
)
from tableformat.lazy_module import lazy_module
from tableformat.live_set import PartitionPredicate, live_entries, live_scan_refs
from tableformat.model.index import DELETION_VECTORS_INDEX
from tableformat.model.manifest import ManifestEntry
from tableformat.model.partition import normalize_spec
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot
from tableformat.options import INDEX_FILE_IN_DATA_FILE_DIR, PARTITION_DEFAULT_NAME, TableOptions
from tableformat.parallel import resolve_parallelism
from tableformat.scan.dataset import TableScan
from tableformat.scan.filters import RowFilter, as_expression
from tableformat.scan.merge import PositionsOf, merge_rules
from tableformat.scan.primary_key import DeletionVectorIndex, PrimaryKeyScan
from tableformat.scan.reader import DataReader
from tableformat.scan.record_ttl import RecordTTL, scan_record_ttl, ttl_scan

if TYPE_CHECKING:  # pyarrow.dataset imports pandas when present: loaded where used
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
else:
    pa = lazy_module("pyarrow")

PartitionSpec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DataFileInfo:
    """A live data file of a snapshot, as `files()` lists it."""

    path: str
    partition: dict[str, Any]
    bucket: int
    row_count: int
    file_size: int
    schema_id: int


def _optional(module: str, extra: str) -> Any:
    """Import an optional dependency, or say which extra installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this needs {module}: pip install 'tablefmt[{extra}]' ({exc})") from None


class TableReaders:
    """Snapshots and reads of one table (mixed into Table; needs ``self._ctx``)."""

    _ctx: TableContext

    # --- schema and partition specs ----------------------------------------------------------------------------
    def _refresh_schema(self) -> None:
        latest = self._ctx.store.latest_schema()
        if latest.id != self._ctx.schema.id:
            self._ctx.schema = latest

    def _spec(self, spec: PartitionSpec) -> dict[str, Any]:
        if not isinstance(spec, Mapping):
            raise ValidationError(f"a partition spec must be a mapping like {{'dt': '2024-01-01'}}, got {spec!r}")
        schema = self._ctx.schema
        return normalize_spec(
            spec,
            schema.partition_fields,
            default_name=self._ctx.options.require(PARTITION_DEFAULT_NAME),
            allow_partial=True,
        )

    # --- snapshots -------------------------------------------------------------------------------------------------
    def snapshots(self) -> list[Snapshot]:
        """Every snapshot present, oldest first."""
        store = self._ctx.store
        result = []
        for snapshot_id in store.snapshot_ids():
            snapshot = store.try_read_snapshot(snapshot_id)
            if snapshot is not None:
                result.append(snapshot)
        return result

    def latest_snapshot(self) -> Snapshot | None:
        return self._ctx.store.latest_snapshot()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self._ctx.store.read_snapshot(snapshot_id)

    def snapshot_as_of(self, timestamp: int | dt.datetime) -> Snapshot:
        """The newest snapshot committed at or before ``timestamp`` (epoch ms or datetime)."""
        millis = int(timestamp.timestamp() * 1000) if isinstance(timestamp, dt.datetime) else int(timestamp)
        candidates = [s for s in self.snapshots() if s.time_millis <= millis]
        if not candidates:
            raise SnapshotNotFoundError(f"no snapshot at or before {millis} ms (the earliest may have been expired)")
        return candidates[-1]

    def select_snapshot(
        self, snapshot_id: int | None = None, tag: str | None = None, as_of: int | dt.datetime | None = None
    ) -> Snapshot | None:
        """The snapshot a read asks for: an id, a tag, the newest at or before a time, or the latest (None: empty)."""
        chosen = [x for x in (snapshot_id, tag, as_of) if x is not None]
        if len(chosen) > 1:
            raise ValidationError("give at most one of snapshot_id, tag and as_of")
        if snapshot_id is not None:
            return self.snapshot(snapshot_id)
        if tag is not None:
            return self._ctx.store.read_tag(tag).snapshot
        if as_of is not None:
            return self.snapshot_as_of(as_of)
        return self.latest_snapshot()

    def plan_files(
        self, snapshot: Snapshot | None, partition_filter: PartitionSpec | Sequence[PartitionSpec] | None = None
    ) -> list[ManifestEntry]:
        """The live manifest entries of ``snapshot``, restricted to matching partitions when a filter is given."""
        if snapshot is None:
            return []
        threads = resolve_parallelism(self._ctx.options, self._ctx.io, None)  # inline on local disk, as maintenance
        predicate = self._predicate(partition_filter)
        return live_entries(self._ctx.store, snapshot, self._ctx.partition_codec(), predicate, threads)

    def plan_scan_refs(
        self, snapshot: Snapshot | None, partition_filter: PartitionSpec | Sequence[PartitionSpec] | None = None
    ) -> list[ScanRef]:
        """``plan_files`` reduced to what reading the files needs (avro_projection.ScanRef): the same files, planned
        without decoding statistics or building full entries."""
        if snapshot is None:
            return []
        threads = resolve_parallelism(self._ctx.options, self._ctx.io, None)
        predicate = self._predicate(partition_filter)
        return live_scan_refs(self._ctx.store, snapshot, self._ctx.partition_codec(), predicate, threads)

    def _predicate(
        self, partition_filter: PartitionSpec | Sequence[PartitionSpec] | None
    ) -> PartitionPredicate | None:
        if partition_filter is None:
            return None
        specs = [partition_filter] if isinstance(partition_filter, Mapping) else list(partition_filter)
        return PartitionPredicate(tuple(self._spec(s) for s in specs))

    def _reader(self, schema: TableSchema | None = None) -> DataReader:
        ctx = self._ctx
        return DataReader(ctx.io, ctx.layout, schema or ctx.schema, ctx.schema_by_id, ctx.partition_codec())

    def _read_schema(self, snapshot: Snapshot | None, travelled: bool) -> TableSchema:
        """Time travel (a snapshot id, a tag or a time) reads with the schema the snapshot was committed with, as
        Paimon (Java TimeTravelUtil, pypaimon) does; the latest read uses the latest schema."""
        if travelled and snapshot is not None:
            return self._ctx.schema_by_id(snapshot.schema_id)
        return self._ctx.schema

    def _raise_if_expired(self, snapshot: Snapshot | None, tag: str | None, exc: Exception) -> None:
        """A file of a snapshot that no longer exists was missing: the snapshot was expired while being read."""
        if snapshot is None or tag is not None or self._ctx.store.snapshot_exists(snapshot.id):
            return
        raise SnapshotExpiredWhileReadingError(snapshot.id) from exc

    # --- the one scan ------------------------------------------------------------------------------------------------
    def scan(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        filter: RowFilter | None = None,
        partition_filter: PartitionSpec | Sequence[PartitionSpec] | None = None,
        include_expired: bool = False,
    ) -> TableScan:
        """Plan a read of one snapshot (latest by default): exactly its live files, pruned by ``partition_filter``
        (manifest statistics) and ``filter`` (partition values and min/max statistics of each file).

        ``filter``: a ``pyarrow.compute`` expression or a list of ``(column, op, value)`` tuples (pyarrow's DNF form).
        Rows expired by the table's record-level TTL (``record-level.expire-time``, judged now, once per scan) are
        left out, and files whose every row is expired are never opened, unless ``include_expired`` (audits).
        """
        self._refresh_schema()
        snapshot = self.select_snapshot(snapshot_id, tag, as_of)
        travelled = snapshot_id is not None or tag is not None or as_of is not None
        schema = self._read_schema(snapshot, travelled)
        ctx = self._ctx
        row_filter = as_expression(filter, arrow_schema_of(list(schema.fields)))
        ttl = scan_record_ttl(ctx.schema, include_expired=include_expired)
        if schema.primary_keys:
            return self._primary_key_scan(snapshot, schema, tag, row_filter, ttl, partition_filter)
        refs: list[ScanRef] | None = None
        entries: list[ManifestEntry] = []
        try:
            if row_filter is None and ttl is None:  # nothing to prune by statistics: plan without decoding them
                refs = self.plan_scan_refs(snapshot, partition_filter)
            else:
                entries = self.plan_files(snapshot, partition_filter)
        except (CorruptMetadataError, StorageError) as exc:
            self._raise_if_expired(snapshot, tag, exc)
            raise
        if ttl is not None:
            entries, row_filter = ttl_scan(ttl, entries, schema, ctx.schema_by_id, row_filter)
        return TableScan(
            ctx.io, ctx.layout, schema, ctx.schema_by_id, entries if refs is None else refs, row_filter=row_filter,
            snapshot=snapshot, threads=resolve_parallelism(ctx.options, ctx.io, None),
        )

    def _primary_key_scan(
        self,
        snapshot: Snapshot | None,
        schema: TableSchema,
        tag: str | None,
        row_filter: pc.Expression | None,
        ttl: RecordTTL | None,
        partition_filter: PartitionSpec | Sequence[PartitionSpec] | None,
    ) -> PrimaryKeyScan:
        """The merged read of a primary-key table (scan/primary_key.py): full entries (key statistics, levels and
        sequence numbers decide what is merged); the record TTL is a filter on the merged rows, no file is pruned by
        it (a newer version's file left out would bring back an older version)."""
        ctx = self._ctx
        merge_rules(schema)  # refuses an engine tablefmt cannot read before anything else is read
        deletion_vectors = self.deletion_vectors_of(snapshot, schema)
        try:
            entries = self.plan_files(snapshot, partition_filter)
        except (CorruptMetadataError, StorageError) as exc:
            self._raise_if_expired(snapshot, tag, exc)
            raise
        if ttl is not None:
            _, row_filter = ttl_scan(ttl, [], schema, ctx.schema_by_id, row_filter)
        return PrimaryKeyScan(
            ctx.io, ctx.layout, schema, ctx.schema_by_id, entries, row_filter=row_filter, snapshot=snapshot,
            threads=resolve_parallelism(ctx.options, ctx.io, None), deletion_vectors=deletion_vectors,
        )

    def deletion_vectors_of(self, snapshot: Snapshot | None, schema: TableSchema) -> PositionsOf | None:
        """The deletion vectors of a primary-key table with ``deletion-vectors.enabled``: each data file's deleted
        row positions (None: the snapshot has none)."""
        if snapshot is None or snapshot.index_manifest is None or not merge_rules(schema).deletion_vectors:
            return None
        store = self._ctx.store
        try:
            entries = store.read_index_manifest(snapshot.index_manifest)
        except (CorruptMetadataError, StorageError) as exc:
            self._raise_if_expired(snapshot, None, exc)
            raise
        vectors = [e for e in entries if e.index_file.index_type == DELETION_VECTORS_INDEX]
        in_buckets = TableOptions(schema.options).require(INDEX_FILE_IN_DATA_FILE_DIR)
        return DeletionVectorIndex(store, vectors, DataPaths(schema) if in_buckets else None)

    def to_arrow(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        partition_filter: PartitionSpec | Sequence[PartitionSpec] | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        filter: RowFilter | None = None,
        include_expired: bool = False,
    ) -> pa.Table:
        """Rows of the latest snapshot (or a snapshot id, a tag, or a point in time): only ``columns`` when given,
        only rows matching ``filter``; files that cannot match are never opened (see :meth:`scan`). Rows expired by
        the record-level TTL are left out unless ``include_expired``."""
        scan = self.scan(
            snapshot_id, tag, as_of=as_of, filter=filter, partition_filter=partition_filter,
            include_expired=include_expired,
        )
        try:
            return scan.to_table(columns)
        except (CorruptMetadataError, StorageError) as exc:
            self._raise_if_expired(scan.snapshot, tag, exc)
            raise

    def to_batches(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        partition_filter: PartitionSpec | Sequence[PartitionSpec] | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        filter: RowFilter | None = None,
        include_expired: bool = False,
    ) -> pa.RecordBatchReader:
        """Like to_arrow, streaming batch by batch."""
        scan = self.scan(
            snapshot_id, tag, as_of=as_of, filter=filter, partition_filter=partition_filter,
            include_expired=include_expired,
        )
        return pa.RecordBatchReader.from_batches(scan.projected_schema(columns), scan.to_batches(columns))

    def to_pyarrow_dataset(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        filter: RowFilter | None = None,
        include_expired: bool = False,
    ) -> ds.Dataset:
        """A lazy ``pyarrow.dataset.Dataset`` over exactly the snapshot's live files (typed partition columns, older
        schemas' files read as the snapshot's schema). Engines that scan Arrow datasets (DuckDB, Polars, Acero)
        push their projections and filters into it. Expired rows are filtered out unless ``include_expired``. A
        primary-key table's rows are merged on read: for one this is an in-memory dataset of the merged rows, read
        when it is made (docs/reading.md)."""
        return self.scan(snapshot_id, tag, as_of=as_of, filter=filter, include_expired=include_expired).dataset()

    def to_pandas(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        filter: RowFilter | None = None,
        include_expired: bool = False,
    ) -> Any:
        """The snapshot's rows as a pandas DataFrame (needs the ``pandas`` extra)."""
        _optional("pandas", "pandas")
        table = self.to_arrow(
            snapshot_id, tag, as_of=as_of, columns=columns, filter=filter, include_expired=include_expired
        )
        return table.to_pandas()

    def to_polars(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        filter: RowFilter | None = None,
        lazy: bool = False,
        include_expired: bool = False,
    ) -> Any:
        """The snapshot's rows as a Polars DataFrame, or with ``lazy=True`` a LazyFrame scanning the dataset (needs
        the ``polars`` extra)."""
        polars = _optional("polars", "polars")
        if lazy:
            dataset = self.to_pyarrow_dataset(
                snapshot_id, tag, as_of=as_of, filter=filter, include_expired=include_expired
            )
            frame = polars.scan_pyarrow_dataset(dataset)
            return frame if columns is None else frame.select(list(columns))
        table = self.to_arrow(
            snapshot_id, tag, as_of=as_of, columns=columns, filter=filter, include_expired=include_expired
        )
        return polars.from_arrow(table)

    def to_duckdb(
        self,
        connection: Any = None,
        name: str = "tablefmt",
        snapshot_id: int | None = None,
        tag: str | None = None,
        *,
        as_of: int | dt.datetime | None = None,
        filter: RowFilter | None = None,
        include_expired: bool = False,
    ) -> Any:
        """Register the snapshot as view ``name`` on a DuckDB connection (a new in-memory one by default) and return
        the connection; DuckDB scans the Arrow dataset lazily, pushing down projections and filters (needs the
        ``duckdb`` extra)."""
        duckdb = _optional("duckdb", "duckdb")
        connection = duckdb.connect() if connection is None else connection
        dataset = self.to_pyarrow_dataset(snapshot_id, tag, as_of=as_of, filter=filter, include_expired=include_expired)
        connection.register(name, dataset)
        return connection

    def files(self, snapshot_id: int | None = None) -> list[DataFileInfo]:
        """The live data files of a snapshot (latest by default)."""
        snapshot = self.select_snapshot(snapshot_id)
        try:
            entries = self.plan_files(snapshot)
        except (CorruptMetadataError, StorageError) as exc:
            self._raise_if_expired(snapshot, None, exc)
            raise
        reader = self._reader()
        codec = self._ctx.partition_codec()
        return [
            DataFileInfo(
                path=self._ctx.io.url(reader.path_of(e)),
                partition=dict(codec.values(e.partition)),
                bucket=e.bucket,
                row_count=e.file.row_count,
                file_size=e.file.file_size,
                schema_id=e.file.schema_id,
            )
            for e in entries
        ]
