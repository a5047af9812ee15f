"""Write Arrow data as Parquet data files (one or more per partition) with Paimon's naming and statistics."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tableformat.clock import local_wall_clock_ms
from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.codec.binary_row import encode_row
from tableformat.data_paths import DataPaths, require_data_inside_root
from tableformat.errors import ArgumentError, UnsupportedFormatError, ValidationError
from tableformat.io.fileio import FileIO
from tableformat.layout import NameFactory, TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import DataFileMeta, FileSource, SimpleStats
from tableformat.model.partition_time import PartitionTimeError, PartitionTimeExtractor
from tableformat.model.schema import TableSchema
from tableformat.model.types import DataType
from tableformat.options import (
    BUCKET,
    DATA_FILE_PREFIX,
    FILE_COMPRESSION,
    FILE_COMPRESSION_ZSTD_LEVEL,
    PARTITION_DEFAULT_NAME,
    PARTITION_TIMESTAMP_FORMAT_STRICT,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    ROW_GROUP_ROWS,
    TARGET_FILE_SIZE,
    TableOptions,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    pq = lazy_module("pyarrow.parquet")

UNAWARE_BUCKET = 0
UNAWARE_TOTAL_BUCKETS = -1
_NO_STATS_ROOTS = frozenset({"TIME"})

DICTIONARY_PAGE_LIMIT = 1024 * 1024
"""parquet-mr's dictionary page size (Paimon's and Spark's writers): a column whose dictionary would need more is
written plain."""


@dataclass(frozen=True, slots=True)
class NewDataFile:
    """A data file written but not yet committed."""

    partition: bytes
    partition_values: tuple[Any, ...]
    partition_path: str
    bucket: int
    total_buckets: int
    meta: DataFileMeta
    path: str


def conform(data: pa.Table | pa.RecordBatch, schema: TableSchema, *, fill_missing_columns: bool = False) -> pa.Table:
    """Check and cast incoming data to the table's Arrow schema (column order, types, nullability, UTC).

    Data lacking a table column is refused, unless ``fill_missing_columns`` is true and every missing column is a
    nullable column that is not a partition key (those are then filled with nulls).
    """
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    if not isinstance(table, pa.Table):
        raise ValidationError(f"expected a pyarrow Table or RecordBatch, got {type(data).__name__}")
    target = arrow_schema_of(list(schema.fields))
    incoming = set(table.column_names)
    missing = [f.name for f in target if f.name not in incoming]
    extra = sorted(incoming - set(target.names))
    if extra:
        raise ValidationError(f"data has column(s) {extra} that the table does not have; table columns: {target.names}")
    if missing:
        _check_missing(missing, target, schema, fill_missing_columns)
    columns = []
    for field in target:
        if field.name in missing:  # allowed by _check_missing: nullable, not a partition key, filling asked for
            columns.append(pa.nulls(table.num_rows, type=field.type))
            continue
        column = table.column(field.name)
        if pa.types.is_timestamp(column.type) and column.type.tz and not field.type.tz:
            column = pc.cast(column, pa.timestamp(column.type.unit, tz="UTC"))
        try:
            column = column.cast(field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValidationError(f"column {field.name!r}: cannot store {column.type} as {field.type}: {exc}") from None
        if not field.nullable and column.null_count:
            raise ValidationError(f"column {field.name!r} is NOT NULL but has {column.null_count} null value(s)")
        columns.append(column)
    conformed = pa.Table.from_arrays(columns, schema=target)
    _check_partition_times(conformed, schema)
    return conformed


def _check_partition_times(table: pa.Table, schema: TableSchema) -> None:
    """With ``partition.timestamp-format.strict``: refuse partition values that give no time (partition expiry
    could never expire them), before anything is written."""
    options = TableOptions(schema.options)
    if not schema.partition_keys or not options.require(PARTITION_TIMESTAMP_FORMAT_STRICT) or not table.num_rows:
        return
    extractor = PartitionTimeExtractor.create(
        schema.partition_fields,
        options.get(PARTITION_TIMESTAMP_PATTERN),
        options.get(PARTITION_TIMESTAMP_FORMATTER),
        options.require(PARTITION_DEFAULT_NAME),
    )
    keys = list(schema.partition_keys)
    for row in table.select(keys).group_by(keys, use_threads=False).aggregate([]).to_pylist():
        try:
            extractor.extract(row)
        except PartitionTimeError as exc:
            raise ValidationError(
                f"partition {row} gives no partition time ({exc}); partition.timestamp-format.strict=true refuses it"
            ) from None


def _check_missing(missing: list[str], target: pa.Schema, schema: TableSchema, fill: bool) -> None:
    """Refuse data that lacks table columns, naming them, unless filling is asked for and every one can be null."""
    keys = [name for name in missing if name in schema.partition_keys]
    required = [name for name in missing if name not in keys and not target.field(name).nullable]
    if fill and not keys and not required:
        return
    reasons = []
    if keys:
        default_name = TableOptions(schema.options).require(PARTITION_DEFAULT_NAME)
        reasons.append(
            f"partition key(s) {keys} must be present (rows without them would all land in partition {default_name})"
        )
    if required:
        reasons.append(f"NOT NULL column(s) {required} must be present")
    lacks = f"data lacks column(s) {missing} of the table {target.names}"
    if not reasons:
        raise ArgumentError(
            f"{lacks}; to write nulls into the missing nullable column(s), pass {{fill_missing_columns}}",
            fill_missing_columns=("True", ""),
        )
    raise ValidationError(f"{lacks}; {'; '.join(reasons)}")


def _stat_value(scalar: pa.Scalar) -> Any:
    value = scalar.as_py()
    if isinstance(value, float) and value != value:  # NaN carries no ordering
        return None
    return value


def dictionary_columns(table: pa.Table) -> list[str]:
    """The leaf columns to dictionary-encode, decided as parquet-mr decides for Paimon and Spark: a column keeps its
    dictionary only when dictionary plus indices are smaller than its plain values and the dictionary fits one
    dictionary page; otherwise it is written plain. (pyarrow keeps a dictionary whatever it costs: under zstd that
    made files with unique ids and timestamps twice the size Spark writes.) Booleans never gain from a dictionary;
    nested columns keep one on every leaf."""
    result: list[str] = []
    rows = table.num_rows
    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_nested(column.type):
            result += _leaf_paths(name, column.type)
            continue
        if rows == 0 or pa.types.is_boolean(column.type):
            continue
        distinct = int(pc.count_distinct(column, mode="only_valid").as_py() or 0)
        plain = column.nbytes
        dictionary = plain * distinct / rows  # the distinct values, written plain once
        indices = rows * max(1, (distinct - 1).bit_length()) / 8
        if dictionary + indices < plain and dictionary <= DICTIONARY_PAGE_LIMIT:
            result.append(name)
    return result


def kept_dictionary_columns(footer: Any, schema: pa.Schema, stored_names: Sequence[str | None]) -> list[str]:
    """The leaf columns to dictionary-encode when rewriting the rows of a Parquet file whose footer is ``footer``:
    those its writer kept a dictionary for in every row group, a decision made on all its rows (tablefmt's by
    :func:`dictionary_columns`; Paimon's and Spark's by parquet-mr). ``stored_names``: the name each column of
    ``schema`` has in the file (None: the file lacks it; written plain). Nested columns keep one on every leaf."""
    coded = set()
    for index in range(footer.num_columns):
        groups = range(footer.num_row_groups)
        if all(footer.row_group(g).column(index).has_dictionary_page for g in groups):
            coded.add(footer.schema.column(index).path)
    result: list[str] = []
    for field, stored in zip(schema, stored_names):
        if pa.types.is_nested(field.type):
            result += _leaf_paths(field.name, field.type)
        elif stored in coded and not pa.types.is_boolean(field.type):
            result.append(field.name)
    return result


def _leaf_paths(name: str, dtype: pa.DataType) -> list[str]:
    """Parquet column paths of the leaves of a column as pyarrow writes them (``a.b``, ``l.list.element``)."""
    if pa.types.is_struct(dtype):
        return [
            p
            for i in range(dtype.num_fields)
            for p in _leaf_paths(f"{name}.{dtype.field(i).name}", dtype.field(i).type)
        ]
    if pa.types.is_map(dtype):
        return _leaf_paths(f"{name}.key_value.key", dtype.key_type) + _leaf_paths(
            f"{name}.key_value.value", dtype.item_type
        )
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype):
        return _leaf_paths(f"{name}.list.element", dtype.value_type)
    return [name]


def value_stats(table: pa.Table, types: Sequence[DataType]) -> SimpleStats:
    """Min/max/null-count statistics over every column (stats mode 'full')."""
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int | None] = []
    for column, dtype in zip(table.columns, types):
        nulls.append(column.null_count)
        if dtype.root in _NO_STATS_ROOTS or column.null_count == len(column):
            mins.append(None)
            maxs.append(None)
            continue
        result = pc.min_max(column)
        mins.append(_stat_value(result["min"]))
        maxs.append(_stat_value(result["max"]))
    return SimpleStats(min_values=encode_row(mins, types), max_values=encode_row(maxs, types), null_counts=tuple(nulls))


def _split_by_partition(table: pa.Table, keys: Sequence[str]) -> list[tuple[tuple[Any, ...], pa.Table]]:
    if not keys:
        return [((), table)]
    if table.num_rows == 0:
        return []
    indexed = table.select(list(keys)).append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    groups = indexed.group_by(list(keys), use_threads=False).aggregate([("__row", "list")])
    result = []
    for index in range(groups.num_rows):
        values = tuple(groups.column(k)[index].as_py() for k in keys)
        rows = groups.column("__row_list")[index].values
        result.append((values, table.take(rows)))
    return result


def require_writable(schema: TableSchema) -> None:
    """UnsupportedFormatError, one line, for a table tablefmt does not write: a primary-key table (its files hold
    key-value records only Paimon's writers produce: ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) or a
    fixed-bucket table (every key in its bucket)."""
    if schema.primary_keys:  # checked first: a primary-key table usually has fixed buckets too
        raise UnsupportedFormatError(
            f"table has a primary key ({', '.join(schema.primary_keys)}): tablefmt writes append tables only; "
            "write primary-key tables with Paimon"
        )
    buckets = TableOptions(schema.options).require(BUCKET)
    if buckets != -1:
        raise UnsupportedFormatError(
            f"table has bucket={buckets}: tablefmt writes bucket-unaware append tables only (bucket=-1); it can read "
            "fixed-bucket tables"
        )


class DataFileWriter:
    """Writes the data of one commit; remembers every path it wrote so a failed commit can remove them."""

    def __init__(self, file_io: FileIO, layout: TableLayout, schema: TableSchema, names: NameFactory) -> None:
        options = TableOptions(schema.options)
        require_writable(schema)
        require_data_inside_root(options, file_io.url(layout.root), "write to")
        self.io = file_io
        self.layout = layout
        self.schema = schema
        self.names = names
        self.written: list[str] = []
        self._types = [f.type for f in schema.fields]
        self._partition_types = [f.type for f in schema.partition_fields]
        self._prefix = options.require(DATA_FILE_PREFIX)
        self._compression = options.require(FILE_COMPRESSION)
        self._zstd_level = options.require(FILE_COMPRESSION_ZSTD_LEVEL)
        self._row_group_rows = options.require(ROW_GROUP_ROWS)
        self._target_size = options.require(TARGET_FILE_SIZE)
        self._paths = DataPaths(schema)

    def write(self, data: pa.Table | pa.RecordBatch, *, fill_missing_columns: bool = False) -> list[NewDataFile]:
        """Write ``data`` (already conformed or not) into new data files; returns their metadata."""
        table = conform(data, self.schema, fill_missing_columns=fill_missing_columns)
        files: list[NewDataFile] = []
        for values, part in _split_by_partition(table, self.schema.partition_keys):
            files.extend(self._write_partition(values, part))
        return files

    def _write_partition(self, values: tuple[Any, ...], table: pa.Table) -> list[NewDataFile]:
        partition = encode_row(list(values), self._partition_types)
        rel_dir = self._paths.partition_dir(values)
        rows_per_file = table.num_rows
        if table.nbytes > self._target_size and table.num_rows:
            rows_per_file = max(1, int(table.num_rows * self._target_size / table.nbytes))
        result = []
        for start in range(0, max(table.num_rows, 1), max(rows_per_file, 1)):
            chunk = table.slice(start, rows_per_file)
            if chunk.num_rows == 0:
                continue
            result.append(self._write_file(values, partition, rel_dir, chunk))
        return result

    def _write_file(self, values: tuple[Any, ...], partition: bytes, rel_dir: str, chunk: pa.Table) -> NewDataFile:
        name = self.names.next(self._prefix, ".parquet")
        buffer = io.BytesIO()
        pq.write_table(
            chunk,
            buffer,
            compression=self._compression,
            compression_level=self._zstd_level if self._compression == "zstd" else None,
            row_group_size=self._row_group_rows,
            use_dictionary=dictionary_columns(chunk),
            write_page_index=True,
        )
        data = buffer.getvalue()
        path = self.layout.join(self._paths.file_of_values(values, UNAWARE_BUCKET, name))
        self.written.append(path)
        self.io.write_bytes(path, data)
        meta = DataFileMeta(
            file_name=name,
            file_size=len(data),
            row_count=chunk.num_rows,
            value_stats=value_stats(chunk, self._types),
            schema_id=self.schema.id,
            creation_time_ms=local_wall_clock_ms(),
            file_source=FileSource.APPEND,
            value_stats_cols=None,
        )
        return NewDataFile(
            partition=partition,
            partition_values=values,
            partition_path=rel_dir,
            bucket=UNAWARE_BUCKET,
            total_buckets=UNAWARE_TOTAL_BUCKETS,
            meta=meta,
            path=path,
        )
