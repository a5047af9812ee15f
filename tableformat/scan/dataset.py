"""A scan of exactly one snapshot's live data files as a ``pyarrow.dataset``: what to_arrow, to_pyarrow_dataset,
pandas, Polars and DuckDB read.

The dataset is built from the files the snapshot's manifests list, never from a directory listing: a listing also
finds files that were dropped, overwritten or never committed (and names DATE partitions by day number), which is
why globbing a table's directories returns wrong rows (docs/reading.md).

* Schema: the read schema's columns, with their table types. Each file is a fragment whose partition expression
  states its partition values, so partition columns are typed (a DATE is a date, not a day number) and filled in
  where a file does not store them (Paimon Java). A column added after a file was written reads as nulls; a column
  stored with a narrower type is cast.
* Files written under a schema whose columns map to the read schema by name differently than by field id (a
  renamed column, a dropped and re-added name, a changed type) cannot be read by name: those few files are read
  through :class:`DataReader` (by field id) into memory and joined to the dataset.
* Pruning: with a row filter, files whose partition values and value statistics show the filter cannot match are
  left out before anything is opened (:mod:`.filters`); the filter is still applied to every row read.

On object stores ``to_table`` and ``to_batches`` read through :class:`DataReader` instead (``fetch_parquet``: one
GET for a small file, the footer then the chunks wanted of a larger one), ``file-operation.thread-num`` files at a
time; ``dataset()`` stays the pyarrow dataset engines push down into, its files opened with the sizes their
entries record (no HEAD either; pyarrow's scanner reads about 4 files at a time through fsspec).

:class:`TableScan` is the one place a scan's row filter applies: ``to_table`` and ``to_batches`` filter with it and
``dataset()`` returns the dataset filtered by it, so a per-scan filter (a user's, or a record-level expiry rule)
given to ``TableScan(row_filter=...)`` prunes files and filters rows in every reader alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.codec.avro_projection import ScanEntry
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, MissingDataFileError, StorageError, ValidationError
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot
from tableformat.scan.filters import and_all, partition_guarantee, stats_guarantee
from tableformat.scan.reader import DataReader

if TYPE_CHECKING:  # pyarrow.dataset imports pandas when present: loaded where used
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")

_MISSING = object()


@dataclass(frozen=True, slots=True)
class ScanStats:
    """How many live files the scan considered and how many it will open."""

    live_files: int
    selected_files: int

    @property
    def pruned_files(self) -> int:
        return self.live_files - self.selected_files


class TableScan:
    """The rows of a set of live data files (one snapshot's), read with one schema, optionally filtered."""

    def __init__(
        self,
        file_io: FileIO,
        layout: TableLayout,
        schema: TableSchema,
        schema_loader: Callable[[int], TableSchema],
        entries: Sequence[ScanEntry],
        *,
        row_filter: pc.Expression | None = None,
        snapshot: Snapshot | None = None,
        threads: int = 1,
    ) -> None:
        self.io = file_io
        self.threads = threads
        """Files fetched at a time on object stores (``file-operation.thread-num``)."""
        self.snapshot = snapshot
        """The snapshot whose files these are (None: an empty table), for callers that report on it."""
        self.layout = layout
        self.schema = schema
        self.schema_loader = schema_loader
        self.row_filter = row_filter
        self.arrow_schema = arrow_schema_of(list(schema.fields))
        self._codec = PartitionCodec(schema)
        self._paths = DataPaths(schema, self._codec)
        self._arrow_fs: Any = None
        import pyarrow.dataset as ds

        self._format = ds.ParquetFileFormat()
        self._entries = list(entries)
        self._selected: list[ScanEntry] | None = None
        self._guarantees: dict[bytes, Any] = {}
        self._null_partitions: dict[bytes, bool] = {}

    # --- which files ---------------------------------------------------------------------------------------------
    def path_of(self, entry: ScanEntry) -> str:
        return self.layout.join(self._paths.of_entry(entry))

    @property
    def _fs(self) -> Any:
        """The pyarrow filesystem of the fragments; on object stores it opens the scan's files with the sizes their
        entries record (no HEAD per file when an engine scans the dataset)."""
        if self._arrow_fs is None:
            known = self.io.is_object_store
            sizes = {self.path_of(e): e.file.file_size for e in self._entries} if known else None
            self._arrow_fs = self.io.arrow_filesystem(sizes)
        return self._arrow_fs

    def _fragment(self, entry: ScanEntry, guarantee: pc.Expression | None) -> ds.Fragment:
        path = self.path_of(entry)
        try:
            return self._format.make_fragment(
                path, self._fs, partition_expression=guarantee, file_size=entry.file.file_size
            )
        except TypeError:  # pyarrow without file_size=
            return self._format.make_fragment(path, self._fs, partition_expression=guarantee)

    def _partition_guarantee(self, entry: ScanEntry) -> pc.Expression | None:
        cached = self._guarantees.get(entry.partition, _MISSING)
        if cached is _MISSING:
            cached = partition_guarantee(self._codec.values(entry.partition), self.schema)
            self._guarantees[entry.partition] = cached
        return cached

    def files(self) -> list[ScanEntry]:
        """The entries the scan reads: every live entry, less those the row filter rules out (nothing opened)."""
        if self._selected is not None:
            return self._selected
        if self.row_filter is None or not self._entries:
            self._selected = list(self._entries)
            return self._selected
        fragments = []
        for entry in self._entries:
            guarantees = [self._partition_guarantee(entry)]
            if isinstance(entry, ManifestEntry):  # a ScanRef has no statistics: its file is kept (and filtered)
                guarantees.append(stats_guarantee(entry.file, self._file_schema(entry), self.schema))
            guarantee = and_all(guarantees)
            fragments.append(self._fragment(entry, guarantee))
        import pyarrow.dataset as ds

        probe = ds.FileSystemDataset(fragments, self.arrow_schema, self._format, self._fs)
        kept = {fragment.path for fragment in probe.get_fragments(filter=self.row_filter)}
        self._selected = [e for e, f in zip(self._entries, fragments) if f.path in kept]
        return self._selected

    def stats(self) -> ScanStats:
        return ScanStats(live_files=len(self._entries), selected_files=len(self.files()))

    # --- schema evolution ------------------------------------------------------------------------------------------
    def _file_schema(self, entry: ScanEntry) -> TableSchema:
        schema_id = entry.file.schema_id
        return self.schema if schema_id == self.schema.id else self.schema_loader(schema_id)

    def _readable_by_name(self, entry: ScanEntry) -> bool:
        """Whether pyarrow, matching columns by name, reads this file as the read schema means it (by field id)."""
        file_schema = self._file_schema(entry)
        if file_schema is self.schema:
            return True
        by_id = {f.id: f for f in file_schema.fields}
        by_name = {f.name: f for f in file_schema.fields}
        for field in self.schema.fields:
            old = by_id.get(field.id)
            if old is None:
                if field.name in by_name:  # another (dropped) column of that name: reading by name would be wrong
                    return False
                continue
            if old.name != field.name or (old.type.root, old.type.params) != (field.type.root, field.type.params):
                return False
        return True

    # --- reading ---------------------------------------------------------------------------------------------------
    def _unfiltered(self, guarantees: bool = True) -> ds.Dataset:
        """The files as one dataset; ``guarantees=False`` leaves out the fragments' partition expressions (then a
        file's partition columns read as the file stores them)."""
        direct: list[ScanEntry] = []
        by_id: list[ScanEntry] = []
        for entry in self.files():
            (direct if self._readable_by_name(entry) else by_id).append(entry)
        fragments = [self._fragment(e, self._partition_guarantee(e) if guarantees else None) for e in direct]
        from tableformat.io.arrow_fs import KnownSizeHandler

        handler = getattr(self._fs, "handler", None)
        if isinstance(handler, KnownSizeHandler):  # an object store: the next small files fetched as each opens
            handler.read_ahead([fragment.path for fragment in fragments], self.threads)
        import pyarrow.dataset as ds

        dataset: ds.Dataset = ds.FileSystemDataset(fragments, self.arrow_schema, self._format, self._fs)
        if by_id:
            reader = DataReader(self.io, self.layout, self.schema, self.schema_loader, self._codec, threads=1)
            in_memory = ds.InMemoryDataset(pa.concat_tables([reader.read_entry(e) for e in by_id]))
            dataset = ds.UnionDataset(self.arrow_schema, [dataset, in_memory])
        return dataset

    def dataset(self) -> ds.Dataset:
        """The scan as a pyarrow dataset (lazy: files are opened when it is scanned), filtered by the row filter."""
        dataset = self._unfiltered()
        return dataset if self.row_filter is None else dataset.filter(self.row_filter)

    def _columns(self, columns: Sequence[str] | None) -> list[str] | None:
        if columns is None:
            return None
        wanted = list(columns)
        unknown = [c for c in wanted if c not in self.arrow_schema.names]
        if unknown:
            raise ValidationError(f"unknown column(s) {unknown}; the table has {self.arrow_schema.names}")
        return wanted

    def projected_schema(self, columns: Sequence[str] | None = None) -> pa.Schema:
        """The schema of the rows read with ``columns`` (ValidationError for a column the table does not have)."""
        selected = self._columns(columns)
        return self.arrow_schema if selected is None else pa.schema([self.arrow_schema.field(c) for c in selected])

    def to_table(self, columns: Sequence[str] | None = None) -> pa.Table:
        """Every matching row (projected to ``columns``) in one Arrow table, files read in parallel."""
        selected = self._columns(columns)
        if self.io.is_object_store:
            tables = list(self._fetched(selected))
            return pa.concat_tables(tables) if tables else self.projected_schema(selected).empty_table()
        with _read_errors(self.io):
            if self.row_filter is None:
                table = self._table_as_stored(selected)
                if table is not None:
                    return table
            return self._unfiltered().to_table(columns=selected, filter=self.row_filter)

    def _table_as_stored(self, selected: list[str] | None) -> pa.Table | None:
        """Without a row filter: the rows read with each file's partition columns as the file stores them, or None
        if a file does not store them (then they are filled from the partition values: the caller reads again).

        Equal to the read with partition expressions for every file that stores its partition values (tablefmt's,
        pypaimon's and Paimon's writers all do), and cheaper: pyarrow replaces a column that a fragment's partition
        expression fixes by a constant built per batch, which costs more than reading the stored column. A file
        without the column reads it as nulls, so a null where the partition value is not null shows such a file.
        """
        keys = [k for k in self.schema.partition_keys if selected is None or k in selected]
        if keys and any(self._null_partition(e) for e in self.files()):
            return None  # a null partition value: nulls prove nothing, read with the partition expressions
        table = self._unfiltered(guarantees=False).to_table(columns=selected)
        if any(table.column(k).null_count for k in keys):
            return None
        return table

    def _null_partition(self, entry: ScanEntry) -> bool:
        """Whether a partition value of the entry's partition is null."""
        found = self._null_partitions.get(entry.partition)
        if found is None:
            found = self._null_partitions[entry.partition] = None in self._codec.values(entry.partition).values()
        return found

    def to_batches(self, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Matching rows batch by batch (bounded memory)."""
        selected = self._columns(columns)
        if self.io.is_object_store:
            for table in self._fetched(selected):
                yield from table.to_batches()
            return
        scanner = self._unfiltered().scanner(columns=selected, filter=self.row_filter)
        with _read_errors(self.io):
            yield from scanner.to_batches()

    def _fetched(self, selected: list[str] | None) -> Iterator[pa.Table]:
        """Object stores: the selected files' rows file by file, in order, each file fetched by :class:`DataReader`
        without a HEAD (one GET for a small file) and ``threads`` files at a time (bounded memory; pyarrow's
        scanner over fsspec reads about 4 at a time). Columns map by field id."""
        reader = DataReader(self.io, self.layout, self.schema, self.schema_loader, self._codec, threads=self.threads)
        with _read_errors(self.io):
            yield from reader.iter_tables(self.files(), selected, self.row_filter)


class _read_errors:
    """Map pyarrow's errors on a missing or damaged data file to tablefmt's (the caller may then find that the
    snapshot was expired while it was read)."""

    def __init__(self, file_io: FileIO) -> None:
        self.io = file_io

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if exc is None or not isinstance(exc, (OSError, pa.ArrowInvalid)) or isinstance(exc, StorageError):
            return False
        text = " ".join(str(exc).split())
        if isinstance(exc, FileNotFoundError) or "not found" in text.lower() or "no such file" in text.lower():
            raise MissingDataFileError(f"a data file referenced by the snapshot is missing: {text}") from None
        if isinstance(exc, pa.ArrowInvalid):
            raise CorruptMetadataError("<data file>", f"unreadable Parquet ({text})") from None
        raise StorageError(f"cannot read a data file: {text}") from exc
