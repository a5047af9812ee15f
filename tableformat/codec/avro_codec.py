"""Avro manifest lists and manifests: Paimon's exact record names, field names, types, order and zstd codec.

The writer schemas below are the ones pypaimon 2.1.0 writes (observed in its files); readers go by field name
and tolerate missing optional fields, so files written by Java Paimon (fewer trailing fields) read too.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterable, Iterator
from typing import Any

import fastavro

from tableformat.errors import CorruptMetadataError
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

MANIFEST_VERSION = 2
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_ONE_MS = dt.timedelta(milliseconds=1)
CODEC = "zstandard"


def _stats_record(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None},
        ],
    }


def _optional(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


MANIFEST_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestFileMeta",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_record("record_PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _optional("_MIN_BUCKET", "int"),
        _optional("_MAX_BUCKET", "int"),
        _optional("_MIN_LEVEL", "int"),
        _optional("_MAX_LEVEL", "int"),
        _optional("_MIN_ROW_ID", "long"),
        _optional("_MAX_ROW_ID", "long"),
        _optional("_TOTAL_BUCKETS", "int"),
        _optional("_EXTRA_FILES", {"type": "array", "items": "string"}),
    ],
}

DATA_FILE_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "DataFileMeta",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": _stats_record("record_KEY_STATS")},
        {"name": "_VALUE_STATS", "type": _stats_record("record_VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
        _optional("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _optional("_DELETE_ROW_COUNT", "long"),
        _optional("_EMBEDDED_FILE_INDEX", "bytes"),
        _optional("_FILE_SOURCE", "int"),
        _optional("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _optional("_EXTERNAL_PATH", "string"),
        _optional("_FIRST_ROW_ID", "long"),
        _optional("_WRITE_COLS", {"type": "array", "items": "string"}),
        _optional("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "ManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": DATA_FILE_META_SCHEMA},
    ],
}


# --- records <-> models ------------------------------------------------------------------------------------------
def _stats_to_record(stats: SimpleStats) -> dict[str, Any]:
    return {
        "_MIN_VALUES": stats.min_values,
        "_MAX_VALUES": stats.max_values,
        "_NULL_COUNTS": None if stats.null_counts is None else list(stats.null_counts),
    }


def _stats_from_record(record: dict[str, Any]) -> SimpleStats:
    counts = record.get("_NULL_COUNTS")
    return SimpleStats(
        min_values=bytes(record["_MIN_VALUES"]),
        max_values=bytes(record["_MAX_VALUES"]),
        null_counts=None if counts is None else tuple(counts),
    )


def _opt_tuple(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def data_file_to_record(meta: DataFileMeta) -> dict[str, Any]:
    """DataFileMeta -> Avro record dict."""
    return {
        "_FILE_NAME": meta.file_name,
        "_FILE_SIZE": meta.file_size,
        "_ROW_COUNT": meta.row_count,
        "_MIN_KEY": meta.min_key,
        "_MAX_KEY": meta.max_key,
        "_KEY_STATS": _stats_to_record(meta.key_stats),
        "_VALUE_STATS": _stats_to_record(meta.value_stats),
        "_MIN_SEQUENCE_NUMBER": meta.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": meta.max_sequence_number,
        "_SCHEMA_ID": meta.schema_id,
        "_LEVEL": meta.level,
        "_EXTRA_FILES": list(meta.extra_files),
        "_CREATION_TIME": meta.creation_time_ms,
        "_DELETE_ROW_COUNT": meta.delete_row_count,
        "_EMBEDDED_FILE_INDEX": meta.embedded_index,
        "_FILE_SOURCE": meta.file_source,
        "_VALUE_STATS_COLS": None if meta.value_stats_cols is None else list(meta.value_stats_cols),
        "_EXTERNAL_PATH": meta.external_path,
        "_FIRST_ROW_ID": meta.first_row_id,
        "_WRITE_COLS": None if meta.write_cols is None else list(meta.write_cols),
        "_WRITE_COLS_SEQUENCES": None,
    }


def _creation_ms(value: Any) -> int | None:
    """The stored milliseconds of a timestamp-millis value (fastavro gives a UTC datetime; a long without the logical
    type stays an int). Exact integer arithmetic: ``timestamp() * 1000`` is a float and was off by one for some."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    epoch = _EPOCH if value.tzinfo is not None else _EPOCH.replace(tzinfo=None)
    millis: int = (value - epoch) // _ONE_MS
    return millis


def data_file_from_record(record: dict[str, Any]) -> DataFileMeta:
    """Avro record dict -> DataFileMeta."""
    embedded = record.get("_EMBEDDED_FILE_INDEX")
    return DataFileMeta(
        file_name=record["_FILE_NAME"],
        file_size=int(record["_FILE_SIZE"]),
        row_count=int(record["_ROW_COUNT"]),
        min_key=bytes(record["_MIN_KEY"]),
        max_key=bytes(record["_MAX_KEY"]),
        key_stats=_stats_from_record(record["_KEY_STATS"]),
        value_stats=_stats_from_record(record["_VALUE_STATS"]),
        min_sequence_number=int(record["_MIN_SEQUENCE_NUMBER"]),
        max_sequence_number=int(record["_MAX_SEQUENCE_NUMBER"]),
        schema_id=int(record["_SCHEMA_ID"]),
        level=int(record["_LEVEL"]),
        extra_files=tuple(record.get("_EXTRA_FILES") or ()),
        creation_time_ms=_creation_ms(record.get("_CREATION_TIME")),
        delete_row_count=record.get("_DELETE_ROW_COUNT"),
        embedded_index=None if embedded is None else bytes(embedded),
        file_source=record.get("_FILE_SOURCE"),
        value_stats_cols=_opt_tuple(record.get("_VALUE_STATS_COLS")),
        external_path=record.get("_EXTERNAL_PATH"),
        first_row_id=record.get("_FIRST_ROW_ID"),
        write_cols=_opt_tuple(record.get("_WRITE_COLS")),
    )


def entry_to_record(entry: ManifestEntry) -> dict[str, Any]:
    """ManifestEntry -> Avro record dict."""
    return {
        "_VERSION": MANIFEST_VERSION,
        "_KIND": int(entry.kind),
        "_PARTITION": entry.partition,
        "_BUCKET": entry.bucket,
        "_TOTAL_BUCKETS": entry.total_buckets,
        "_FILE": data_file_to_record(entry.file),
    }


def entry_from_record(record: dict[str, Any]) -> ManifestEntry:
    """Avro record dict -> ManifestEntry."""
    return ManifestEntry(
        kind=FileKind(int(record["_KIND"])),
        partition=bytes(record["_PARTITION"]),
        bucket=int(record["_BUCKET"]),
        total_buckets=int(record.get("_TOTAL_BUCKETS", -1)),
        file=data_file_from_record(record["_FILE"]),
    )


def manifest_meta_to_record(meta: ManifestFileMeta) -> dict[str, Any]:
    """ManifestFileMeta -> Avro record dict."""
    return {
        "_VERSION": MANIFEST_VERSION,
        "_FILE_NAME": meta.file_name,
        "_FILE_SIZE": meta.file_size,
        "_NUM_ADDED_FILES": meta.num_added_files,
        "_NUM_DELETED_FILES": meta.num_deleted_files,
        "_PARTITION_STATS": _stats_to_record(meta.partition_stats),
        "_SCHEMA_ID": meta.schema_id,
        "_MIN_BUCKET": meta.min_bucket,
        "_MAX_BUCKET": meta.max_bucket,
        "_MIN_LEVEL": meta.min_level,
        "_MAX_LEVEL": meta.max_level,
        "_MIN_ROW_ID": meta.min_row_id,
        "_MAX_ROW_ID": meta.max_row_id,
        "_TOTAL_BUCKETS": None,
        "_EXTRA_FILES": None,
    }


def manifest_meta_from_record(record: dict[str, Any]) -> ManifestFileMeta:
    """Avro record dict -> ManifestFileMeta."""
    return ManifestFileMeta(
        file_name=record["_FILE_NAME"],
        file_size=int(record["_FILE_SIZE"]),
        num_added_files=int(record["_NUM_ADDED_FILES"]),
        num_deleted_files=int(record["_NUM_DELETED_FILES"]),
        partition_stats=_stats_from_record(record["_PARTITION_STATS"]),
        schema_id=int(record["_SCHEMA_ID"]),
        min_bucket=record.get("_MIN_BUCKET"),
        max_bucket=record.get("_MAX_BUCKET"),
        min_level=record.get("_MIN_LEVEL"),
        max_level=record.get("_MAX_LEVEL"),
        min_row_id=record.get("_MIN_ROW_ID"),
        max_row_id=record.get("_MAX_ROW_ID"),
    )


# --- files -------------------------------------------------------------------------------------------------------
def _write(
    schema: Any, records: Iterable[dict[str, Any]], sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    # The unparsed schema dict is passed so the header holds the same schema JSON text pypaimon writes.
    buffer = io.BytesIO()
    fastavro.writer(
        buffer, schema, records, codec=CODEC, sync_marker=sync_marker or b"", codec_compression_level=level
    )
    return buffer.getvalue()


def _read(data: bytes, path: str) -> Iterator[dict[str, Any]]:
    try:
        for record in fastavro.reader(io.BytesIO(data)):
            if not isinstance(record, dict):
                raise ValueError("record is not an Avro record")
            yield record
    except Exception as exc:  # fastavro raises many unrelated types (ValueError, EOFError, zstd errors, ...)
        raise CorruptMetadataError(path, f"unreadable Avro ({type(exc).__name__}: {exc})") from None


def write_records(
    schema: Any, records: Iterable[dict[str, Any]], sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """An Avro container of ``records`` under ``schema`` with Paimon's manifest codec (other metadata codecs)."""
    return _write(schema, records, sync_marker, level)


def read_records(data: bytes, path: str) -> Iterator[dict[str, Any]]:
    """The records of an Avro container; CorruptMetadataError naming ``path`` when it is not readable Avro."""
    return _read(data, path)


def write_manifest(
    entries: Iterable[ManifestEntry], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """Bytes of a manifest file (``sync_marker``: 16 bytes, random when not given; ``level``: the zstd level, None
    for fastavro's default, 3)."""
    return _write(MANIFEST_ENTRY_SCHEMA, (entry_to_record(e) for e in entries), sync_marker, level)


def read_manifest(data: bytes, path: str) -> list[ManifestEntry]:
    """Entries of a manifest file; CorruptMetadataError naming ``path`` on any decoding problem."""
    try:
        return [entry_from_record(r) for r in _read(data, path)]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(path, f"invalid manifest entry ({exc})") from None


def write_manifest_list(
    metas: Iterable[ManifestFileMeta], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """Bytes of a manifest list file (``sync_marker``: 16 bytes, random when not given; ``level`` as for
    :func:`write_manifest`)."""
    return _write(MANIFEST_FILE_META_SCHEMA, (manifest_meta_to_record(m) for m in metas), sync_marker, level)


def read_manifest_list(data: bytes, path: str) -> list[ManifestFileMeta]:
    """Rows of a manifest list file."""
    try:
        return [manifest_meta_from_record(r) for r in _read(data, path)]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(path, f"invalid manifest list row ({exc})") from None
