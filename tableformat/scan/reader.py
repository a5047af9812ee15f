"""Read planned data files into Arrow, mapping columns by field id so files of older schemas read correctly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tableformat.codec.arrow_schema import arrow_schema_of, arrow_type_of
from tableformat.codec.avro_projection import ScanEntry
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, StorageError
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.scan.record_ttl import RecordTTL

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pq = lazy_module("pyarrow.parquet")

STREAM_BUFFER_BYTES = 1 << 20
"""Read buffer of :meth:`DataReader.iter_entry_batches` (per column)."""

DICTIONARY_PAGE_ALLOWANCE = 2 << 20
"""Bytes a column chunk's dictionary page may take when judging whether its data pages are all dictionary indices
(writers cap dictionaries at about 1 MiB: pyarrow's ``dictionary_pagesize_limit``, parquet-mr's
``parquet.dictionary.page.size``)."""

INDEX_BYTES_PER_VALUE = 3
"""Bytes per value a dictionary-coded data page may take (a 1 MiB dictionary of strings of 4 bytes or more has at
most 2^18 entries: 18-bit indices, 2.25 bytes, plus definition levels and page headers)."""


def _ttl_column(schema: TableSchema, ttl: RecordTTL | None) -> str | None:
    """The name the TTL's time field has in the schema a reader reads as (None: no TTL, or no such column)."""
    if ttl is None:
        return None
    return next((f.name for f in schema.fields if f.id == ttl.field_id), None)


def read_parquet(path: str, fs: Any) -> pa.Table:
    """A whole Parquet file, its dictionary-coded string and binary columns as dictionary arrays.

    Decoding such a column straight to plain strings costs pyarrow about twice as much CPU as reading its indices and
    expanding the dictionary afterwards (one ``take``, which :meth:`DataReader._to_current`'s cast to the table type
    does): 2.1 -> 0.95 ms for a 4-value column of 125k rows, 2.5 -> 1.7 ms for 10,000 values. The footer is read once
    and the column chunks in coalesced reads (``pre_buffer``), as ``pq.read_table`` does.
    """
    with fs.open_input_file(path) as source:
        metadata = pq.read_metadata(source)
        columns = dictionary_coded_columns(metadata)
        parquet = pq.ParquetFile(source, metadata=metadata, read_dictionary=columns or None, pre_buffer=True)
        return parquet.read(use_threads=True)


def dictionary_coded_columns(metadata: Any) -> list[str]:
    """The top-level BYTE_ARRAY columns whose every column chunk is a dictionary page plus dictionary indices.

    A chunk whose dictionary overflowed falls back to plain pages; read as a dictionary, pyarrow would hash every
    plain value (2.7x slower than a plain read), so a chunk larger than one dictionary page plus indices is read
    plainly. Parquet records no page encodings per chunk that tell the two apart (``PLAIN`` also names the
    dictionary page's encoding), hence the size rule. It errs towards a plain read (a dictionary larger than the
    allowance), or, when a chunk fell back for less than about one more megabyte of plain values, towards a
    dictionary read of those (correct, and slower for them only).
    """
    schema = metadata.schema
    result = []
    for index in range(metadata.num_columns):
        column = schema.column(index)
        if column.physical_type != "BYTE_ARRAY" or column.max_repetition_level != 0 or column.path != column.name:
            continue
        chunks = [metadata.row_group(g).column(index) for g in range(metadata.num_row_groups)]
        if chunks and all(
            chunk.has_dictionary_page
            and chunk.total_uncompressed_size <= DICTIONARY_PAGE_ALLOWANCE + INDEX_BYTES_PER_VALUE * chunk.num_values
            for chunk in chunks
        ):
            result.append(column.name)
    return result


class DataReader:
    """Reads data files of one table as the table's current schema."""

    def __init__(
        self,
        file_io: FileIO,
        layout: TableLayout,
        schema: TableSchema,
        schema_loader: Callable[[int], TableSchema],
        codec: PartitionCodec,
        threads: int = 4,
        *,
        record_ttl: RecordTTL | None = None,
    ) -> None:
        self.io = file_io
        self.layout = layout
        self.schema = schema
        self.schema_loader = schema_loader
        self.codec = codec
        self.threads = threads
        self.arrow_schema = arrow_schema_of(list(schema.fields))
        self._paths = DataPaths(schema, codec)
        self._fs = file_io.arrow_filesystem()
        self.record_ttl = record_ttl
        """The scan's row filter (:func:`tableformat.scan.record_ttl.scan_record_ttl`): expired files are never
        opened, expired rows never returned. None = every row."""
        self._ttl_column = _ttl_column(schema, record_ttl)

    def path_of(self, entry: ScanEntry) -> str:
        """Where an entry's file lives (a FileIO path inside the table root; a file that records an external path is
        refused with UnsupportedFormatError: tablefmt reads files inside the table root only)."""
        return self.layout.join(self._paths.of_entry(entry))

    def read_entry(self, entry: ScanEntry) -> pa.Table:
        """One data file as a Table with the current schema (without expired rows when the reader has a TTL)."""
        with self._errors(entry) as path:
            table = read_parquet(path, self._fs)
        return self._keep(self._to_current(table, entry))  # dictionary columns become plain ones in the cast

    def _keep(self, table: pa.Table) -> pa.Table:
        if self.record_ttl is None or self._ttl_column is None:
            return table
        return self.record_ttl.filter(table, self._ttl_column)

    def iter_entry_batches(self, entry: ManifestEntry, batch_rows: int = 65_536) -> Iterator[pa.Table]:
        """One data file as Tables of at most ``batch_rows`` rows, in file order, streamed (bounded memory)."""
        with self._errors(entry) as path:
            # Buffered column reads, no pre-buffering: memory stays at about one batch whatever the file's size
            # (the defaults read whole row groups' column chunks at once and keep them).
            parquet = pq.ParquetFile(path, filesystem=self._fs, buffer_size=STREAM_BUFFER_BYTES, pre_buffer=False)
        with parquet:
            for batch in parquet.iter_batches(batch_size=batch_rows, use_threads=False):
                yield self._keep(self._to_current(pa.Table.from_batches([batch]), entry))

    def footer(self, entry: ManifestEntry) -> Any:
        """The Parquet footer (``pyarrow.parquet.FileMetaData``) of a data file; reads only its tail."""
        with self._errors(entry) as path:
            return pq.read_metadata(path, filesystem=self._fs)

    def file_column_name(self, entry: ManifestEntry, field_id: int) -> str | None:
        """The name a field has in the schema a data file was written with (None: the file predates it)."""
        schema_id = entry.file.schema_id
        file_schema = self.schema if schema_id == self.schema.id else self.schema_loader(schema_id)
        return next((f.name for f in file_schema.fields if f.id == field_id), None)

    def live_entries(self, entries: Sequence[ManifestEntry]) -> Sequence[ManifestEntry]:
        """``entries`` without the files the TTL says are fully expired (never opened)."""
        return entries if self.record_ttl is None else self.record_ttl.prune(entries, self.schema_loader)

    @contextmanager
    def _errors(self, entry: ScanEntry) -> Iterator[str]:
        path = self.path_of(entry)
        try:
            yield path
        except FileNotFoundError:
            raise StorageError(
                f"data file {self.io.url(path)} referenced by the snapshot is missing (deleted outside tablefmt?)"
            ) from None
        except (pa.ArrowInvalid, OSError) as exc:
            if "not found" in str(exc).lower() or "no such file" in str(exc).lower():
                raise StorageError(f"data file {self.io.url(path)} referenced by the snapshot is missing") from None
            raise CorruptMetadataError(self.io.url(path), f"unreadable Parquet ({exc})") from None

    def _to_current(self, table: pa.Table, entry: ScanEntry) -> pa.Table:
        file_schema = (
            self.schema if entry.file.schema_id == self.schema.id else self.schema_loader(entry.file.schema_id)
        )
        names_by_id = {f.id: f.name for f in file_schema.fields}
        partition_values = self.codec.values(entry.partition)
        columns = []
        for field in self.schema.fields:
            target = arrow_type_of(field.type)
            source_name = names_by_id.get(field.id)
            if source_name is not None and source_name in table.column_names:
                column: Any = table.column(source_name)
                if column.type != target:
                    column = column.cast(target)
            elif field.name in partition_values:
                column = pa.array([partition_values[field.name]] * table.num_rows, type=target)
            else:
                column = pa.nulls(table.num_rows, type=target)
            columns.append(column)
        return pa.Table.from_arrays(columns, schema=self.arrow_schema)

    def read_all(self, entries: Sequence[ManifestEntry]) -> pa.Table:
        """All entries' rows as one Table (files read in parallel)."""
        entries = self.live_entries(entries)
        if not entries:
            return self.arrow_schema.empty_table()
        if len(entries) == 1 or self.threads <= 1:
            tables = [self.read_entry(e) for e in entries]
        else:
            with ThreadPoolExecutor(max_workers=min(self.threads, len(entries))) as pool:
                tables = list(pool.map(self.read_entry, entries))
        return pa.concat_tables(tables)

    def batches(self, entries: Sequence[ManifestEntry]) -> Iterator[pa.RecordBatch]:
        """Record batches file by file (bounded memory)."""
        for entry in self.live_entries(entries):
            yield from self.read_entry(entry).to_batches()
