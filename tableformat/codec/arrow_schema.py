"""Conversion between pyarrow schemas and Paimon field types (the mapping pypaimon 2.1.0 uses)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.errors import ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.model.schema import DataField
from tableformat.model.types import DataType

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")


def paimon_type_of(arrow_type: pa.DataType, nullable: bool = True) -> DataType:
    """The Paimon type for an Arrow type; ValidationError for types tablefmt cannot store."""
    t = arrow_type
    params: tuple[int, ...]
    if pa.types.is_boolean(t):
        root, params = "BOOLEAN", ()
    elif pa.types.is_int8(t):
        root, params = "TINYINT", ()
    elif pa.types.is_int16(t):
        root, params = "SMALLINT", ()
    elif pa.types.is_int32(t):
        root, params = "INT", ()
    elif pa.types.is_int64(t):
        root, params = "BIGINT", ()
    elif pa.types.is_float32(t):
        root, params = "FLOAT", ()
    elif pa.types.is_float64(t):
        root, params = "DOUBLE", ()
    elif pa.types.is_decimal(t):
        root, params = "DECIMAL", (t.precision, t.scale)
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        root, params = "STRING", ()
    elif pa.types.is_fixed_size_binary(t):
        root, params = "BINARY", (t.byte_width,)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        root, params = "BYTES", ()
    elif pa.types.is_date32(t):
        root, params = "DATE", ()
    elif pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        root, params = ("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP"), (precision,)
    else:
        raise ValidationError(f"unsupported column type {t}: tablefmt stores atomic types only")
    return DataType(root, params, nullable)


def arrow_type_of(dtype: DataType) -> pa.DataType:
    """The Arrow type tablefmt reads a Paimon type as."""
    root = dtype.root
    simple: dict[str, pa.DataType] = {
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "CHAR": pa.string(),
        "VARCHAR": pa.string(),
        "STRING": pa.string(),
        "BYTES": pa.binary(),
        "VARBINARY": pa.binary(),
        "DATE": pa.date32(),
        "TIME": pa.time32("ms"),
    }
    if root in simple:
        return simple[root]
    if root == "DECIMAL":
        return pa.decimal128(dtype.precision, dtype.scale)
    if root == "BINARY":
        return pa.binary(dtype.params[0]) if dtype.params else pa.binary()
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = dtype.precision
        unit = "ms" if p <= 3 else ("us" if p <= 6 else "ns")
        return pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None)
    raise ValidationError(f"no Arrow type for {dtype}")


def fields_from_arrow(schema: pa.Schema) -> tuple[DataField, ...]:
    """Paimon fields (ids 0..n-1) for a new table's Arrow schema."""
    names = [f.name for f in schema]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValidationError(f"duplicate column name(s) {duplicates}")
    return tuple(
        DataField(id=index, name=field.name, type=paimon_type_of(field.type, field.nullable))
        for index, field in enumerate(schema)
    )


def arrow_schema_of(fields: tuple[DataField, ...] | list[DataField]) -> pa.Schema:
    """The Arrow schema of a table's fields."""
    return pa.schema([pa.field(f.name, arrow_type_of(f.type), nullable=f.type.nullable) for f in fields])
