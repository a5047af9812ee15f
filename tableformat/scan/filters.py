"""Row filters of a scan and what each data file guarantees about its rows (for pruning files before opening them).

A filter is a ``pyarrow.compute`` expression (``pc.field("dt") >= date(2024, 1, 1)``) or a simple predicate in
pyarrow's DNF form (``[("dt", ">=", date(2024, 1, 1)), ("id", "in", [1, 2])]``, or a list of such lists for an OR).

A file's *guarantee* is an expression true for every row of the file: its partition values (``dt == 2024-01-01``,
``is_null(dt)`` for the default partition) and, from the manifest's value statistics, ``c >= min`` and ``c <= max``
per column (each OR ``is_null(c)`` when the file may hold nulls in ``c``). pyarrow decides, from the guarantee alone,
whether the filter can be true for some row (``Dataset.get_fragments(filter=...)``); files for which it cannot are
never opened. Statistics only decide which files are opened, never which rows are returned: the filter is always
applied to the rows read. Columns whose statistics cannot be trusted as bounds are left out of the guarantee
(floating point, where NaN orders nowhere; binary; TIME; timestamps finer than microseconds, which decode rounded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from tableformat.codec.arrow_schema import arrow_type_of
from tableformat.codec.binary_row import decode_row, row_arity
from tableformat.errors import CorruptMetadataError, ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import DataFileMeta
from tableformat.model.schema import DataField, TableSchema
from tableformat.model.types import BINARY_ROOTS, DataType

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    pq = lazy_module("pyarrow.parquet")

RowFilter: TypeAlias = "pc.Expression | Sequence[Any]"
"""What ``filter=`` accepts: a pyarrow compute expression, or a DNF list of ``(column, op, value)`` tuples."""

_NO_BOUNDS_ROOTS = frozenset({"FLOAT", "DOUBLE", "TIME", *BINARY_ROOTS})


def as_expression(row_filter: RowFilter | None, schema: pa.Schema) -> pc.Expression | None:
    """The filter as one expression over ``schema``'s columns (None: every row); ValidationError if unusable."""
    if row_filter is None:
        return None
    if isinstance(row_filter, pc.Expression):
        expression = row_filter
    elif isinstance(row_filter, (list, tuple)):
        if not row_filter:
            return None
        try:
            expression = pq.filters_to_expression(list(row_filter))
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"invalid filter {row_filter!r}: {exc}") from None
    else:
        raise ValidationError(
            f"a filter is a pyarrow.compute expression or a list of (column, op, value) tuples, got "
            f"{type(row_filter).__name__}"
        )
    import pyarrow.dataset as ds  # here, not at import: it loads pandas when present

    try:  # binds the expression to the schema: unknown columns and impossible comparisons fail here, once
        ds.InMemoryDataset(schema.empty_table()).scanner(filter=expression, columns=[])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError) as exc:
        raise ValidationError(f"invalid filter {expression}: {' '.join(str(exc).split())}") from None
    return expression


def and_all(expressions: Sequence[pc.Expression | None]) -> pc.Expression | None:
    """The conjunction of the given expressions (None ones skipped; None when none is left)."""
    present = [e for e in expressions if e is not None]
    if not present:
        return None
    result = present[0]
    for expression in present[1:]:
        result = result & expression
    return result


def _literal(value: Any, dtype: DataType) -> pa.Scalar:
    return pa.scalar(value, type=arrow_type_of(dtype))


def partition_guarantee(values: Mapping[str, Any], schema: TableSchema) -> pc.Expression | None:
    """``k == v`` (or ``is_null(k)``) for every partition column: what the file's directory promises."""
    terms: list[pc.Expression | None] = []
    for field in schema.partition_fields:
        value = values.get(field.name)
        column = pc.field(field.name)
        terms.append(column.is_null() if value is None else column == _literal(value, field.type))
    return and_all(terms)


def _stats_fields(meta: DataFileMeta, file_schema: TableSchema) -> list[DataField] | None:
    """The file-schema fields the value statistics cover, in stats order (None: no usable statistics)."""
    stats = meta.value_stats
    if len(stats.min_values) <= 12 or len(stats.max_values) <= 12:
        return None  # arity-0 rows: no statistics (pypaimon's default, stats mode none)
    if meta.value_stats_cols is None:
        fields = list(file_schema.fields)
    else:
        by_name = {f.name: f for f in file_schema.fields}
        if any(name not in by_name for name in meta.value_stats_cols):
            return None
        fields = [by_name[name] for name in meta.value_stats_cols]
    if row_arity(stats.min_values) != len(fields) or row_arity(stats.max_values) != len(fields):
        return None
    return fields


def _bounded(dtype: DataType) -> bool:
    if dtype.root in _NO_BOUNDS_ROOTS:
        return False
    return not (dtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and dtype.precision > 6)


_FileStats: TypeAlias = "tuple[list[DataField], list[Any], list[Any], list[int | None]]"


def _file_stats(meta: DataFileMeta, file_schema: TableSchema) -> _FileStats | None:
    """The file's value statistics decoded: (fields, mins, maxs, null counts), or None when there are none usable."""
    fields = _stats_fields(meta, file_schema)
    if fields is None:
        return None
    types = [f.type for f in fields]
    try:
        mins = decode_row(meta.value_stats.min_values, types)
        maxs = decode_row(meta.value_stats.max_values, types)
    except CorruptMetadataError:
        return None
    return fields, mins, maxs, list(meta.value_stats.null_counts or ())


def stats_guarantee(meta: DataFileMeta, file_schema: TableSchema, read_schema: TableSchema) -> pc.Expression | None:
    """Bounds from the file's value statistics, for the read schema's columns (matched by field id, same type); a
    column the file's schema does not have (added later) reads as nulls only."""
    known = {f.id for f in file_schema.fields}
    absent = [pc.field(f.name).is_null() for f in read_schema.fields if f.id not in known]
    stats = _file_stats(meta, file_schema)
    if stats is None:
        return and_all(absent)
    fields, mins, maxs, nulls = stats
    read_by_id = {f.id: f for f in read_schema.fields}
    terms: list[pc.Expression | None] = list(absent)
    for index, field in enumerate(fields):
        target = read_by_id.get(field.id)
        if target is None or (target.type.root, target.type.params) != (field.type.root, field.type.params):
            continue
        null_count = nulls[index] if index < len(nulls) else None
        if null_count is not None and null_count == meta.row_count > 0:
            terms.append(pc.field(target.name).is_null())  # only nulls: true for any type
        elif _bounded(field.type):
            terms.append(_column_bounds(target, mins[index], maxs[index], null_count))
    return and_all(terms)


@dataclass(frozen=True, slots=True)
class ColumnRange:
    """What a file's value statistics say about one column: only nulls, or every non-null value in [low, high]."""

    only_nulls: bool
    low: Any = None
    high: Any = None


ONLY_NULLS = ColumnRange(only_nulls=True)


def column_range(
    meta: DataFileMeta, file_schema: TableSchema, read_schema: TableSchema, name: str
) -> ColumnRange | None:
    """The read schema's column ``name`` in a file, as :func:`stats_guarantee` bounds it (the same statistics
    trusted, matched by field id and type): a column the file's schema lacks holds only nulls; None when the
    statistics give no bounds (none kept, another type, a type whose statistics are no bounds, null bounds)."""
    target = next(f for f in read_schema.fields if f.name == name)
    if all(f.id != target.id for f in file_schema.fields):
        return ONLY_NULLS
    stats = _file_stats(meta, file_schema)
    if stats is None:
        return None
    fields, mins, maxs, nulls = stats
    index = next((i for i, f in enumerate(fields) if f.id == target.id), None)
    if index is None:
        return None
    field = fields[index]
    if (target.type.root, target.type.params) != (field.type.root, field.type.params):
        return None
    null_count = nulls[index] if index < len(nulls) else None
    if null_count is not None and null_count == meta.row_count > 0:
        return ONLY_NULLS
    if not _bounded(field.type) or mins[index] is None or maxs[index] is None:
        return None
    return ColumnRange(only_nulls=False, low=mins[index], high=maxs[index])


def _column_bounds(field: DataField, low: Any, high: Any, null_count: int | None) -> pc.Expression | None:
    column = pc.field(field.name)
    if low is None or high is None:
        return None
    try:
        lower = column >= _literal(low, field.type)
        upper = column <= _literal(high, field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if null_count == 0:
        return lower & upper
    return (lower | column.is_null()) & (upper | column.is_null())
