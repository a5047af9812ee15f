"""Which rows an erasure removes: a SQL boolean expression (``--where``) or a file of keys (``--keys-file``).

``--where`` is parsed by sqlglot (comparisons, IN, BETWEEN, IS [NOT] NULL, AND/OR/NOT, typed literals such as
``DATE '2024-01-01'`` or ``TIMESTAMP '2024-01-01 10:00:00'``) and translated to one ``pyarrow.compute`` expression
over the table's columns, every literal converted to its column's type; an unknown column or a literal that does
not fit its column is an ArgumentError (the CLI's exit 2) before anything is read. A row matches when the
expression is TRUE (SQL: NULL does not match).

``--keys-file`` is a Parquet or CSV file of keys: its column (``--key COL=FILECOL``, FILECOL defaulting to COL) is
cast to the table column's type, nulls dropped, made distinct and sorted. Rows are matched with ``is_in`` against
that set (a hash lookup per row, whatever the number of keys), never with an expression listing every key; files
are pruned by their key column's statistics against the sorted keys (a file is opened only when a key falls
within its min..max).
"""

from __future__ import annotations

import decimal
import io
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.errors import ArgumentError
from tableformat.io.factory import open_location, split_scheme
from tableformat.lazy_module import lazy_module
from tableformat.model.schema import TableSchema
from tableformat.scan.filters import ColumnRange, as_expression

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import sqlglot
    import sqlglot.expressions as sql
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    sqlglot = lazy_module("sqlglot")
    sql = lazy_module("sqlglot.expressions")


@dataclass(frozen=True, slots=True)
class EraseFilter:
    """The rows to erase, ready to prune files and to test rows."""

    description: str
    """For results and logs: ``where <sql>`` or ``keys of <file> (<n> keys)``."""
    columns: tuple[str, ...]
    """The table columns a row is judged by (the only ones read to find matches)."""
    prune: pc.Expression | None
    """True for every row that may match: files whose partition and statistics rule it out are not opened."""
    expression: pc.Expression | None = None
    """``--where``: the expression (a row matches when it is TRUE)."""
    key_column: str = ""
    keys: pa.Array | None = None
    """``--keys-file``: the distinct keys, sorted, of the key column's type."""

    def matches(self, table: pa.Table) -> pa.ChunkedArray:
        """A boolean per row of ``table`` (which holds at least :attr:`columns`): True where the row is erased."""
        if self.keys is not None:
            return pc.is_in(table[self.key_column], value_set=self.keys)
        assert self.expression is not None
        import pyarrow.dataset as ds  # here, not at import: it loads pandas when present

        projected = ds.dataset(table).to_table(columns={"m": pc.coalesce(self.expression, pa.scalar(False))})
        return projected["m"]

    def prunes_by_keys(self, schema: TableSchema) -> bool:
        """Whether files are pruned by :meth:`may_hold` (a keys filter on a column that is not a partition key)
        rather than by the :attr:`prune` expression."""
        return self.keys is not None and self.key_column not in schema.partition_keys

    def may_hold(self, ranges: Sequence[ColumnRange | None]) -> list[bool]:
        """Per file, whether its key column's statistics (``ranges``, from :func:`column_range`) leave room for one
        of the keys: a file of only nulls holds none, one without bounds may hold any. The bounds are converted to
        the keys' type as the prune expression's literals are, and looked up in the sorted keys in one search."""
        import numpy as np

        assert self.keys is not None
        result = [bounds is None for bounds in ranges]
        bounded = [(i, r) for i, r in enumerate(ranges) if r is not None and not r.only_nulls]
        if not bounded or not len(self.keys):
            return result
        try:
            lows = pa.array([r.low for _, r in bounded], type=self.keys.type)
            highs = pa.array([r.high for _, r in bounded], type=self.keys.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
            return [bounds is None or not bounds.only_nulls for bounds in ranges]  # not comparable: opened, as unknown
        keys = self.keys.to_numpy(zero_copy_only=False)
        first = np.searchsorted(keys, lows.to_numpy(zero_copy_only=False), side="left")
        past = np.searchsorted(keys, highs.to_numpy(zero_copy_only=False), side="right")
        for (index, _), start, end in zip(bounded, first.tolist(), past.tolist()):
            result[index] = start < end
        return result

    def count(self, table: pa.Table) -> int:
        """Rows of ``table`` that match."""
        return int(pc.sum(self.matches(table)).as_py() or 0) if table.num_rows else 0

    def kept(self, table: pa.Table) -> pa.Table:
        """``table`` without the rows that match (the rewriter's ``keep_rows``)."""
        if table.num_rows == 0:
            return table
        return table.filter(pc.invert(self.matches(table)))


def shell_quoted(text: str) -> str:
    """``text`` as a shell word, in double quotes when it holds single quotes (SQL literals) and nothing a shell
    expands inside double quotes."""
    if "'" in text and not any(c in text for c in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def _arguments(sql_text: str) -> dict[str, tuple[str, str]]:
    return {"where": (repr(sql_text), shell_quoted(sql_text))}


def where_filter(sql_text: str, schema: TableSchema) -> EraseFilter:
    """The filter of a SQL boolean expression over ``schema``'s columns; ArgumentError when it does not parse, names
    an unknown column or compares a column with a literal of another type."""
    try:
        tree = sqlglot.parse_one(sql_text)
    except sqlglot.errors.ParseError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "cannot parse"
        raise ArgumentError(f"{{where}} is not a SQL boolean expression: {first}", **_arguments(sql_text)) from None
    arrow = arrow_schema_of(list(schema.fields))
    translator = _Translator(arrow, lambda message: ArgumentError(f"{{where}}: {message}", **_arguments(sql_text)))
    expression = translator.boolean(tree)
    return EraseFilter(
        description=f"where {sql_text}",
        columns=tuple(name for name in arrow.names if name in translator.used),
        prune=expression,
        expression=expression,
    )


class _Translator:
    """sqlglot tree -> pyarrow expression over one Arrow schema."""

    def __init__(self, schema: pa.Schema, error: Callable[[str], ArgumentError]) -> None:
        self.schema = schema
        self.error = error
        self.used: set[str] = set()

    def boolean(self, node: Any) -> pc.Expression:
        if isinstance(node, sql.Paren):
            return self.boolean(node.this)
        if isinstance(node, sql.And):
            return self.boolean(node.this) & self.boolean(node.expression)
        if isinstance(node, sql.Or):
            return self.boolean(node.this) | self.boolean(node.expression)
        if isinstance(node, sql.Not):
            return ~self.boolean(node.this)
        if isinstance(node, sql.Is):
            if not isinstance(node.expression, sql.Null):
                raise self.error(f"only IS NULL and IS NOT NULL are supported, got {node.sql()}")
            return self.column(node.this)[0].is_null()
        if isinstance(node, sql.In):
            if node.args.get("query") is not None or node.args.get("unnest") is not None:
                raise self.error(f"IN takes a list of literals, got {node.sql()}")
            column, dtype = self.column(node.this)
            values = [self.literal(v, dtype, node.this.name) for v in node.expressions]
            return column.isin(pa.array([v.as_py() for v in values], type=dtype))
        if isinstance(node, sql.Between):
            column, dtype = self.column(node.this)
            low = self.literal(node.args["low"], dtype, node.this.name)
            high = self.literal(node.args["high"], dtype, node.this.name)
            return (column >= low) & (column <= high)
        if isinstance(node, _COMPARISONS):
            return self.comparison(node)
        if isinstance(node, sql.Column):
            column, dtype = self.column(node)
            if not pa.types.is_boolean(dtype):
                raise self.error(f"column {node.name!r} is {dtype}, not a boolean condition")
            return column == pa.scalar(True)
        raise self.error(f"unsupported expression {node.sql()!r}")

    def comparison(self, node: Any) -> pc.Expression:
        left, right = node.this, node.expression
        flipped = False
        if not isinstance(left, sql.Column) and isinstance(right, sql.Column):
            left, right, flipped = right, left, True
        if not isinstance(left, sql.Column):
            raise self.error(f"a comparison needs a column, got {node.sql()!r}")
        column, dtype = self.column(left)
        if isinstance(right, sql.Column):
            other, other_type = self.column(right)
            if other_type != dtype:
                raise self.error(f"cannot compare {left.name!r} ({dtype}) with {right.name!r} ({other_type})")
            value: Any = other
        else:
            value = self.literal(right, dtype, left.name)
        operator = _FLIPPED[type(node)] if flipped else type(node)
        return _OPERATORS[operator](column, value)

    def column(self, node: Any) -> tuple[pc.Expression, pa.DataType]:
        if not isinstance(node, sql.Column) or node.table:
            raise self.error(f"expected a column of the table, got {node.sql()!r}")
        name = node.name
        if name not in self.schema.names:
            columns = ", ".join(self.schema.names)
            raise self.error(f"unknown column {name!r}; the table has {columns}")
        self.used.add(name)
        return pc.field(name), self.schema.field(name).type

    def literal(self, node: Any, dtype: pa.DataType, column: str) -> pa.Scalar:
        """``node`` as a scalar of the column's type ``dtype``; ArgumentError when it is not a literal of it."""
        text, kind = _literal_text(node)
        if kind == "null":
            raise self.error(f"compare {column!r} with NULL using IS NULL")
        try:
            return _typed(text, kind, dtype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError, decimal.InvalidOperation):
            raise self.error(f"{node.sql()} is not a value of column {column!r} ({dtype})") from None


def _literal_text(node: Any) -> tuple[str, str]:
    """(text, kind) of a literal: kind ``string``, ``number``, ``bool``, ``typed`` (DATE '...') or ``null``."""
    if isinstance(node, sql.Paren):
        return _literal_text(node.this)
    if isinstance(node, sql.Null):
        return "", "null"
    if isinstance(node, sql.Boolean):
        return ("true" if node.this else "false"), "bool"
    if isinstance(node, sql.Neg):
        text, kind = _literal_text(node.this)
        if kind != "number":
            raise ValueError(node.sql())
        return ("-" + text), kind
    if isinstance(node, sql.Cast) and isinstance(node.this, sql.Literal) and node.this.is_string:
        return node.this.this, "typed"
    if isinstance(node, sql.Literal):
        return node.this, ("string" if node.is_string else "number")
    return node.sql(), "other"


def _typed(text: str, kind: str, dtype: pa.DataType) -> pa.Scalar:
    if kind == "other":
        raise ValueError(text)
    if pa.types.is_boolean(dtype):
        if kind != "bool":
            raise ValueError(text)
        return pa.scalar(text == "true")
    if kind == "bool":
        raise ValueError(text)
    textual = pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
    if textual:
        if kind != "string":
            raise ValueError(text)
        return pa.scalar(text, type=dtype)
    if kind == "string" and (pa.types.is_integer(dtype) or pa.types.is_floating(dtype)):
        raise ValueError(text)  # '5' for a number column: a type mismatch, not a conversion
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_fixed_size_binary(dtype):
        return pa.scalar(text.encode(), type=dtype)
    if pa.types.is_integer(dtype):
        value = decimal.Decimal(text)
        if value != value.to_integral_value():
            raise ValueError(text)
        return pa.scalar(int(value), type=dtype)
    if pa.types.is_floating(dtype):
        return pa.scalar(float(text), type=dtype)
    if pa.types.is_decimal(dtype):
        return pa.scalar(decimal.Decimal(text)).cast(dtype)
    return pa.scalar(text).cast(dtype)  # dates, times, timestamps from their text


_COMPARISONS: tuple[type[Any], ...] = ()
_OPERATORS: dict[type[Any], Callable[[pc.Expression, Any], pc.Expression]] = {}
_FLIPPED: dict[type[Any], type[Any]] = {}


def _comparisons() -> None:
    """The comparison nodes (filled at first use: sqlglot is imported lazily)."""
    global _COMPARISONS
    if _COMPARISONS:
        return
    _OPERATORS.update(
        {
            sql.EQ: lambda c, v: c == v,
            sql.NEQ: lambda c, v: c != v,
            sql.LT: lambda c, v: c < v,
            sql.LTE: lambda c, v: c <= v,
            sql.GT: lambda c, v: c > v,
            sql.GTE: lambda c, v: c >= v,
        }
    )
    _FLIPPED.update(
        {sql.EQ: sql.EQ, sql.NEQ: sql.NEQ, sql.LT: sql.GT, sql.LTE: sql.GTE, sql.GT: sql.LT, sql.GTE: sql.LTE}
    )
    _COMPARISONS = tuple(_OPERATORS)


def _key_arguments(column: str, file_column: str, path: str) -> dict[str, tuple[str, str]]:
    key_text = column if column == file_column else f"{column}={file_column}"
    return {"key": (repr(key_text), shell_quoted(key_text)), "keys_file": (repr(path), shell_quoted(path))}


def parse_key(key: str) -> tuple[str, str]:
    """``COL`` or ``COL=FILECOL``: (table column, keys-file column)."""
    column, _, file_column = key.partition("=")
    return column.strip(), (file_column.strip() or column.strip())


def read_keys_table(data: bytes, file_column: str) -> pa.Table:
    """The keys file's one column: Parquet by its magic bytes, CSV otherwise."""
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    if data[:4] == b"PAR1":
        return pq.read_table(io.BytesIO(data), columns=[file_column])
    options = csv.ConvertOptions(include_columns=[file_column], column_types={file_column: pa.string()})
    return csv.read_csv(io.BytesIO(data), convert_options=options)


def keys_file_bytes(path: str, storage_options: Mapping[str, Any] | None) -> bytes | None:
    """The keys file's bytes, from local disk or an object store (``s3://bucket/keys.parquet``, read with the
    table's storage options); None when there is no such file."""
    if split_scheme(path)[0] == "file":
        local = Path(split_scheme(path)[1])
        return local.read_bytes() if local.is_file() else None
    file_io, where = open_location(path, dict(storage_options or {}))
    try:
        return file_io.read_bytes(where)
    except FileNotFoundError:
        return None


def keys_filter(
    path: str, key: str, schema: TableSchema, storage_options: Mapping[str, Any] | None = None
) -> EraseFilter:
    """The filter of a keys file; ArgumentError for a missing file or column, an unknown table column or keys that
    are not values of the table column's type."""
    column, file_column = parse_key(key)
    arguments = _key_arguments(column, file_column, path)
    arrow = arrow_schema_of(list(schema.fields))
    if column not in arrow.names:
        raise ArgumentError(f"{{key}}: unknown column {column!r}; the table has {', '.join(arrow.names)}", **arguments)
    data = keys_file_bytes(path, storage_options)
    if data is None:
        raise ArgumentError("{keys_file}: no such file", **arguments)
    dtype = arrow.field(column).type
    try:
        raw = read_keys_table(data, file_column)[file_column]
    except (KeyError, pa.ArrowInvalid, OSError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ArgumentError(f"{{keys_file}}: no column {file_column!r} can be read ({reason})", **arguments) from None
    try:
        typed = _cast_keys(raw, dtype)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        raise ArgumentError(
            f"{{keys_file}}: column {file_column!r} ({raw.type}) holds values that are not {column!r} ({dtype})",
            **arguments,
        ) from None
    keys = pc.unique(typed.drop_null() if hasattr(typed, "drop_null") else pc.drop_null(typed))
    keys = keys.take(pc.sort_indices(keys))
    return EraseFilter(
        description=f"keys of {path} ({column}={file_column}, {len(keys)} key(s))",
        columns=(column,),
        prune=key_ranges(pc.field(column), keys),
        key_column=column,
        keys=keys,
    )


PRUNE_RANGES = 16
"""Ranges of keys that prune files at most: keys clustered in a few places of a large key space prune to the files
holding those places, whatever the number of keys."""


def key_ranges(field: pc.Expression, keys: pa.Array, limit: int = PRUNE_RANGES) -> pc.Expression:
    """An expression true for every key of the sorted ``keys``: an OR of at most ``limit`` ranges, split at the
    largest gaps between consecutive keys (numbers), else into runs of equal counts. No keys: false."""
    count = len(keys)
    if count == 0:
        return pc.scalar(False)
    if count <= limit:
        starts = list(range(count))
    elif pa.types.is_integer(keys.type) or pa.types.is_floating(keys.type):
        gaps = pc.subtract(keys.slice(1).cast(pa.float64()), keys.slice(0, count - 1).cast(pa.float64()))
        widest = pc.select_k_unstable(gaps, k=limit - 1, sort_keys=[("dummy", "descending")])
        starts = [0, *sorted(int(i) + 1 for i in widest.to_pylist())]
    else:
        starts = [i * count // limit for i in range(limit)]
    ends = [*(start - 1 for start in starts[1:]), count - 1]
    ranges = [field == keys[a] if a == b else (field >= keys[a]) & (field <= keys[b]) for a, b in zip(starts, ends)]
    result = ranges[0]
    for term in ranges[1:]:
        result = result | term
    return result


def _cast_keys(raw: pa.ChunkedArray, dtype: pa.DataType) -> pa.Array:
    combined = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
    if combined.type == dtype:
        return combined
    if pa.types.is_string(combined.type) and (pa.types.is_string(dtype) or pa.types.is_large_string(dtype)):
        return combined.cast(dtype)
    return combined.cast(dtype, safe=True)


def erase_filter(
    schema: TableSchema,
    where: Any = None,
    keys_file: str | None = None,
    key: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> EraseFilter:
    """The filter an erase was given: exactly one of ``where`` (SQL text, or a pyarrow expression from Python) and
    ``keys_file`` with ``key`` (a local path or an object store URL, read with ``storage_options``); ArgumentError
    otherwise."""
    if (where is None) == (keys_file is None):
        raise ArgumentError("erase needs exactly one of {where} and {keys_file}", where=("...", "--where SQL"),
                            keys_file=("...", "--keys-file FILE"))  # fmt: skip
    if keys_file is not None:
        if not key:
            raise ArgumentError("{keys_file} needs {key}", keys_file=(repr(keys_file), keys_file),
                                key=("'COL'", "--key COL[=FILECOL]"))  # fmt: skip
        return keys_filter(keys_file, key, schema, storage_options)
    if isinstance(where, str):
        _comparisons()  # sqlglot is imported here: a keys file never loads it
        return where_filter(where, schema)
    return expression_filter(where, schema)


def expression_filter(expression: Any, schema: TableSchema) -> EraseFilter:
    """The filter of a pyarrow expression given from Python (checked against the table's columns)."""
    arrow = arrow_schema_of(list(schema.fields))
    if not isinstance(expression, pc.Expression):
        raise ArgumentError(
            "{where} is SQL text or a pyarrow.compute expression", where=(type(expression).__name__, "--where SQL")
        )
    bound = as_expression(expression, arrow)
    assert bound is not None
    text = str(bound)
    used = tuple(name for name in arrow.names if f"FieldRef.Name({name})" in text or name in text)
    return EraseFilter(description=f"where {text}", columns=used or tuple(arrow.names), prune=bound, expression=bound)
