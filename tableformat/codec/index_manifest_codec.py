"""Avro index manifests (``manifest/index-manifest-<uuid>-<n>``): rows of Paimon's ``IndexManifestEntry``.

Fields, order and types are Paimon's (``IndexManifestEntry.SCHEMA`` behind the ``_VERSION`` format identifier 1 of
``IndexManifestEntrySerializer``; ``IndexFileMetaSerializer`` for the deletion-vector ranges and the global index
row). The writer schema below is the text pypaimon 2.1.0 writes (``manifest/index_manifest_file.py``), with its record
names ``IndexManifestEntry``, ``DeletionVectorMeta`` and ``GlobalIndexMeta``; Java names its records
``org.apache.paimon.avro.generated.record`` and ``record__DELETIONS_VECTORS_RANGES`` (``AvroSchemaConverter``) and
makes the array items a ``["null", record]`` union. Readers go by field name with the file's own schema, so both
read, and so do files of older Paimon versions without ``_CARDINALITY``, ``_EXTERNAL_PATH`` or ``_GLOBAL_INDEX``.
The codec is the manifests' (``manifest.compression`` zstd).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tableformat.codec import avro_codec
from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.model.index import DeletionVectorMeta, GlobalIndexMeta, IndexFileMeta, IndexManifestEntry
from tableformat.model.manifest import FileKind

INDEX_MANIFEST_VERSION = 1
"""``IndexManifestEntrySerializer.FORMAT_IDENTIFIER``: the ``_VERSION`` of every row; others are refused."""

DELETION_VECTOR_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "DeletionVectorMeta",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
    ],
}

GLOBAL_INDEX_META_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "GlobalIndexMeta",
    "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        {"name": "_EXTRA_FIELD_IDS", "type": ["null", {"type": "array", "items": "int"}], "default": None},
        {"name": "_INDEX_META", "type": ["null", "bytes"], "default": None},
        {"name": "_SOURCE_META", "type": ["null", "bytes"], "default": None},
    ],
}

INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "IndexManifestEntry",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            "type": ["null", {"type": "array", "items": DELETION_VECTOR_META_SCHEMA}],
            "default": None,
        },
        {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
        {"name": "_GLOBAL_INDEX", "type": ["null", GLOBAL_INDEX_META_SCHEMA], "default": None},
    ],
}


def _global_index_to_record(meta: GlobalIndexMeta | None) -> dict[str, Any] | None:
    if meta is None:
        return None
    return {
        "_ROW_RANGE_START": meta.row_range_start,
        "_ROW_RANGE_END": meta.row_range_end,
        "_INDEX_FIELD_ID": meta.index_field_id,
        "_EXTRA_FIELD_IDS": None if meta.extra_field_ids is None else list(meta.extra_field_ids),
        "_INDEX_META": meta.index_meta,
        "_SOURCE_META": meta.source_meta,
    }


def _global_index_from_record(record: dict[str, Any] | None) -> GlobalIndexMeta | None:
    if record is None:
        return None
    extra, index_meta, source_meta = (record.get(k) for k in ("_EXTRA_FIELD_IDS", "_INDEX_META", "_SOURCE_META"))
    return GlobalIndexMeta(
        row_range_start=int(record["_ROW_RANGE_START"]),
        row_range_end=int(record["_ROW_RANGE_END"]),
        index_field_id=int(record["_INDEX_FIELD_ID"]),
        extra_field_ids=None if extra is None else tuple(int(i) for i in extra),
        index_meta=None if index_meta is None else bytes(index_meta),
        source_meta=None if source_meta is None else bytes(source_meta),
    )


def index_entry_to_record(entry: IndexManifestEntry) -> dict[str, Any]:
    """IndexManifestEntry -> Avro record dict."""
    index_file = entry.index_file
    ranges = index_file.dv_ranges
    return {
        "_VERSION": INDEX_MANIFEST_VERSION,
        "_KIND": int(entry.kind),
        "_PARTITION": entry.partition,
        "_BUCKET": entry.bucket,
        "_INDEX_TYPE": index_file.index_type,
        "_FILE_NAME": index_file.file_name,
        "_FILE_SIZE": index_file.file_size,
        "_ROW_COUNT": index_file.row_count,
        "_DELETIONS_VECTORS_RANGES": None
        if ranges is None
        else [{"f0": r.data_file_name, "f1": r.offset, "f2": r.length, "_CARDINALITY": r.cardinality} for r in ranges],
        "_EXTERNAL_PATH": index_file.external_path,
        "_GLOBAL_INDEX": _global_index_to_record(index_file.global_index),
    }


def index_entry_from_record(record: dict[str, Any]) -> IndexManifestEntry:
    """Avro record dict -> IndexManifestEntry (UnsupportedFormatError for a ``_VERSION`` other than 1)."""
    version = record.get("_VERSION")
    if version != INDEX_MANIFEST_VERSION:
        raise UnsupportedFormatError(f"index manifest entry version {version!r} (supported: {INDEX_MANIFEST_VERSION})")
    ranges = record.get("_DELETIONS_VECTORS_RANGES")
    return IndexManifestEntry(
        kind=FileKind(int(record["_KIND"])),
        partition=bytes(record["_PARTITION"]),
        bucket=int(record["_BUCKET"]),
        index_file=IndexFileMeta(
            index_type=record["_INDEX_TYPE"],
            file_name=record["_FILE_NAME"],
            file_size=int(record["_FILE_SIZE"]),
            row_count=int(record["_ROW_COUNT"]),
            dv_ranges=None
            if ranges is None
            else tuple(
                DeletionVectorMeta(
                    data_file_name=r["f0"], offset=int(r["f1"]), length=int(r["f2"]), cardinality=r.get("_CARDINALITY")
                )
                for r in ranges
            ),
            external_path=record.get("_EXTERNAL_PATH"),
            global_index=_global_index_from_record(record.get("_GLOBAL_INDEX")),
        ),
    )


def write_index_manifest(
    entries: Iterable[IndexManifestEntry], *, sync_marker: bytes | None = None, level: int | None = None
) -> bytes:
    """Bytes of an index manifest (``sync_marker``: 16 bytes, random when not given; ``level``: the zstd level, None
    for fastavro's default)."""
    return avro_codec.write_records(
        INDEX_MANIFEST_ENTRY_SCHEMA, (index_entry_to_record(e) for e in entries), sync_marker, level
    )


def read_index_manifest(data: bytes, path: str) -> list[IndexManifestEntry]:
    """Every entry of an index manifest, as stored (ADD and DELETE); CorruptMetadataError naming ``path`` on any
    decoding problem."""
    try:
        return [index_entry_from_record(r) for r in avro_codec.read_records(data, path)]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadataError(path, f"invalid index manifest entry ({exc})") from None
    except UnsupportedFormatError as exc:
        raise UnsupportedFormatError(f"{path}: {exc}") from None
