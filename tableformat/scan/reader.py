"""Read planned data files into Arrow, mapping columns by field id so files of older schemas read correctly."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from tableformat.codec.arrow_schema import arrow_schema_of, arrow_type_of
from tableformat.codec.avro_projection import ScanEntry
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, MissingDataFileError
from tableformat.io.fileio import WHOLE_GET_BYTES, FileIO
from tableformat.layout import TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.parallel import bounded_map, executor
from tableformat.scan.record_ttl import RecordTTL

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
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


TAIL_BYTES = 64 << 10
"""The tail fetched first from a larger file: the footer of almost every file (pyarrow reads as much first)."""

RANGE_GAP_BYTES = 1 << 20
"""Column chunks closer than this are fetched in one ranged GET (the gap's bytes cost less than a round trip)."""


def _ttl_column(schema: TableSchema, ttl: RecordTTL | None) -> str | None:
    """The name the TTL's time field has in the schema a reader reads as (None: no TTL, or no such column)."""
    if ttl is None:
        return None
    return next((f.name for f in schema.fields if f.id == ttl.field_id), None)


def read_parquet(path: str, fs: Any, columns: Sequence[str] | None = None) -> pa.Table:
    """A whole Parquet file (its top-level ``columns`` only, when given), its dictionary-coded string and binary
    columns as dictionary arrays.

    Decoding such a column straight to plain strings costs pyarrow about twice as much CPU as reading its indices and
    expanding the dictionary afterwards (one ``take``, which :meth:`DataReader._to_current`'s cast to the table type
    does): 2.1 -> 0.95 ms for a 4-value column of 125k rows, 2.5 -> 1.7 ms for 10,000 values. The footer is read once
    and the column chunks in coalesced reads (``pre_buffer``), as ``pq.read_table`` does.
    """
    with fs.open_input_file(path) as source:
        return read_parquet_source(source, columns=columns)


def read_parquet_source(
    source: Any,
    metadata: Any = None,
    columns: Sequence[str] | None = None,
    pre_buffer: bool = True,
    *,
    dictionaries: bool = True,
) -> pa.Table:
    """:func:`read_parquet` of an open file (``pa.BufferReader`` of fetched bytes, ...): only the top-level
    ``columns`` the file has when given; ``metadata``: its footer, when already read. ``dictionaries=False``: every
    column read plainly (a merge takes rows across files: dictionaries would only be expanded later)."""
    metadata = pq.read_metadata(source) if metadata is None else metadata
    dictionary = dictionary_coded_columns(metadata) if dictionaries else []
    parquet = pq.ParquetFile(source, metadata=metadata, read_dictionary=dictionary or None, pre_buffer=pre_buffer)
    if columns is not None:
        stored = set(parquet.schema_arrow.names)
        columns = [name for name in columns if name in stored]
    return parquet.read(columns=columns, use_threads=True)


def without_positions(table: pa.Table, positions: Any) -> pa.Table:
    """``table`` (a whole data file, in file order) without the rows at ``positions`` (0-based row numbers, as a
    deletion vector lists them; out-of-range positions are ignored)."""
    import numpy as np

    keep = np.ones(table.num_rows, dtype=bool)
    marked = np.asarray(positions, dtype=np.int64)
    keep[marked[(marked >= 0) & (marked < table.num_rows)]] = False
    return table.filter(pa.array(keep))


def fetch_parquet(
    file_io: FileIO, path: str, size: int, columns: Sequence[str] | None = None, *, dictionaries: bool = True
) -> pa.Table:
    """:func:`read_parquet` of a file on an object store whose ``size`` is known (from its manifest entry), without
    asking the store for it: one GET of the whole file up to :data:`WHOLE_GET_BYTES`; above, a ranged GET of the
    tail (the footer), then ranged GETs of the column chunks of ``columns`` (all by default). ``dictionaries``: as
    :func:`read_parquet_source`."""
    stored: int | None = None
    try:
        if size <= WHOLE_GET_BYTES:
            data = file_io.read_bytes(path)
            stored = len(data)
            return read_parquet_source(pa.BufferReader(data), columns=columns, dictionaries=dictionaries)
        start = max(0, size - TAIL_BYTES)
        fetched = FetchedFile(file_io, path, size, [(start, file_io.read_range(path, start, size))])
        with pa.PythonFile(fetched, mode="r") as source:
            metadata = pq.read_metadata(source)  # from the tail; a longer footer fetches the rest (one more GET)
            for first, end in _coalesced(_chunk_ranges(metadata, columns), RANGE_GAP_BYTES):
                fetched.add(first, file_io.read_range(path, first, end))
            return read_parquet_source(source, metadata, columns, pre_buffer=False, dictionaries=dictionaries)
    except (pa.ArrowInvalid, OSError) as exc:
        if isinstance(exc, FileNotFoundError) or stored == size:
            raise  # missing (the caller says so), or damaged at the size recorded
        found = "" if stored is None else f", {stored} are stored"
        raise CorruptMetadataError(
            file_io.url(path), f"unreadable Parquet ({exc}); the manifest records {size} bytes{found}"
        ) from None


def _chunk_ranges(metadata: Any, columns: Sequence[str] | None) -> list[tuple[int, int]]:
    """(start, end) of every column chunk of the top-level ``columns`` (all when None), as pyarrow reads them."""
    wanted = None if columns is None else set(columns)
    schema = metadata.schema
    indexes = [
        i for i in range(metadata.num_columns)
        if wanted is None or schema.column(i).path.split(".")[0] in wanted
    ]  # fmt: skip
    ranges = []
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in indexes:
            chunk = row_group.column(index)
            first = chunk.data_page_offset
            if chunk.has_dictionary_page and 0 < chunk.dictionary_page_offset < first:
                first = chunk.dictionary_page_offset
            ranges.append((first, first + chunk.total_compressed_size))
    return ranges


def _coalesced(ranges: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """The ranges sorted, those less than ``gap`` apart (or overlapping) merged."""
    merged: list[tuple[int, int]] = []
    for first, end in sorted(ranges):
        if merged and first - merged[-1][1] < gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((first, end))
    return merged


class FetchedFile:
    """A read-only file object (for ``pa.PythonFile``) of known size over byte ranges fetched beforehand; a read
    outside them fetches what it asks for (correct, one more GET), so nothing relies on predicting pyarrow's reads.
    """

    def __init__(self, file_io: FileIO, path: str, size: int, pieces: Sequence[tuple[int, bytes]]) -> None:
        self.io = file_io
        self.path = path
        self.size = size
        self.closed = False
        self._position = 0
        self._starts: list[int] = []
        self._pieces: list[bytes] = []
        for first, data in pieces:
            self.add(first, data)

    def add(self, first: int, data: bytes) -> None:
        """Bytes fetched from offset ``first``."""
        index = bisect.bisect(self._starts, first)
        self._starts.insert(index, first)
        self._pieces.insert(index, data)

    def read(self, nbytes: int = -1) -> bytes:
        first = self._position
        end = self.size if nbytes is None or nbytes < 0 else min(self.size, first + nbytes)
        if end <= first:
            return b""
        index = bisect.bisect(self._starts, first) - 1
        if index >= 0 and end <= self._starts[index] + len(self._pieces[index]):
            offset = first - self._starts[index]
            data = self._pieces[index][offset : offset + end - first]
        else:
            data = self.io.read_range(self.path, first, end)
        self._position = first + len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._position, 2: self.size}[whence]
        self._position = base + offset
        return self._position

    def tell(self) -> int:
        return self._position

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._pieces = []


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

    def read_entry(self, entry: ScanEntry, columns: Sequence[str] | None = None) -> pa.Table:
        """One data file as a Table with the current schema, or its ``columns`` only (without expired rows when the
        reader has a TTL). On object stores the file is fetched without a HEAD (:func:`fetch_parquet`)."""
        wanted = None if columns is None or self._ttl_column is not None else list(columns)
        with self._errors(entry) as path:
            stored = None if wanted is None else self._stored_names(entry, wanted)
            if self.io.is_object_store:
                table = fetch_parquet(self.io, path, entry.file.file_size, stored)
            else:
                table = read_parquet(path, self._fs, stored)
        table = self._keep(self._to_current(table, entry, wanted))  # dictionary columns become plain in the cast
        return table if columns is None or wanted is not None else table.select(list(columns))

    def read_key_values(
        self,
        entry: ScanEntry,
        columns: Sequence[str],
        system_columns: Sequence[str],
        deleted_positions: Any = None,
    ) -> pa.Table:
        """One data file of a primary-key table: the table's ``columns`` (mapped by field id, as
        :meth:`read_entry`), then the file's ``system_columns`` (``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) as stored.
        Only those columns are read. ``deleted_positions``: the file's row positions its deletion vector marks
        (any integer sequence or array), dropped before anything else. No record TTL: the caller merges first."""
        stored = [*self._stored_names(entry, columns), *system_columns]
        with self._errors(entry) as path:
            if self.io.is_object_store:
                table = fetch_parquet(self.io, path, entry.file.file_size, stored, dictionaries=False)
            else:
                with self._fs.open_input_file(path) as source:
                    table = read_parquet_source(source, columns=stored, dictionaries=False)
        missing = [name for name in system_columns if name not in table.column_names]
        if missing:
            raise CorruptMetadataError(
                self.io.url(self.path_of(entry)), f"a primary-key data file without the column(s) {missing}"
            )
        if deleted_positions is not None and len(deleted_positions):
            table = without_positions(table, deleted_positions)
        current = self._to_current(table, entry, list(columns))
        for name in system_columns:
            current = current.append_column(name, table.column(name))
        return current

    def _stored_names(self, entry: ScanEntry, columns: Sequence[str]) -> list[str]:
        """The names the fields called ``columns`` have in the entry's file (by field id)."""
        ids = {f.name: f.id for f in self.schema.fields}
        names = [self.file_column_name(entry, ids[name]) for name in columns if name in ids]
        return [name for name in names if name is not None]

    def _keep(self, table: pa.Table) -> pa.Table:
        if self.record_ttl is None or self._ttl_column is None:
            return table
        return self.record_ttl.filter(table, self._ttl_column)

    def iter_entry_batches(
        self, entry: ManifestEntry, batch_rows: int = 65_536, *, footer: Callable[[Any], None] | None = None
    ) -> Iterator[pa.Table]:
        """One data file as Tables of at most ``batch_rows`` rows, in file order, streamed (bounded memory). Its
        errors are typed as :meth:`read_entry`'s, also those of reads after the open (an object store reads the
        file in ranges as the batches are taken). ``footer`` is called with the file's Parquet footer once it is
        open (read with the file: no request of its own)."""
        with self._errors(entry) as path:
            # Buffered column reads, no pre-buffering: memory stays at about one batch whatever the file's size
            # (the defaults read whole row groups' column chunks at once and keep them).
            parquet = pq.ParquetFile(path, filesystem=self._fs, buffer_size=STREAM_BUFFER_BYTES, pre_buffer=False)
        with parquet:
            if footer is not None:
                footer(parquet.metadata)
            batches = parquet.iter_batches(batch_size=batch_rows, use_threads=False)
            while True:
                with self._errors(entry):
                    batch = next(batches, None)
                if batch is None:
                    return
                yield self._keep(self._to_current(pa.Table.from_batches([batch]), entry))

    def footer(self, entry: ManifestEntry) -> Any:
        """The Parquet footer (``pyarrow.parquet.FileMetaData``) of a data file; reads only its tail."""
        with self._errors(entry) as path:
            return pq.read_metadata(path, filesystem=self._fs)

    def file_column_name(self, entry: ScanEntry, field_id: int) -> str | None:
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
            raise MissingDataFileError(
                f"data file {self.io.url(path)} referenced by the snapshot is missing (deleted outside tablefmt?)"
            ) from None
        except (pa.ArrowInvalid, OSError) as exc:
            text = str(exc).lower()  # ArrowInvalid: the bytes are there ("magic bytes not found" is no missing file)
            if not isinstance(exc, pa.ArrowInvalid) and ("not found" in text or "no such file" in text):
                raise MissingDataFileError(
                    f"data file {self.io.url(path)} referenced by the snapshot is missing"
                ) from None
            raise CorruptMetadataError(self.io.url(path), f"unreadable Parquet ({exc})") from None

    def _to_current(self, table: pa.Table, entry: ScanEntry, wanted: Sequence[str] | None = None) -> pa.Table:
        """The file's rows as the current schema (its ``wanted`` columns only, in that order, when given)."""
        file_schema = (
            self.schema if entry.file.schema_id == self.schema.id else self.schema_loader(entry.file.schema_id)
        )
        names_by_id = {f.id: f.name for f in file_schema.fields}
        partition_values = self.codec.values(entry.partition)
        fields = list(self.schema.fields)
        arrow_schema = self.arrow_schema
        if wanted is not None:
            by_name = {f.name: f for f in fields}
            fields = [by_name[name] for name in wanted]
            arrow_schema = pa.schema([self.arrow_schema.field(name) for name in wanted])
        columns = []
        for field in fields:
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
        return pa.Table.from_arrays(columns, schema=arrow_schema)

    def iter_tables(
        self,
        entries: Sequence[ScanEntry],
        columns: Sequence[str] | None = None,
        row_filter: pc.Expression | None = None,
    ) -> Iterator[pa.Table]:
        """Each live entry's rows matching ``row_filter``, its ``columns`` only when given, in file order: ``threads``
        files read at a time, at most that many read ahead of the caller (bounded memory)."""
        # a scan with a TTL plans full entries: the TTL prunes files it fully expired by their statistics
        entries = self.live_entries(cast("Sequence[ManifestEntry]", entries))
        read_columns = columns if row_filter is None else None  # the filter may need any column

        def read(entry: ScanEntry) -> pa.Table:
            table = self.read_entry(entry, read_columns)
            if row_filter is None:
                return table
            table = table.filter(row_filter)
            return table if columns is None else table.select(list(columns))

        with executor(min(self.threads, len(entries)), "tablefmt-read") as pool:
            for _entry, table in bounded_map(pool, read, entries, self.threads):
                yield table

    def read_all(self, entries: Sequence[ManifestEntry]) -> pa.Table:
        """All entries' rows as one Table (files read in parallel)."""
        tables = list(self.iter_tables(entries))
        return pa.concat_tables(tables) if tables else self.arrow_schema.empty_table()

    def batches(self, entries: Sequence[ManifestEntry]) -> Iterator[pa.RecordBatch]:
        """Record batches file by file (bounded memory; on object stores ``threads`` files fetched at a time)."""
        if self.io.is_object_store:
            for table in self.iter_tables(entries):
                yield from table.to_batches()
            return
        for entry in self.live_entries(entries):
            yield from self.read_entry(entry).to_batches()
