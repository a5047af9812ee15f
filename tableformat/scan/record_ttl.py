"""Record-level TTL: which rows and files are expired at one moment (``record-level.expire-time`` on
``record-level.time-field``).

Every reader asks :func:`scan_record_ttl` once per scan for the :class:`RecordTTL` of that scan (the cutoff is
judged once, from the clock or a fixed ``now_ms``), then

* :meth:`RecordTTL.prune` drops the files whose statistics say every row is expired (they are never opened),
* :meth:`RecordTTL.filter` removes the expired rows of a table read from the other files (nulls are kept),
* :meth:`RecordTTL.expression` is the same row rule as a ``pyarrow.compute`` expression (pyarrow datasets).

:class:`tableformat.scan.reader.DataReader` does the first two when it is given the TTL (``record_ttl=``), so
every read path built on it (``Table.to_arrow``, ``to_batches``, the Spark data source) filters. Maintenance uses
:meth:`RecordTTL.verdict` and :func:`footer_time_range` (files whose writer recorded no statistics) to decide which
files to drop and which to rewrite.

A row's time is its value as epoch milliseconds: INT = seconds, BIGINT = seconds, or milliseconds when the value is
at least 10^12 (Paimon's rule), TIMESTAMP = its wall clock taken as UTC, TIMESTAMP WITH LOCAL TIME ZONE = the
instant, DATE = the start of the day (UTC). A row is expired when its time is before ``now - expire-time``.

Nothing expires when the cutoff is before the earliest time the field's type can hold (e.g. 1677-09-21 for a
TIMESTAMP(9), stored as int64 nanoseconds; :meth:`RecordTTL.expires_nothing`): no value can be older, and the cutoff
could not even be compared with the column. Reads also take a stored ``record-level.expire-time`` beyond its range
(36500 d; written by an older tablefmt, Paimon or pypaimon) as "nothing expires"; record expiration refuses it in
one line (the option's range).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from tableformat.clock import system_clock
from tableformat.codec.arrow_schema import arrow_type_of
from tableformat.codec.binary_row import decode_field
from tableformat.errors import ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.options import RECORD_LEVEL_EXPIRE_TIME, RECORD_LEVEL_TIME_FIELD, TableOptions

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")

TIME_ROOTS = ("INT", "BIGINT", "TIMESTAMP", "TIMESTAMP_LTZ", "DATE")
"""Column types a time field may have."""
BIGINT_MILLIS_FROM = 10**12
"""A BIGINT time at or above this is epoch milliseconds, below it epoch seconds."""
MS_PER_DAY = 86_400_000
_UNIT_PER_MS = {"ms": 1, "us": 1000, "ns": 1_000_000}
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)
_INT64 = 2**63
_INT32 = 2**31

log = logging.getLogger(__name__)


def earliest_cutoff_ms(root: str, unit: str = "ms") -> int:
    """The earliest cutoff (epoch ms) the keep rule compares a column of this type (``unit``: a timestamp column's
    Arrow unit) with. Every value of the type is at or after it, so an earlier cutoff expires nothing: INT -2^31 s,
    DATE -2^31 days, TIMESTAMP -2^63 of its unit (1677-09-21 for nanoseconds), BIGINT -2^63 ms (seconds before that,
    292 million years before 1970, are not told apart)."""
    if root == "INT":
        return -_INT32 * 1000
    if root == "DATE":
        return -_INT32 * MS_PER_DAY
    if root == "BIGINT":
        return -_INT64
    return -(_INT64 // _UNIT_PER_MS.get(unit, 1))  # 's' and 'ms': the cutoff itself is int64 milliseconds


class Verdict(str, Enum):
    """What a file's time range says about its rows."""

    LIVE = "live"
    """No row is expired: read as it is."""
    EXPIRED = "expired"
    """Every row is expired (and none has a null time): never read, dropped by metadata."""
    PARTLY = "partly"
    """Some rows may be expired: filtered when read, rewritten by expire-records."""
    UNKNOWN = "unknown"
    """No statistics for the time field: read and filtered; maintenance looks at the Parquet footer."""


@dataclass(frozen=True, slots=True)
class TimeRange:
    """The smallest and largest time (epoch ms, conservative) of a file's non-null times, and its null count."""

    low_ms: int | None
    high_ms: int | None
    null_count: int | None
    row_count: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _value_ms(root: str, value: Any) -> int | None:
    """One statistics value (int, date, datetime) as epoch ms, rounded down; None when it has no usable form."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        delta: dt.timedelta = value - _EPOCH
        return int((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days * MS_PER_DAY
    if isinstance(value, int) and not isinstance(value, bool):
        if root == "INT" or (root == "BIGINT" and value < BIGINT_MILLIS_FROM):
            return value * 1000
        if root == "BIGINT":
            return value
    return None


@dataclass(frozen=True, slots=True)
class RecordTTL:
    """The TTL of one scan: rows whose time is before ``cutoff_ms`` are expired."""

    field_id: int
    field_name: str
    root: str
    """The time field's type root (one of :data:`TIME_ROOTS`)."""
    expire_ms: int
    now_ms: int
    unit: str = "ms"
    """A TIMESTAMP time field's Arrow unit (``ms``, ``us``, ``ns``) in the table's schema."""
    _layouts: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per (schema id, stats columns): where the time field sits in a statistics row."""

    @property
    def cutoff_ms(self) -> int:
        return self.now_ms - self.expire_ms

    @property
    def expires_nothing(self) -> bool:
        """Whether the cutoff is before the earliest time the field's type can hold (:func:`earliest_cutoff_ms`)."""
        return self.cutoff_ms < earliest_cutoff_ms(self.root, self.unit)

    # --- statistics --------------------------------------------------------------------------------------------
    def range_of(self, low: Any, high: Any, null_count: int | None, row_count: int) -> TimeRange:
        """The time range of values in [low, high] (BIGINT's seconds/millis switch makes it non-monotonic)."""
        both_units = isinstance(low, int) and isinstance(high, int) and low < BIGINT_MILLIS_FROM <= high
        if self.root == "BIGINT" and both_units:
            lowest = min(low * 1000, BIGINT_MILLIS_FROM)
            highest = max((BIGINT_MILLIS_FROM - 1) * 1000, high)
            return TimeRange(lowest, highest, null_count, row_count)
        return TimeRange(_value_ms(self.root, low), _value_ms(self.root, high), null_count, row_count)

    def verdict(self, time_range: TimeRange | None) -> Verdict:
        """Whether a file with this time range is live, fully expired, partly expired, or unknown."""
        if self.expires_nothing:
            return Verdict.LIVE
        if time_range is None:
            return Verdict.UNKNOWN
        nulls = time_range.null_count
        if nulls is not None and nulls >= time_range.row_count:
            return Verdict.LIVE  # every time is null: every row is kept
        if time_range.low_ms is None or time_range.high_ms is None:
            return Verdict.UNKNOWN
        if time_range.low_ms >= self.cutoff_ms:
            return Verdict.LIVE
        if time_range.high_ms < self.cutoff_ms and nulls == 0:
            return Verdict.EXPIRED
        return Verdict.PARTLY

    def stats_range(self, entry: ManifestEntry, schema_loader: Callable[[int], TableSchema]) -> TimeRange | None:
        """The time range the manifest's value statistics give for a file (None: not recorded, or unreadable)."""
        meta = entry.file
        key = (meta.schema_id, meta.value_stats_cols)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = _stats_layout(schema_loader(meta.schema_id), meta.value_stats_cols, self)
        if layout is _PREDATES:  # the file predates the column: every time is null
            return TimeRange(None, None, meta.row_count, meta.row_count)
        if layout is _UNUSABLE:
            return None
        index, types = layout
        stats = meta.value_stats
        try:
            low = decode_field(stats.min_values, types, index)
            high = decode_field(stats.max_values, types, index)
        except Exception:  # a stats row of another shape: not usable, read the file instead
            return None
        counts = stats.null_counts
        nulls = counts[index] if counts is not None and len(counts) == len(types) else None
        if low is None and high is None and nulls != meta.row_count:
            return None
        return self.range_of(low, high, nulls, meta.row_count)

    def prune(
        self, entries: Sequence[ManifestEntry], schema_loader: Callable[[int], TableSchema]
    ) -> list[ManifestEntry]:
        """The entries that may hold an unexpired row (fully expired files are left out, never opened)."""
        return [e for e in entries if self.verdict(self.stats_range(e, schema_loader)) is not Verdict.EXPIRED]

    # --- rows --------------------------------------------------------------------------------------------------
    def keep_mask(self, column: pa.Array | pa.ChunkedArray) -> Any:
        """True for every row to keep: a null time, or a time at or after the cutoff."""
        cutoff = self.cutoff_ms
        unit = getattr(column.type, "unit", "ms")
        if cutoff < earliest_cutoff_ms(self.root, unit):  # this column cannot hold an older time
            return pc.fill_null(pa.nulls(len(column), pa.bool_()), True)
        if self.root == "INT":
            keep = pc.greater_equal(column, _ceil_div(cutoff, 1000))
        elif self.root == "BIGINT":
            millis = pc.greater_equal(column, BIGINT_MILLIS_FROM)
            keep = pc.if_else(
                millis, pc.greater_equal(column, cutoff), pc.greater_equal(column, _ceil_div(cutoff, 1000))
            )
        elif self.root == "DATE":
            keep = pc.greater_equal(pc.cast(column, pa.int32()), _ceil_div(cutoff, MS_PER_DAY))
        else:
            if unit == "s":
                keep = pc.greater_equal(pc.cast(column, pa.int64()), _ceil_div(cutoff, 1000))
            else:
                keep = pc.greater_equal(pc.cast(column, pa.int64()), cutoff * _UNIT_PER_MS[unit])
        return pc.fill_null(keep, True)

    def filter(self, table: pa.Table, column_name: str | None = None) -> pa.Table:
        """``table`` without its expired rows (``column_name``: the time column's name in it, default the field's)."""
        name = column_name or self.field_name
        if name not in table.column_names or table.num_rows == 0:
            return table
        return table.filter(self.keep_mask(table.column(name)))

    def expression(self, column_name: str | None = None) -> pc.Expression:
        """The keep rule as a pyarrow dataset expression (for ``pyarrow.dataset`` scans of the planned files)."""
        field = pc.field(column_name or self.field_name)
        cutoff = self.cutoff_ms
        if self.expires_nothing:
            return pc.scalar(True)
        if self.root == "INT":
            keep = field >= _ceil_div(cutoff, 1000)
        elif self.root == "BIGINT":
            keep = ((field >= BIGINT_MILLIS_FROM) & (field >= cutoff)) | (
                (field < BIGINT_MILLIS_FROM) & (field >= _ceil_div(cutoff, 1000))
            )
        elif self.root == "DATE":
            keep = field >= pa.scalar(_ceil_div(cutoff, MS_PER_DAY), pa.int32()).cast(pa.date32())
        else:
            tz = "UTC" if self.root == "TIMESTAMP_LTZ" else None
            keep = field >= pa.scalar(cutoff, pa.timestamp("ms", tz=tz))
        return field.is_null() | keep


_PREDATES = "predates"
_UNUSABLE = "unusable"


def _stats_layout(file_schema: TableSchema, stats_cols: Sequence[str] | None, ttl: RecordTTL) -> Any:
    """(index, types) of the time field in a statistics row, or why there is none."""
    field = next((f for f in file_schema.fields if f.id == ttl.field_id), None)
    if field is None:
        return _PREDATES
    names = list(stats_cols) if stats_cols is not None else list(file_schema.field_names)
    by_name = {f.name: f for f in file_schema.fields}
    if field.name not in names or any(n not in by_name for n in names):
        return _UNUSABLE
    return names.index(field.name), [by_name[n].type for n in names]


def footer_time_range(metadata: Any, column_name: str, ttl: RecordTTL) -> TimeRange | None:
    """The time range of a Parquet file from its footer's row-group statistics (None: a row group has none)."""
    names = metadata.schema.names
    if column_name not in names:
        return TimeRange(None, None, metadata.num_rows, metadata.num_rows)
    index = names.index(column_name)
    low: int | None = None
    high: int | None = None
    nulls = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        stats = row_group.column(index).statistics
        if stats is None or stats.null_count is None:
            return None
        nulls += stats.null_count
        if not stats.has_min_max:
            if stats.null_count < row_group.num_rows:
                return None
            continue
        part = ttl.range_of(stats.min, stats.max, None, row_group.num_rows)
        if part.low_ms is None or part.high_ms is None:
            return None
        low = part.low_ms if low is None else min(low, part.low_ms)
        high = part.high_ms if high is None else max(high, part.high_ms)
    return TimeRange(low, high, nulls, metadata.num_rows)


def resolve_record_ttl(
    schema: TableSchema,
    now_ms: int,
    *,
    expire_time_ms: int | None = None,
    time_field: str | None = None,
) -> RecordTTL | None:
    """The TTL the table's options (each overridden when given) define at ``now_ms``; None when no expire time
    is set. ValidationError for a time field that is unset, missing or of a type that has no time."""
    expire_ms = expire_time_ms if expire_time_ms is not None else _stored_expire_ms(schema)
    if expire_ms is None:
        return None
    options = TableOptions(schema.options)
    name = time_field if time_field is not None else options.get(RECORD_LEVEL_TIME_FIELD)
    if not name:
        raise ValidationError(
            "record-level.expire-time is set but record-level.time-field is not: set the option "
            "record-level.time-field to the column whose time expires a row"
        )
    try:
        field = schema.field(name)
    except KeyError:
        raise ValidationError(
            f"record-level.time-field {name!r} is not a column of the table; columns: {list(schema.field_names)}"
        ) from None
    if field.type.root not in TIME_ROOTS:
        raise ValidationError(
            f"record-level.time-field {name!r} has type {field.type}; it must be INT (epoch seconds), BIGINT "
            "(epoch seconds or milliseconds), TIMESTAMP, TIMESTAMP WITH LOCAL TIME ZONE or DATE"
        )
    if expire_ms <= 0:
        raise ValidationError(f"record-level.expire-time must be positive, got {expire_ms} ms")
    unit = arrow_type_of(field.type).unit if field.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") else "ms"
    return RecordTTL(field.id, field.name, field.type.root, expire_ms, now_ms, unit)


def _stored_expire_ms(schema: TableSchema) -> int | None:
    """The table's ``record-level.expire-time``; None when unset, or stored beyond its range (36500 d) by an older
    tablefmt, Paimon or pypaimon: nothing expires then (a cutoff that far back is before any time most types hold,
    and reads must not fail on it). A value that is no duration at all is still a ValidationError."""
    text = schema.options.get(RECORD_LEVEL_EXPIRE_TIME.key)
    if text is None:
        return None
    value = RECORD_LEVEL_EXPIRE_TIME.parse_unchecked(text)
    if not RECORD_LEVEL_EXPIRE_TIME.in_range(value):
        log.warning(
            "%s=%s is outside %s: no row expires on read",
            RECORD_LEVEL_EXPIRE_TIME.key,
            text,
            RECORD_LEVEL_EXPIRE_TIME.range_text(),
        )
        return None
    return value


def system_now_ms() -> int:
    """The read path's clock (the one clock, tableformat/clock.py); tests replace it to read at a fixed time."""
    return system_clock()


def scan_record_ttl(
    schema: TableSchema, *, now_ms: int | None = None, include_expired: bool = False
) -> RecordTTL | None:
    """The row filter of one scan: the table's TTL judged once, now (or at ``now_ms``); None when the table has no
    TTL or the caller opted out (``include_expired``, for audits). Every reader calls this once per scan."""
    if include_expired:
        return None
    return resolve_record_ttl(schema, system_now_ms() if now_ms is None else int(now_ms))


def ttl_scan(
    ttl: RecordTTL,
    entries: Sequence[ManifestEntry],
    schema: TableSchema,
    schema_loader: Callable[[int], TableSchema],
    row_filter: pc.Expression | None,
) -> tuple[list[ManifestEntry], pc.Expression | None]:
    """A scan's entries without the fully expired files, and its row filter AND the TTL's keep rule (by the time
    field's name in the read ``schema``; a read schema without the field filters nothing): what
    ``TableScan(row_filter=...)`` takes."""
    kept = ttl.prune(entries, schema_loader)
    name = next((f.name for f in schema.fields if f.id == ttl.field_id), None)
    if name is None:
        return kept, row_filter
    keep = ttl.expression(name)
    return kept, keep if row_filter is None else row_filter & keep
