"""A fast read path: Spark's own vectorised Parquet reader over exactly the live files of a snapshot.

The file list is planned from the snapshot on the driver, so orphans and uncommitted files are never read (never
point ``spark.read.parquet`` at the table directory). The native reader is used only when the files can be read
as the table's schema without tablefmt's help; otherwise the ``tablefmt`` data source reads them.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from tableformat.codec.arrow_schema import arrow_type_of
from tableformat.io.fileio import FileIO
from tableformat.model.manifest import ManifestEntry
from tableformat.model.partition import parse_spec_text
from tableformat.options import PARTITION_DEFAULT_NAME
from tableformat.scan.record_ttl import BIGINT_MILLIS_FROM, MS_PER_DAY, RecordTTL, scan_record_ttl
from tableformat.spark.config import PARTITIONS, SCAN_INCLUDE_EXPIRED, SCAN_SNAPSHOT_ID, STORAGE_OPTIONS
from tableformat.spark.reader import data_reader, plan_entries, select_snapshot
from tableformat.spark.registration import ensure_registered
from tableformat.spark.schema import spark_schema_of
from tableformat.table import Table

log = logging.getLogger(__name__)

NATIVE_ROOTS = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DECIMAL",
        "CHAR",
        "VARCHAR",
        "STRING",
        "VARBINARY",
        "BYTES",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
    }
)
"""Column types whose Parquet encoding (as tablefmt and pypaimon write it) Spark reads as the mapped Spark type."""

GLOB_CHARACTERS = frozenset("{}[]*?\\")
"""Spark treats paths containing these as glob patterns."""

HADOOP_SCHEMES = {"s3": "s3a"}
"""Spark (Hadoop) names some stores differently from fsspec."""

PartitionFilter = Mapping[str, Any] | Sequence[Mapping[str, Any]] | str


def _filter_specs(partition_filter: PartitionFilter | None) -> list[dict[str, Any]] | None:
    if partition_filter is None:
        return None
    if isinstance(partition_filter, str):
        return [dict(parse_spec_text(part)) for part in partition_filter.split(";") if part.strip()]
    if isinstance(partition_filter, Mapping):
        return [dict(partition_filter)]
    return [dict(spec) for spec in partition_filter]


def _filter_text(specs: Sequence[Mapping[str, Any]], default_name: str) -> str:
    def value(v: Any) -> str:
        return default_name if v is None else str(v)

    return ";".join(",".join(f"{k}={value(v)}" for k, v in spec.items()) for spec in specs)


def native_url(file_io: FileIO, path: str) -> str:
    """The URL Spark's Hadoop filesystems know a FileIO path by."""
    if file_io.scheme == "file":
        return "file://" + path
    return f"{HADOOP_SCHEMES.get(file_io.scheme, file_io.scheme)}://{path}"


def native_blocker(table: Table, entries: Sequence[ManifestEntry], paths: Sequence[str]) -> str | None:
    """Why Spark's Parquet reader cannot read these files as the table's schema (None: it can)."""
    schema = table.schema
    if schema.primary_keys:
        return "a primary-key table: its rows are merged on read"
    older = sorted({e.file.schema_id for e in entries if e.file.schema_id != schema.id})
    if older:
        return f"files were written under older schema(s) {older}"
    unsupported = [f"{f.name} {f.type}" for f in schema.fields if f.type.root not in NATIVE_ROOTS]
    if unsupported:
        return f"column types {unsupported} need tablefmt's conversion"
    coarse = [
        f.name
        for f in schema.fields
        if f.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and arrow_type_of(f.type).unit != "us"
    ]
    if coarse:
        return f"timestamp columns {coarse} are not microsecond precision"
    if any(GLOB_CHARACTERS & set(p) for p in paths):
        return "a file path contains glob characters"
    if paths:
        file_schema = pq.read_schema(paths[0], filesystem=table.context.io.arrow_filesystem())
        for field in schema.fields:
            if field.name not in file_schema.names:
                return f"data files do not contain column {field.name!r}"
            stored = file_schema.field(field.name).type
            if not _same_parquet_type(stored, arrow_type_of(field.type)):
                return f"column {field.name!r} is stored as {stored}"
    return None


def _same_parquet_type(stored: pa.DataType, expected: pa.DataType) -> bool:
    """Whether Parquet data read back as ``stored`` is what Spark reads as the type mapped from ``expected``."""
    if pa.types.is_timestamp(stored) and pa.types.is_timestamp(expected):
        return stored.unit == expected.unit and (stored.tz is None) == (expected.tz is None)
    if pa.types.is_large_string(stored):
        stored = pa.string()
    elif pa.types.is_large_binary(stored):
        stored = pa.binary()
    return bool(stored == expected)


def keep_condition(ttl: RecordTTL) -> Any:
    """The record TTL's keep rule as a Spark Column (a null time, or a time at or after the cutoff): the same rule
    as :meth:`RecordTTL.keep_mask`, with the cutoff as an exact literal of the column's type."""
    from pyspark.sql import functions as F

    column = F.col(f"`{ttl.field_name}`")
    cutoff = ttl.cutoff_ms
    seconds = -(-cutoff // 1000)
    if ttl.root == "INT":
        keep = column >= F.lit(seconds)
    elif ttl.root == "BIGINT":
        millis = F.lit(BIGINT_MILLIS_FROM)
        keep = ((column >= millis) & (column >= F.lit(cutoff))) | ((column < millis) & (column >= F.lit(seconds)))
    elif ttl.root == "DATE":
        keep = column >= F.lit(dt.date(1970, 1, 1) + dt.timedelta(days=-(-cutoff // MS_PER_DAY)))
    elif ttl.root == "TIMESTAMP_LTZ":
        keep = column >= F.expr(f"timestamp_micros({cutoff * 1000})")
    else:  # TIMESTAMP (no zone): the UTC wall clock of the cutoff, built without the session time zone
        t = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=cutoff)
        second = f"{t.second}.{t.microsecond:06d}"
        keep = column >= F.expr(f"make_timestamp_ntz({t.year}, {t.month}, {t.day}, {t.hour}, {t.minute}, {second})")
    return column.isNull() | keep


def read_native(
    spark: SparkSession,
    path: str,
    snapshot_id: int | None = None,
    tag: str | None = None,
    partition_filter: PartitionFilter | None = None,
    storage_options: Mapping[str, Any] | None = None,
    *,
    timestamp_ms: int | None = None,
    include_expired: bool = False,
) -> DataFrame:
    """A DataFrame over one snapshot (latest by default) read by Spark's native Parquet reader when possible.

    ``partition_filter``: ``{"dt": "2024-01-01"}``, a list of such specs (OR), or the ``partitions`` option text.
    Falls back to ``spark.read.format("tablefmt")`` (same snapshot, same filter) when the files need tablefmt's
    conversion: files of older schemas, column types Spark's Parquet reader maps differently, glob characters in
    paths. For object stores Spark itself must be configured for the store (e.g. hadoop-aws for ``s3a://``);
    ``storage_options`` only serve tablefmt's own planning and the fallback reader. Rows expired by the table's
    record-level TTL are never returned (files whose every row is expired are not read) unless
    ``include_expired``.
    """
    options = dict(storage_options or {})
    table = Table.open(path, options)
    snapshot = select_snapshot(table, snapshot_id=snapshot_id, tag=tag, timestamp_ms=timestamp_ms)
    specs = _filter_specs(partition_filter)
    spark_schema = spark_schema_of(list(table.schema.fields))
    entries = plan_entries(table, snapshot, specs)
    ttl = scan_record_ttl(table.schema, include_expired=include_expired)
    if ttl is not None:
        entries = ttl.prune(entries, table.context.schema_by_id)
    if snapshot is None or not entries:
        return spark.createDataFrame([], spark_schema)
    data = data_reader(path, options, table.schema)
    paths = [data.path_of(e) for e in entries]
    reason = native_blocker(table, entries, paths)
    if reason is None:
        file_io = table.context.io
        try:
            frame = spark.read.schema(spark_schema).parquet(*[native_url(file_io, p) for p in paths])
        except Exception as exc:  # e.g. no Hadoop filesystem for the scheme: Spark checks the paths right here
            reason = f"Spark cannot open the files itself ({' '.join(str(exc).split())[:300]})"
        else:
            log.info("tablefmt: native Parquet read of %d file(s) of snapshot %d", len(paths), snapshot.id)
            return frame if ttl is None else frame.where(keep_condition(ttl))
    log.info("tablefmt: reading snapshot %d through the data source: %s", snapshot.id, reason)
    ensure_registered(spark)
    fallback = spark.read.format("tablefmt").option("path", path).option(SCAN_SNAPSHOT_ID, str(snapshot.id))
    if specs:
        fallback = fallback.option(PARTITIONS, _filter_text(specs, table.options.require(PARTITION_DEFAULT_NAME)))
    if options:
        fallback = fallback.option(STORAGE_OPTIONS, json.dumps(options))
    if include_expired:
        fallback = fallback.option(SCAN_INCLUDE_EXPIRED, "true")
    return fallback.load()
