"""Batch reads: plan a snapshot's live files on the driver, bin-pack them into splits, read splits on executors.

A primary-key table's splits are whole buckets (every version of a key lies in its bucket): each task merges its
buckets' files as ``Table.to_arrow`` does (:mod:`tableformat.scan.primary_key`), the record TTL filtering the
merged rows.

No filter pushdown (``pushFilters``) on purpose: pyspark 4.3.0 leaks pushed filters from one scan of a DataFrame
into the next (see the package docs). Partitions are pruned through the ``partitions`` option instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from tableformat.codec.avro_projection import ScanEntry, ScanRef
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.io.factory import open_location
from tableformat.layout import TableLayout
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot
from tableformat.scan.merge import BucketRead, merge_rules
from tableformat.scan.primary_key import plan_buckets, read_bucket
from tableformat.scan.reader import DataReader
from tableformat.scan.record_ttl import RecordTTL, scan_record_ttl
from tableformat.spark.config import ReadConfig
from tableformat.spark.schema import arrow_schema_for_spark, resolve_columns, to_spark_batches
from tableformat.spark.worker_gc import freeze_worker_heap
from tableformat.store import MetadataStore
from tableformat.table import Table
from tableformat.threads import thread_pool

log = logging.getLogger(__name__)

T = TypeVar("T")


def select_snapshot(
    table: Table, *, snapshot_id: int | None = None, tag: str | None = None, timestamp_ms: int | None = None
) -> Snapshot | None:
    """The snapshot a read asks for: an id, a tag, the newest at or before a time, or the latest (None = empty)."""
    return table.select_snapshot(snapshot_id, tag, timestamp_ms)


def plan_entries(
    table: Table, snapshot: Snapshot | None, partition_filter: Sequence[Mapping[str, Any]] | None
) -> list[ManifestEntry]:
    """The live files of ``snapshot`` (restricted to matching partitions when a filter is given)."""
    if snapshot is None:
        return []
    return table.plan_files(snapshot, list(partition_filter) if partition_filter is not None else None)


def plan_scan_refs(
    table: Table, snapshot: Snapshot | None, partition_filter: Sequence[Mapping[str, Any]] | None
) -> list[ScanRef]:
    """``plan_entries`` reduced to what reading the files needs (no statistics decoded)."""
    return table.plan_scan_refs(snapshot, list(partition_filter) if partition_filter is not None else None)


def data_reader(
    location: str, storage_options: Mapping[str, Any], schema: TableSchema, record_ttl: RecordTTL | None = None
) -> DataReader:
    """A DataReader for ``schema`` built from a location (on an executor: no Table, no listing); with the scan's
    record TTL, judged once on the driver, it never returns an expired row."""
    file_io, root = open_location(location, dict(storage_options))
    layout = TableLayout(root)
    store = MetadataStore(file_io, layout)
    codec = PartitionCodec(schema)
    return DataReader(file_io, layout, schema, store.read_schema, codec, threads=1, record_ttl=record_ttl)


@dataclass(frozen=True, slots=True)
class SplitSizing:
    """How files are bin-packed into splits (one Spark task each), the way Spark sizes file splits."""

    target_size: int
    open_file_cost: int
    parallelism: int

    def max_split_bytes(self, entries: Sequence[ScanEntry]) -> int:
        return self._max_split_bytes([e.file.file_size for e in entries])

    def _max_split_bytes(self, sizes: Sequence[int]) -> int:
        total = sum(size + self.open_file_cost for size in sizes)
        return min(self.target_size, max(self.open_file_cost, -(-total // self.parallelism)))


def bin_pack(entries: Sequence[ScanEntry], sizing: SplitSizing) -> list[list[ScanEntry]]:
    """Spark's "next fit decreasing" (FilePartition.getFilePartitions): largest files first; a split closes when
    the next file's bytes would push it past the split size, each file counting its bytes plus the open cost."""
    return _next_fit_decreasing(entries, [e.file.file_size for e in entries], sizing)


def bin_pack_buckets(buckets: Sequence[BucketRead], sizing: SplitSizing) -> list[list[BucketRead]]:
    """:func:`bin_pack` of whole buckets (a primary-key table's unit of reading), each sized by its files."""
    return _next_fit_decreasing(buckets, [sum(e.file.file_size for e in b.entries) for b in buckets], sizing)


def _next_fit_decreasing(items: Sequence[T], sizes: Sequence[int], sizing: SplitSizing) -> list[list[T]]:
    limit = sizing._max_split_bytes(sizes)
    splits: list[list[T]] = []
    current: list[T] = []
    current_size = 0
    for size, item in sorted(zip(sizes, items), key=lambda pair: pair[0], reverse=True):
        if current and current_size + size > limit:
            splits.append(current)
            current, current_size = [], 0
        current.append(item)
        current_size += size + sizing.open_file_cost
    if current:
        splits.append(current)
    return splits


class TablefmtSplit(InputPartition):
    """The files one Spark task reads."""

    def __init__(self, index: int, entries: Sequence[ScanEntry]) -> None:
        super().__init__(index)
        self.entries = tuple(entries)

    def __repr__(self) -> str:
        return f"TablefmtSplit({self.value}, files={len(self.entries)})"


class TablefmtBucketSplit(InputPartition):
    """The whole buckets of a primary-key table one Spark task reads and merges."""

    def __init__(self, index: int, buckets: Sequence[BucketRead], deleted: Mapping[str, Any] | None = None) -> None:
        super().__init__(index)
        self.buckets = tuple(buckets)
        self.deleted = dict(deleted or {})
        """Data file name -> the row positions its deletion vector marks (read on the driver)."""

    def __repr__(self) -> str:
        return f"TablefmtBucketSplit({self.value}, buckets={len(self.buckets)})"


class TablefmtReader(DataSourceReader):
    """Reads one pinned snapshot of a table. Pickled to executors: holds no filesystem, only plain state."""

    def __init__(self, config: ReadConfig, snapshot_id: int | None, pinned: bool, spark_schema: StructType) -> None:
        self.config = config
        self.snapshot_id = snapshot_id
        self.pinned = pinned
        self.spark_schema = spark_schema
        table = Table.open(config.path, config.storage_options)
        self.table_schema = table.schema
        self.columns = resolve_columns(spark_schema.fieldNames(), table.schema.field_names)
        self.record_ttl = scan_record_ttl(table.schema, include_expired=config.include_expired)  # once per scan
        self.merge = merge_rules(table.schema) if table.schema.primary_keys else None
        """A primary-key table's merge rules (its refusals raised here, on the driver); None: an append table."""

    def partitions(self) -> Sequence[InputPartition]:
        freeze_worker_heap()  # a planner worker of the driver host, reused across queries
        config = self.config
        table = Table.open(config.path, config.storage_options)
        if self.pinned:
            snapshot = table.snapshot(self.snapshot_id) if self.snapshot_id is not None else None
        else:
            snapshot = select_snapshot(
                table, snapshot_id=config.snapshot_id, tag=config.tag, timestamp_ms=config.timestamp_ms
            )
        if self.merge is not None:
            return self._bucket_splits(table, snapshot)
        entries: Sequence[ScanEntry]
        if self.record_ttl is not None:  # fully expired files are never read (their statistics say so)
            entries = self.record_ttl.prune(
                plan_entries(table, snapshot, config.partition_filter), table.context.schema_by_id
            )
        else:  # no statistics needed: planned as ScanRefs, which are also smaller to send to the tasks
            entries = plan_scan_refs(table, snapshot, config.partition_filter)
        splits = bin_pack(entries, self._sizing())
        log.info(
            "tablefmt read of %s snapshot %s: %d file(s) in %d split(s)",
            table.location,
            None if snapshot is None else snapshot.id,
            len(entries),
            len(splits),
        )
        return [TablefmtSplit(index, split) for index, split in enumerate(splits)]

    def _bucket_splits(self, table: Table, snapshot: Snapshot | None) -> list[InputPartition]:
        """A primary-key table: its buckets (with the files a batch read takes) bin-packed into splits."""
        assert self.merge is not None
        vectors = table.deletion_vectors_of(snapshot, self.table_schema)
        entries = plan_entries(table, snapshot, self.config.partition_filter)
        buckets = plan_buckets(entries, self.table_schema, self.merge)
        splits = bin_pack_buckets(buckets, self._sizing())
        deleted: list[dict[str, Any]] = [{} for _ in splits]
        if vectors is not None:
            for split, marked in zip(splits, deleted):
                for entry in (e for bucket in split for e in bucket.entries):
                    positions = vectors(entry)
                    if positions is not None:
                        marked[entry.file.file_name] = positions
        log.info(
            "tablefmt read of %s snapshot %s: %d bucket(s) in %d split(s)",
            table.location,
            None if snapshot is None else snapshot.id,
            len(buckets),
            len(splits),
        )
        return [TablefmtBucketSplit(index, split, deleted[index]) for index, split in enumerate(splits)]

    def _sizing(self) -> SplitSizing:
        config = self.config
        return SplitSizing(
            target_size=config.split_target_size,
            open_file_cost=config.split_open_file_cost,
            parallelism=config.parallelism or os.cpu_count() or 1,
        )

    def _read_buckets(self, partition: TablefmtBucketSplit) -> Iterator[pa.RecordBatch]:
        assert self.merge is not None
        reader = data_reader(self.config.path, self.config.storage_options, self.table_schema)
        target = arrow_schema_for_spark(self.spark_schema)
        wanted = {*self.columns, *self.merge.merge_columns}
        if self.record_ttl is not None:
            wanted.add(self.record_ttl.field_name)
        read_columns = [name for name in self.table_schema.field_names if name in wanted]
        deleted = partition.deleted
        for plan in partition.buckets:
            table = read_bucket(reader, plan, self.merge, read_columns, lambda e: deleted.get(e.file.file_name))
            if self.record_ttl is not None:
                table = self.record_ttl.filter(table)
            yield from to_spark_batches(table, self.columns, target)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, TablefmtBucketSplit):
            freeze_worker_heap()
            yield from self._read_buckets(partition)
            return
        if not isinstance(partition, TablefmtSplit) or not partition.entries:
            return
        freeze_worker_heap()  # once per executor worker: pyspark's collection after each task skips the imports
        reader = data_reader(self.config.path, self.config.storage_options, self.table_schema, self.record_ttl)
        target = arrow_schema_for_spark(self.spark_schema)
        entries = partition.entries
        # Read the next file in the background while Spark consumes the current one (pyarrow releases the GIL).
        with thread_pool(1, "tablefmt-spark-read") as pool:
            pending: Future[pa.Table] = pool.submit(reader.read_entry, entries[0])
            for index in range(len(entries)):
                table = pending.result()
                if index + 1 < len(entries):
                    pending = pool.submit(reader.read_entry, entries[index + 1])
                yield from to_spark_batches(table, self.columns, target)
