"""Read planned data files into Arrow, mapping columns by field id so files of older schemas read correctly."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tableformat.codec.arrow_schema import arrow_schema_of, arrow_type_of
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, StorageError
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema


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

    def path_of(self, entry: ManifestEntry) -> str:
        """Where an entry's file lives (a FileIO path inside the table root; a file that records an external path is
        refused with UnsupportedFormatError: tablefmt reads files inside the table root only)."""
        return self.layout.join(self._paths.of_entry(entry))

    def read_entry(self, entry: ManifestEntry) -> pa.Table:
        """One data file as a Table with the current schema."""
        path = self.path_of(entry)
        try:
            table = pq.read_table(path, filesystem=self._fs, partitioning=None)  # never infer from k=v dirs
        except FileNotFoundError:
            raise StorageError(
                f"data file {self.io.url(path)} referenced by the snapshot is missing (deleted outside tablefmt?)"
            ) from None
        except (pa.ArrowInvalid, OSError) as exc:
            if "not found" in str(exc).lower() or "no such file" in str(exc).lower():
                raise StorageError(f"data file {self.io.url(path)} referenced by the snapshot is missing") from None
            raise CorruptMetadataError(self.io.url(path), f"unreadable Parquet ({exc})") from None
        return self._to_current(table, entry)

    def _to_current(self, table: pa.Table, entry: ManifestEntry) -> pa.Table:
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
        for entry in entries:
            yield from self.read_entry(entry).to_batches()
