"""Stream Arrow tables of one partition and bucket into new data files of about the target size.

The rewriter of compaction and record-level TTL feeds it one small table at a time (a few tens of thousands of
rows read from the old files); it buffers at most one row group in Arrow and one data file's Parquet bytes, so
its memory stays bounded by ``target-file-size`` plus a row group whatever the size of the files it rewrites.
Statistics (min/max/null count of every column, as :func:`~tableformat.commit.data_writer.value_stats` computes
them for appends) are accumulated across row groups.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tableformat.clock import local_wall_clock_ms
from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.codec.binary_row import encode_row
from tableformat.commit.data_writer import UNAWARE_TOTAL_BUCKETS, NewDataFile
from tableformat.data_paths import DataPaths
from tableformat.io.fileio import FileIO
from tableformat.layout import NameFactory, TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import DataFileMeta, FileSource, SimpleStats
from tableformat.model.schema import TableSchema
from tableformat.options import DATA_FILE_PREFIX, FILE_COMPRESSION, ROW_GROUP_ROWS, TableOptions

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    pq = lazy_module("pyarrow.parquet")

ROW_GROUP_BYTES = 64 * 1024**2
"""A row group is written once this much Arrow data is pending (or ``parquet.row-group.rows`` rows)."""
_NO_STATS_ROOTS = frozenset({"TIME"})


def _comparable(value: Any) -> Any:
    if isinstance(value, float) and value != value:  # NaN carries no ordering
        return None
    return value


class _RunningStats:
    """Min/max/null counts of every column over the row groups of one file."""

    def __init__(self, schema: TableSchema) -> None:
        self.types = [f.type for f in schema.fields]
        self.mins: list[Any] = [None] * len(self.types)
        self.maxs: list[Any] = [None] * len(self.types)
        self.nulls = [0] * len(self.types)

    def add(self, table: pa.Table) -> None:
        for index, (column, dtype) in enumerate(zip(table.columns, self.types)):
            self.nulls[index] += column.null_count
            if dtype.root in _NO_STATS_ROOTS or column.null_count == len(column):
                continue
            result = pc.min_max(column)
            low, high = _comparable(result["min"].as_py()), _comparable(result["max"].as_py())
            if low is not None and (self.mins[index] is None or low < self.mins[index]):
                self.mins[index] = low
            if high is not None and (self.maxs[index] is None or high > self.maxs[index]):
                self.maxs[index] = high

    def result(self) -> SimpleStats:
        return SimpleStats(
            min_values=encode_row(self.mins, self.types),
            max_values=encode_row(self.maxs, self.types),
            null_counts=tuple(self.nulls),
        )


class RollingFileWriter:
    """Writes the rows of one partition and bucket into new Parquet data files of about ``target_size`` bytes.

    ``write`` takes tables with the schema's Arrow schema (as :class:`~tableformat.scan.reader.DataReader` reads
    them); ``close`` flushes and returns the new files (not committed). ``written`` lists every path written, so a
    caller whose commit fails can remove them.
    """

    def __init__(
        self,
        file_io: FileIO,
        layout: TableLayout,
        schema: TableSchema,
        names: NameFactory,
        *,
        partition: bytes,
        partition_values: tuple[Any, ...],
        bucket: int,
        total_buckets: int = UNAWARE_TOTAL_BUCKETS,
        target_size: int,
        file_source: FileSource = FileSource.COMPACT,
    ) -> None:
        options = TableOptions(schema.options)
        self.io = file_io
        self.layout = layout
        self.schema = schema
        self.names = names
        self.partition = partition
        self.partition_values = partition_values
        self.bucket = bucket
        self.total_buckets = total_buckets
        self.target_size = target_size
        self.file_source = file_source
        self.written: list[str] = []
        self.files: list[NewDataFile] = []
        self._arrow_schema = arrow_schema_of(list(schema.fields))
        self._prefix = options.require(DATA_FILE_PREFIX)
        self._compression = options.require(FILE_COMPRESSION)
        self._group_rows = options.require(ROW_GROUP_ROWS)
        self._group_bytes = min(ROW_GROUP_BYTES, max(target_size, 1))
        self._paths = DataPaths(schema)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._buffer: io.BytesIO | None = None
        self._writer: pq.ParquetWriter | None = None
        self._stats: _RunningStats | None = None
        self._rows = 0
        self._dictionary: list[str] | None = None

    def keep_dictionaries(self, columns: Sequence[str]) -> None:
        """Dictionary-encode only ``columns`` (leaf paths) in the files opened from now on; by default every column
        has one until it outgrows its page (pyarrow's choice)."""
        self._dictionary = list(columns)

    def write(self, table: pa.Table) -> None:
        """Add rows (in order); a row group is written when enough are pending, a file closed at the target size."""
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._pending_rows += table.num_rows
        self._pending_bytes += table.nbytes
        if self._pending_rows >= self._group_rows or self._pending_bytes >= self._group_bytes:
            self._flush_group()

    def close(self) -> list[NewDataFile]:
        """Write what is pending and close the current file; the new files, in write order."""
        self._flush_group()
        self._close_file()
        return list(self.files)

    def _flush_group(self) -> None:
        if not self._pending:
            return
        group = pa.concat_tables(self._pending).cast(self._arrow_schema)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        if self._writer is None:
            self._buffer = io.BytesIO()
            self._writer = pq.ParquetWriter(
                self._buffer,
                self._arrow_schema,
                compression=self._compression,
                compression_level=1 if self._compression == "zstd" else None,
                use_dictionary=True if self._dictionary is None else self._dictionary,
                write_page_index=True,
            )
            self._stats = _RunningStats(self.schema)
            self._rows = 0
        self._writer.write_table(group, row_group_size=self._group_rows)
        assert self._stats is not None and self._buffer is not None
        self._stats.add(group)
        self._rows += group.num_rows
        if self._buffer.tell() >= self.target_size:
            self._close_file()

    def _close_file(self) -> None:
        if self._writer is None or self._buffer is None or self._stats is None:
            return
        self._writer.close()
        data = self._buffer.getvalue()
        stats, rows = self._stats, self._rows
        self._writer, self._buffer, self._stats = None, None, None
        name = self.names.next(self._prefix, ".parquet")
        path = self.layout.join(self._paths.file_of_values(self.partition_values, self.bucket, name))
        self.written.append(path)
        self.io.write_bytes(path, data)
        meta = DataFileMeta(
            file_name=name,
            file_size=len(data),
            row_count=rows,
            value_stats=stats.result(),
            schema_id=self.schema.id,
            creation_time_ms=local_wall_clock_ms(),
            file_source=self.file_source,
            value_stats_cols=None,
        )
        self.files.append(
            NewDataFile(
                partition=self.partition,
                partition_values=self.partition_values,
                partition_path=self._paths.partition_dir(self.partition_values),
                bucket=self.bucket,
                total_buckets=self.total_buckets,
                meta=meta,
                path=path,
            )
        )
