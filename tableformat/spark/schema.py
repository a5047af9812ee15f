"""Spark <-> table schema mapping, and casting Arrow data to exactly what Spark expects.

Table types map to Spark as Paimon's Spark connector maps them: TIMESTAMP_LTZ -> TimestampType (an instant),
TIMESTAMP -> TimestampNTZType (a wall-clock time), CHAR/VARCHAR/STRING -> StringType, BINARY/VARBINARY/BYTES ->
BinaryType. Spark timestamps have microsecond precision: millisecond columns widen, nanosecond columns truncate.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
)

from tableformat.errors import ValidationError
from tableformat.model.schema import DataField
from tableformat.model.types import DataType as TableType

MAX_BATCH_ROWS = 131_072
"""Rows per Arrow batch handed to Spark by a reader (files' row groups can hold a million rows)."""

_SIMPLE: dict[str, DataType] = {
    "BOOLEAN": BooleanType(),
    "TINYINT": ByteType(),
    "SMALLINT": ShortType(),
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "FLOAT": FloatType(),
    "DOUBLE": DoubleType(),
    "CHAR": StringType(),
    "VARCHAR": StringType(),
    "STRING": StringType(),
    "BINARY": BinaryType(),
    "VARBINARY": BinaryType(),
    "BYTES": BinaryType(),
    "DATE": DateType(),
    "TIMESTAMP": TimestampNTZType(),
    "TIMESTAMP_LTZ": TimestampType(),
}


def spark_type_of(dtype: TableType) -> DataType:
    """The Spark type a table column reads as."""
    if dtype.root in _SIMPLE:
        return _SIMPLE[dtype.root]
    if dtype.root == "DECIMAL":
        if dtype.precision > 38:
            raise ValidationError(f"{dtype} has more digits than Spark's DECIMAL(38) allows")
        return DecimalType(dtype.precision, dtype.scale)
    if dtype.root == "TIME":
        return TimeType()
    raise ValidationError(f"column type {dtype} has no Spark equivalent")


def spark_schema_of(fields: Sequence[DataField]) -> StructType:
    """The Spark schema of a table's fields (nullability kept)."""
    return StructType([StructField(f.name, spark_type_of(f.type), nullable=f.type.nullable) for f in fields])


def arrow_schema_for_spark(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires from a reader for ``schema`` (timestamps in UTC, no large types)."""
    return to_arrow_schema(schema, timezone="UTC")


def arrow_schema_for_new_table(schema: StructType) -> pa.Schema:
    """The Arrow schema a table created from a Spark DataFrame gets (TimestampType -> TIMESTAMP_LTZ)."""
    try:
        return arrow_schema_for_spark(schema)
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise ValidationError(f"cannot create a table from Spark schema {schema.simpleString()}: {exc}") from None


def resolve_columns(requested: Sequence[str], available: Sequence[str]) -> list[str]:
    """Map requested column names onto available ones: exact match first, then case-insensitive (as Spark does)."""
    exact = set(available)
    folded: dict[str, list[str]] = {}
    for name in available:
        folded.setdefault(name.lower(), []).append(name)
    result = []
    for name in requested:
        if name in exact:
            result.append(name)
            continue
        matches = folded.get(name.lower(), [])
        if len(matches) != 1:
            what = "is ambiguous" if matches else "does not exist"
            raise ValidationError(f"column {name!r} {what} in the table; table columns: {list(available)}")
        result.append(matches[0])
    return result


def cast_column(column: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Cast one column to Spark's Arrow type; nanosecond timestamps truncate to microseconds."""
    if column.type == target:
        return column
    if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(target):
        return pc.cast(column, target, safe=column.type.unit != "ns")
    return column.cast(target)


def to_spark_batches(table: pa.Table, columns: Sequence[str], target: pa.Schema) -> list[pa.RecordBatch]:
    """Record batches of ``table`` carrying exactly ``target`` (names, order, types, nullability)."""
    arrays = [cast_column(table.column(name), field.type) for name, field in zip(columns, target)]
    shaped = pa.Table.from_arrays(arrays, schema=target)
    return [b for b in shaped.to_batches(max_chunksize=MAX_BATCH_ROWS) if b.num_rows]


def normalise_timestamps(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Spark hands writers timestamps in the session time zone: relabel them as UTC (the same instants)."""
    if not any(pa.types.is_timestamp(f.type) and f.type.tz not in (None, "UTC") for f in batch.schema):
        return batch
    arrays = []
    fields = []
    for field, column in zip(batch.schema, batch.columns):
        if pa.types.is_timestamp(field.type) and field.type.tz not in (None, "UTC"):
            target = pa.timestamp(field.type.unit, tz="UTC")
            column = column.cast(target)
            field = field.with_type(target)
        arrays.append(column)
        fields.append(field)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
