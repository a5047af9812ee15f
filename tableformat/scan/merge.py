"""Merge-on-read of primary-key tables: which files of a bucket a batch read takes, which need merging, and the
vectorised merge of the versions of each key (Paimon's SortMergeReader + MergeFunction, done with Arrow sorts).

A primary-key data file holds key-value records: the trimmed primary key (the primary key minus the partition
columns) as ``_KEY_<k>`` columns, ``_SEQUENCE_NUMBER`` (int64, increasing per bucket), ``_VALUE_KIND`` (the RowKind
byte: 0 +I, 1 -U, 2 +U, 3 -D), then every table column. Changelog files (``changelog-*``) are never read: a batch
read takes the data files of the snapshot's base and delta lists only.

What Paimon's batch read returns, per (partition, bucket) (Java ``MergeTreeSplitGenerator``,
``KeyValueFileStoreScan``, ``CoreOptions.batchScanSkipLevel0``; pypaimon 2.1.0 ``split_read.py``):

* ``first-row`` tables, and tables with ``deletion-vectors.enabled`` (unless ``deletion-vectors.merge-on-read``),
  skip level-0 files: only compacted files are visible. ``bucket=-2`` tables skip the files not yet in a bucket.
* A bucket whose files are all above level 0, none with delete rows, and (deletion vectors, first-row, or all at
  one level) is read without merging ("raw convertible"). Otherwise its files are split into sections of
  overlapping key ranges (``IntervalPartition``); a section of one file is read without merging, the others merged.
* Merging orders the records of a key by ``sequence.field`` (if set), then ``_SEQUENCE_NUMBER``, then retracts
  before adds (Java's comparators), and keeps the last (``deduplicate``) or the first (``first-row``). Records
  that tie on all of these are ordered by file age (level descending, then maximum sequence number): the newer
  file wins, where Paimon leaves the order to its reader stack. A kept -U/-D drops the key.
* ``ignore-delete``: -U/-D records are left out before merging. ``first-row`` without it refuses -U/-D records
  (Paimon raises the same).
* A file read without merging still loses its -U/-D records: a file's keys are unique, so that is the merge of a
  one-file section (and pypaimon 2.1.0 writes ``_DELETE_ROW_COUNT`` 0 for files that do hold retracts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from tableformat.codec.binary_row import decode_row
from tableformat.errors import CorruptMetadataError, UnsupportedTableError, ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.options import (
    BUCKET,
    DEDUPLICATE_IGNORE_DELETE,
    DELETION_VECTORS_ENABLED,
    DELETION_VECTORS_MERGE_ON_READ,
    FIRST_ROW_IGNORE_DELETE,
    IGNORE_DELETE,
    MERGE_ENGINE,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    SEQUENCE_SNAPSHOT_ORDERING,
    TableOptions,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
SYSTEM_COLUMNS = (SEQUENCE_NUMBER, VALUE_KIND)
"""The stored columns a merge needs besides the table's (the ``_KEY_`` copies are not read: the key columns are)."""

RETRACT_KINDS = (1, 3)
"""RowKind bytes of UPDATE_BEFORE (-U) and DELETE (-D)."""

POSTPONE_BUCKET = -2
"""``bucket`` of a table whose writers leave bucket assignment to compaction."""

_FILE_ORDER = "__tablefmt_file_order"
_IS_ADD = "__tablefmt_is_add"


class MergeEngine(str, Enum):
    """Paimon's ``merge-engine`` values."""

    DEDUPLICATE = "deduplicate"
    FIRST_ROW = "first-row"
    PARTIAL_UPDATE = "partial-update"
    AGGREGATION = "aggregation"


@dataclass(frozen=True, slots=True)
class MergeRules:
    """How a primary-key table's versions of a key become one row (from its schema's options)."""

    engine: MergeEngine
    key_columns: tuple[str, ...]
    """The trimmed primary key: the columns that identify a key within a (partition, bucket)."""
    ignore_delete: bool
    sequence_fields: tuple[str, ...]
    sequence_descending: bool
    deletion_vectors: bool
    skip_level0: bool
    """Paimon's batchScanSkipLevel0: first-row tables, and deletion-vector tables without merge-on-read."""
    real_buckets_only: bool = False
    """``bucket=-2`` (postponed buckets): files not yet assigned a bucket (``bucket-postpone``) are not read."""

    @property
    def merge_columns(self) -> tuple[str, ...]:
        """The table columns a merge needs whatever the projection."""
        return tuple(dict.fromkeys((*self.key_columns, *self.sequence_fields)))


def merge_rules(schema: TableSchema) -> MergeRules:
    """The merge rules of a primary-key table, or UnsupportedTableError (one line naming what) for a table whose
    rows tablefmt cannot read as Paimon does."""
    options = TableOptions(schema.options)
    text = str(options.require(MERGE_ENGINE)).strip().lower()
    try:
        engine = MergeEngine(text)
    except ValueError:
        raise UnsupportedTableError(f"unknown merge-engine {text!r} of a primary-key table") from None
    if engine in (MergeEngine.PARTIAL_UPDATE, MergeEngine.AGGREGATION):
        raise UnsupportedTableError(
            f"merge-engine {engine.value!r}: tablefmt reads primary-key tables with deduplicate or first-row only"
        )
    if options.require(SEQUENCE_SNAPSHOT_ORDERING):
        raise UnsupportedTableError("sequence.snapshot-ordering=true: tablefmt does not read such tables")
    sequence_fields = _sequence_fields(options, schema)
    if sequence_fields and engine is MergeEngine.FIRST_ROW:
        raise UnsupportedTableError("sequence.field with merge-engine 'first-row' (Paimon refuses it too)")
    order = str(options.require(SEQUENCE_FIELD_SORT_ORDER)).strip().lower()
    if order not in ("ascending", "descending"):
        raise ValidationError(f"option sequence.field.sort-order must be ascending or descending, got {order!r}")
    ignore = next(
        (v for v in (options.get(o) for o in (IGNORE_DELETE, FIRST_ROW_IGNORE_DELETE, DEDUPLICATE_IGNORE_DELETE))
         if v is not None),
        False,
    )  # fmt: skip
    dv = bool(options.require(DELETION_VECTORS_ENABLED))
    skip_level0 = not options.require(DELETION_VECTORS_MERGE_ON_READ) if dv else engine is MergeEngine.FIRST_ROW
    trimmed = tuple(k for k in schema.primary_keys if k not in schema.partition_keys) or tuple(schema.primary_keys)
    return MergeRules(
        engine=engine,
        key_columns=trimmed,
        ignore_delete=bool(ignore),
        sequence_fields=sequence_fields,
        sequence_descending=order == "descending",
        deletion_vectors=dv,
        skip_level0=skip_level0,
        real_buckets_only=options.require(BUCKET) == POSTPONE_BUCKET,
    )


def _sequence_fields(options: TableOptions, schema: TableSchema) -> tuple[str, ...]:
    text = options.get(SEQUENCE_FIELD)
    if not text:
        return ()
    names = tuple(name.strip() for name in str(text).split(",") if name.strip())
    unknown = [name for name in names if name not in schema.field_names]
    if unknown or len(set(names)) != len(names):
        raise ValidationError(f"option sequence.field names unknown or repeated column(s): {text!r}")
    return names


# --- which files, merged or not ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BucketRead:
    """The files one (partition, bucket) is read from: ``raw`` files whose rows need no merge, ``merged`` files
    whose records are merged together (their sections' key ranges overlap)."""

    partition: bytes
    bucket: int
    raw: tuple[ManifestEntry, ...]
    merged: tuple[ManifestEntry, ...]

    @property
    def entries(self) -> tuple[ManifestEntry, ...]:
        return self.raw + self.merged


def _without_delete_rows(entry: ManifestEntry) -> bool:
    count = entry.file.delete_row_count
    return count is None or count == 0  # null: an older writer (Java reads it as no delete rows)


def group_buckets(entries: Sequence[ManifestEntry]) -> list[list[ManifestEntry]]:
    """The entries grouped by (partition, bucket), in first-seen order."""
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.partition, entry.bucket), []).append(entry)
    return list(groups.values())


def plan_bucket(entries: Sequence[ManifestEntry], rules: MergeRules, key_types: Sequence[Any]) -> BucketRead | None:
    """How one bucket's live files are read (None: nothing visible to a batch read)."""
    files = [e for e in entries if not (rules.skip_level0 and e.file.level == 0)]
    if not files or (rules.real_buckets_only and files[0].bucket < 0):
        return None
    first = files[0]
    levels = {e.file.level for e in files}
    raw_bucket = all(e.file.level != 0 and _without_delete_rows(e) for e in files) and (
        rules.deletion_vectors or rules.engine is MergeEngine.FIRST_ROW or len(levels) == 1
    )
    if raw_bucket or len(files) == 1:
        return BucketRead(first.partition, first.bucket, tuple(files), ())
    raw: list[ManifestEntry] = []
    merged: list[ManifestEntry] = []
    for section in key_sections(files, key_types):
        (raw if len(section) == 1 else merged).extend(section)
    return BucketRead(first.partition, first.bucket, tuple(raw), tuple(merged))


def key_sections(files: Sequence[ManifestEntry], key_types: Sequence[Any]) -> list[list[ManifestEntry]]:
    """Paimon's IntervalPartition: files sorted by (min key, max key), a new section wherever a file's min key is
    above every max key before it. Keys that cannot be compared here make one section (merging more files than
    needed is never wrong)."""
    try:
        bounds = [
            (tuple(decode_row(e.file.min_key, key_types)), tuple(decode_row(e.file.max_key, key_types)), e)
            for e in files
        ]
        if any(None in low or None in high for low, high, _ in bounds):
            return [list(files)]
        bounds.sort(key=lambda b: (b[0], b[1]))
        sections: list[list[ManifestEntry]] = []
        bound: tuple[Any, ...] | None = None
        for low, high, entry in bounds:
            if bound is None or low > bound:
                sections.append([entry])
                bound = high
            else:
                sections[-1].append(entry)
                bound = max(bound, high)
        return sections
    except (CorruptMetadataError, TypeError, ValueError):
        return [list(files)]


def file_age_order(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """Oldest first: higher levels hold older data, then lower maximum sequence numbers."""
    return sorted(entries, key=lambda e: (-e.file.level, e.file.max_sequence_number, e.file.min_sequence_number))


# --- the merge -----------------------------------------------------------------------------------------------------
def _retracts(table: pa.Table) -> Any:
    return pc.is_in(
        table.column(VALUE_KIND), value_set=pa.array(RETRACT_KINDS, type=table.schema.field(VALUE_KIND).type)
    )


def _refuse_first_row_retracts(table: pa.Table, rules: MergeRules) -> pa.Table:
    """Apply ignore-delete (drop -U/-D records), or for first-row without it refuse them as Paimon does."""
    if not (rules.ignore_delete or rules.engine is MergeEngine.FIRST_ROW) or table.num_rows == 0:
        return table
    retract = _retracts(table)
    if not pc.any(retract).as_py():
        return table
    if not rules.ignore_delete:
        raise UnsupportedTableError(
            "a first-row table holds DELETE/UPDATE_BEFORE records: Paimon reads them only with ignore-delete=true"
        )
    return table.filter(pc.invert(retract))


def unmerged(table: pa.Table, rules: MergeRules) -> pa.Table:
    """The rows of a file read without merging: without its -U/-D records (see the module docs)."""
    table = _refuse_first_row_retracts(table, rules)
    if table.num_rows == 0:
        return table
    return table.filter(pc.invert(_retracts(table)))


def merge_versions(tables: Sequence[pa.Table], rules: MergeRules) -> pa.Table:
    """One row per key from the records of ``tables`` (one bucket's files, oldest file first, each with the
    key columns, the sequence fields and the system columns): the newest version (deduplicate) or the oldest
    (first-row), keys whose kept record is a -U/-D left out. Rows come out in key order."""
    stamped = [
        t.append_column(_FILE_ORDER, pa.array([index] * t.num_rows, type=pa.int32())) for index, t in enumerate(tables)
    ]
    table = _refuse_first_row_retracts(pa.concat_tables(stamped), rules)
    if table.num_rows == 0:
        return table.drop_columns([_FILE_ORDER])
    ordered = _by_key_then_age(table, rules) or _by_full_order(table, rules)
    order, change = ordered
    chosen = _run_ends(change, last=rules.engine is MergeEngine.DEDUPLICATE)
    picked = table.take(pc.take(order, chosen))
    if rules.engine is MergeEngine.DEDUPLICATE:
        picked = picked.filter(pc.invert(_retracts(picked)))
    return picked.drop_columns([_FILE_ORDER])


def _by_key_then_age(table: pa.Table, rules: MergeRules) -> tuple[Any, Any] | None:
    """The fast order: a stable sort by key alone keeps each key's records in file-age order, which is the full
    order whenever their sequence numbers then strictly increase (Paimon's LSM levels: a newer version has a higher
    sequence number). None when that does not hold (or ``sequence.field`` orders first): sort fully."""
    import numpy as np

    if rules.sequence_fields:
        return None
    keys = table.select(list(rules.key_columns))
    order = pc.sort_indices(keys, sort_keys=[(name, "ascending") for name in rules.key_columns])  # stable
    change = _key_changes(keys.take(order))
    sequence = table.column(SEQUENCE_NUMBER).take(order).combine_chunks().to_numpy(zero_copy_only=False)
    if np.any(~change & (sequence[1:] <= sequence[:-1])):
        return None
    return order, change


def _by_full_order(table: pa.Table, rules: MergeRules) -> tuple[Any, Any]:
    """Java's order: key, ``sequence.field`` (nulls first in either order), sequence number, retracts before adds;
    then file age (the newer file last)."""
    columns: dict[str, Any] = {name: table.column(name) for name in rules.key_columns}
    sort_keys = [(name, "ascending") for name in rules.key_columns]
    sequence_order = "descending" if rules.sequence_descending else "ascending"
    for index, name in enumerate(rules.sequence_fields):
        # nulls first in either order (Java's nullIsLast=false): a "not null" flag sorts before the value
        columns[f"__tablefmt_set_{index}"] = pc.is_valid(table.column(name))
        columns[f"__tablefmt_seq_{index}"] = table.column(name)
        sort_keys += [(f"__tablefmt_set_{index}", "ascending"), (f"__tablefmt_seq_{index}", sequence_order)]
    is_add = pc.invert(_retracts(table))
    columns.update(
        {SEQUENCE_NUMBER: table.column(SEQUENCE_NUMBER), _IS_ADD: is_add, _FILE_ORDER: table.column(_FILE_ORDER)}
    )
    sort_keys += [(SEQUENCE_NUMBER, "ascending"), (_IS_ADD, "ascending"), (_FILE_ORDER, "ascending")]
    keyed = pa.table(columns)
    order = pc.sort_indices(keyed, sort_keys=sort_keys)
    return order, _key_changes(keyed.select(list(rules.key_columns)).take(order))


def _key_changes(keys: pa.Table) -> Any:
    """For sorted ``keys`` of n rows: n - 1 booleans, whether row i + 1 has another key than row i."""
    import numpy as np

    n = keys.num_rows
    change = np.zeros(max(n - 1, 0), dtype=bool)
    if n < 2:
        return change
    for name in keys.column_names:
        column = keys.column(name).combine_chunks()
        differs = pc.not_equal(column.slice(1), column.slice(0, n - 1))
        if differs.null_count:  # null against a value differs; null against null does not
            both_null = pc.and_(column.slice(1).is_null(), column.slice(0, n - 1).is_null())
            differs = pc.if_else(pc.is_null(differs), pc.invert(both_null), differs)
        change |= differs.to_numpy(zero_copy_only=False)
    return change


def _run_ends(change: Any, *, last: bool) -> Any:
    """Positions of the last (or first) row of each run of equal keys, from :func:`_key_changes`."""
    import numpy as np

    # last: row i ends a run when row i + 1 differs; first: row i starts one when it differs from row i - 1
    boundary = np.append(change, True) if last else np.insert(change, 0, True)
    return pa.array(np.flatnonzero(boundary))


PositionsOf = Callable[[ManifestEntry], Any]
"""A data file's deletion vector: the row positions it marks deleted (None or empty: none)."""
