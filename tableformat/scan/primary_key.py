"""The scan of a primary-key table: one row per key, merged on read per (partition, bucket) (:mod:`.merge`).

:class:`PrimaryKeyScan` is a :class:`TableScan` with the same readers (``to_table``, ``to_batches``, ``dataset``),
so every reader of a table (Arrow, pandas, Polars, DuckDB, the object-store path) gets merged rows. Differences:

* Filters: a row filter is applied to the merged rows, never to the records before the merge (filtering a key's
  newest version away would bring back an older one). Files are pruned only where that is safe, as Paimon's
  ``KeyValueFileStoreScan`` does: by partition and by the key columns' statistics per file (every version of a key
  has the same key, so a file whose keys cannot match holds no version of a matching key); by value statistics
  only a whole bucket none of whose files can match, or single files of a bucket whose files cannot overlap (one
  file, or all at one level above 0). The table's record-level TTL is such a filter too (no file is pruned by it).
* ``dataset()`` is an in-memory dataset of the merged rows: a merge cannot be pushed into a lazy dataset of files.
  Polars' lazy frames and DuckDB views over a primary-key table therefore read the snapshot once when made.
* ``to_batches`` yields one bucket's merged rows at a time (memory: the largest bucket's records).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tableformat.codec.avro_projection import ScanEntry
from tableformat.data_paths import DataPaths
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.index import IndexManifestEntry
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot
from tableformat.parallel import bounded_map, executor
from tableformat.scan.dataset import TableScan, _read_errors
from tableformat.scan.filters import and_all, stats_guarantee
from tableformat.scan.merge import (
    SYSTEM_COLUMNS,
    BucketRead,
    MergeRules,
    PositionsOf,
    file_age_order,
    group_buckets,
    merge_rules,
    merge_versions,
    plan_bucket,
    unmerged,
)
from tableformat.scan.reader import DataReader
from tableformat.store import MetadataStore

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
else:
    pa = lazy_module("pyarrow")

MAX_MERGE_THREADS = 8
"""Buckets merged at a time at most (Arrow's sort is single-threaded per call; buckets merge independently)."""


class DeletionVectorIndex:
    """The deletion vectors of one snapshot (its index manifest's DELETION_VECTORS files), as a :data:`PositionsOf`:
    each data file's deleted row positions. An index file is read (whole, once) when a file of its bucket is first
    asked for; safe to call from the merge threads."""

    def __init__(
        self, store: MetadataStore, index_entries: Sequence[IndexManifestEntry], paths: DataPaths | None
    ) -> None:
        self.store = store
        self.paths = paths
        """The data files' paths when the table keeps index files in the bucket directories, else None."""
        self._files = {(e.partition, e.bucket): e.index_file for e in index_entries}
        self._loaded: dict[tuple[bytes, int], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def __call__(self, entry: ManifestEntry) -> Any:
        key = (entry.partition, entry.bucket)
        index_file = self._files.get(key)
        if index_file is None or entry.file.file_name not in index_file.dv_data_files():
            return None
        with self._lock:
            vectors = self._loaded.get(key)
            if vectors is None:
                bucket_dir = None if self.paths is None else self.paths.bucket_dir(*key)
                vectors = self._loaded[key] = self.store.read_deletion_vectors(index_file, bucket_dir)
        return vectors.get(entry.file.file_name)


def read_bucket(
    reader: DataReader,
    plan: BucketRead,
    rules: MergeRules,
    columns: Sequence[str],
    positions: PositionsOf | None = None,
) -> pa.Table:
    """One bucket's merged rows with the table ``columns`` (which must include the rules' merge columns) and the
    system columns; ``positions``: each file's deletion vector."""

    def read(entry: ManifestEntry) -> pa.Table:
        deleted = None if positions is None else positions(entry)
        return reader.read_key_values(entry, columns, SYSTEM_COLUMNS, deleted)

    parts = [unmerged(read(entry), rules) for entry in plan.raw]
    if plan.merged:
        parts.append(merge_versions([read(entry) for entry in file_age_order(plan.merged)], rules))
    if len(parts) == 1:
        return parts[0]
    return pa.concat_tables(parts)


def plan_buckets(entries: Sequence[ManifestEntry], schema: TableSchema, rules: MergeRules) -> list[BucketRead]:
    """Every (partition, bucket) of ``entries`` with the files a batch read takes (buckets with none left out)."""
    key_types = [schema.field(name).type for name in rules.key_columns]
    plans = [plan_bucket(group, rules, key_types) for group in group_buckets(entries)]
    return [plan for plan in plans if plan is not None]


class PrimaryKeyScan(TableScan):
    """The merged rows of a primary-key table's live files (one snapshot's), optionally filtered after the merge."""

    def __init__(
        self,
        file_io: FileIO,
        layout: TableLayout,
        schema: TableSchema,
        schema_loader: Callable[[int], TableSchema],
        entries: Sequence[ManifestEntry],
        *,
        row_filter: pc.Expression | None = None,
        snapshot: Snapshot | None = None,
        threads: int = 1,
        deletion_vectors: PositionsOf | None = None,
    ) -> None:
        super().__init__(
            file_io, layout, schema, schema_loader, entries, row_filter=row_filter, snapshot=snapshot, threads=threads
        )
        self.rules = merge_rules(schema)
        self.deletion_vectors = deletion_vectors
        self._plans: list[BucketRead] | None = None

    # --- which files -----------------------------------------------------------------------------------------------
    def buckets(self) -> list[BucketRead]:
        """The buckets read and how (raw or merged files), after the pruning that is safe (module docs)."""
        if self._plans is None:
            entries: list[ManifestEntry] = [e for e in self._entries if isinstance(e, ManifestEntry)]
            if self.row_filter is not None:
                entries = self._pruned(entries)
            self._plans = plan_buckets(entries, self.schema, self.rules)
        return self._plans

    def files(self) -> list[ScanEntry]:
        return [entry for plan in self.buckets() for entry in plan.entries]

    def _pruned(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        key_schema = replace(self.schema, fields=tuple(self.schema.field(k) for k in self.rules.key_columns))
        by_key = self._may_match(entries, lambda e: self._key_guarantee(e, key_schema))
        entries = [e for e, keep in zip(entries, by_key) if keep]
        by_value = self._may_match(
            entries,
            lambda e: and_all(
                [self._partition_guarantee(e), stats_guarantee(e.file, self._file_schema(e), self.schema)]
            ),
        )
        matching = {id(e) for e, keep in zip(entries, by_value) if keep}
        kept: list[ManifestEntry] = []
        for group in group_buckets(entries):
            visible = [e for e in group if not (self.rules.skip_level0 and e.file.level == 0)]
            if not any(id(e) in matching for e in visible):
                continue  # no file of the bucket can match: neither can any merged row
            if _cannot_overlap(visible):
                kept.extend(e for e in group if id(e) in matching)
            else:
                kept.extend(group)
        return kept

    def _key_guarantee(self, entry: ManifestEntry, key_schema: TableSchema) -> pc.Expression | None:
        """The partition values and the key columns' bounds (the file's key statistics)."""
        meta = replace(entry.file, value_stats=entry.file.key_stats, value_stats_cols=self.rules.key_columns)
        return and_all([self._partition_guarantee(entry), stats_guarantee(meta, key_schema, key_schema)])

    def _may_match(
        self, entries: Sequence[ManifestEntry], guarantee: Callable[[ManifestEntry], pc.Expression | None]
    ) -> list[bool]:
        """Whether the row filter may match some row of each entry's file, given its guarantee (nothing opened)."""
        if not entries:
            return []
        import pyarrow.dataset as ds

        fragments = [self._fragment(e, guarantee(e)) for e in entries]
        probe = ds.FileSystemDataset(fragments, self.arrow_schema, self._format, self._fs)
        kept = {fragment.path for fragment in probe.get_fragments(filter=self.row_filter)}
        return [f.path in kept for f in fragments]

    # --- reading ---------------------------------------------------------------------------------------------------
    def _read_columns(self, selected: list[str] | None) -> list[str]:
        """The table columns each file is read with: the requested ones and the merge's (every column when a row
        filter is given: it may need any)."""
        if selected is None or self.row_filter is not None:
            return list(self.arrow_schema.names)
        wanted = set(selected) | set(self.rules.merge_columns)
        return [name for name in self.arrow_schema.names if name in wanted]

    def _merged(self, selected: list[str] | None) -> Iterator[pa.Table]:
        """Each bucket's merged, filtered and projected rows, buckets merged on up to MAX_MERGE_THREADS threads."""
        plans = self.buckets()
        reader = DataReader(self.io, self.layout, self.schema, self.schema_loader, self._codec, threads=1)
        read_columns = self._read_columns(selected)
        output = list(self.arrow_schema.names) if selected is None else selected

        def merge(plan: BucketRead) -> pa.Table:
            table = read_bucket(reader, plan, self.rules, read_columns, self.deletion_vectors)
            if self.row_filter is not None:
                table = table.filter(self.row_filter)
            return table.select(output)

        workers = max(self.threads, min(os.cpu_count() or 1, MAX_MERGE_THREADS, len(plans)))
        with _read_errors(self.io), executor(workers, "tablefmt-merge") as pool:
            for _plan, table in bounded_map(pool, merge, plans, workers):
                yield table

    def to_table(self, columns: Sequence[str] | None = None) -> pa.Table:
        selected = self._columns(columns)
        tables = [t for t in self._merged(selected) if t.num_rows]
        schema = self.projected_schema(selected)
        if not tables:
            return schema.empty_table()
        return pa.concat_tables(tables)

    def to_batches(self, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        for table in self._merged(self._columns(columns)):
            if table.num_rows:
                yield from table.to_batches()

    def dataset(self) -> ds.Dataset:
        """The merged (and filtered) rows as an in-memory dataset: read when this is called (module docs)."""
        import pyarrow.dataset as ds

        return ds.InMemoryDataset(self.to_table())


def _cannot_overlap(entries: Sequence[ManifestEntry]) -> bool:
    """Java's noOverlapping: at most one file, or all at the same level above 0 (one sorted run)."""
    if len(entries) <= 1:
        return True
    levels = {e.file.level for e in entries}
    return 0 not in levels and len(levels) == 1
