"""JSON metadata: schema, snapshot, tag, consumer files and the LATEST/EARLIEST hints.

Field names are declared once here. Unknown top-level snapshot keys are kept in ``Snapshot.extra`` and written
back unchanged; readers never fail on keys they do not know.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.model.index import Statistics
from tableformat.model.schema import DataField, TableSchema
from tableformat.model.snapshot import CommitKind, Consumer, Snapshot, Tag
from tableformat.model.types import DataType

SUPPORTED_SNAPSHOT_VERSIONS = (1, 2, 3)
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3)

# snapshot JSON key -> model attribute, in the order pypaimon 2.1.0 writes them
_SNAPSHOT_FIELDS: tuple[tuple[str, str], ...] = (
    ("version", "version"),
    ("id", "id"),
    ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"),
    ("deltaManifestList", "delta_manifest_list"),
    ("totalRecordCount", "total_record_count"),
    ("deltaRecordCount", "delta_record_count"),
    ("commitUser", "commit_user"),
    ("commitIdentifier", "commit_identifier"),
    ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"),
    ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"),
    ("changelogRecordCount", "changelog_record_count"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("nextRowId", "next_row_id"),
    ("properties", "properties"),
    ("uuid", "uuid"),
    ("writerVersion", "writer_version"),
)
_REQUIRED_SNAPSHOT_KEYS = ("id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser", "commitKind")
_TAG_KEYS = ("tagCreateTime", "tagTimeRetained")
_ATTRIBUTE_OF_KEY = dict(_SNAPSHOT_FIELDS)
_COMMIT_KINDS = {kind.value: kind for kind in CommitKind}


def dumps(document: Mapping[str, Any]) -> bytes:
    """Serialize a metadata document laid out as pypaimon 2.1.0 writes it (indent 2)."""
    return json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8")


def _load_object(data: bytes, path: str) -> dict[str, Any]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # RecursionError: absurd nesting
        reason = "empty file" if not data.strip() else f"invalid JSON ({exc})"
        raise CorruptMetadataError(path, reason) from None
    if not isinstance(document, dict):
        raise CorruptMetadataError(path, "expected a JSON object")
    return document


# --- schema ------------------------------------------------------------------------------------------------------
def schema_to_json(schema: TableSchema) -> bytes:
    """schema/schema-N content."""
    fields = []
    for f in schema.fields:
        entry: dict[str, Any] = {"id": f.id, "name": f.name, "type": str(f.type)}
        if f.description is not None:
            entry["description"] = f.description
        fields.append(entry)
    return dumps(
        {
            "version": schema.version,
            "id": schema.id,
            "fields": fields,
            "highestFieldId": schema.highest_field_id,
            "partitionKeys": list(schema.partition_keys),
            "primaryKeys": list(schema.primary_keys),
            "options": dict(schema.options),
            "comment": schema.comment,
            "timeMillis": schema.time_millis,
        }
    )


def schema_from_json(data: bytes, path: str) -> TableSchema:
    """Parse schema/schema-N; CorruptMetadataError / UnsupportedFormatError name the file."""
    doc = _load_object(data, path)
    version = doc.get("version", 1)
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise UnsupportedFormatError(f"{path}: schema version {version} is not supported")
    try:
        fields = tuple(
            DataField(
                id=int(f["id"]), name=str(f["name"]), type=DataType.parse(f["type"]), description=f.get("description")
            )
            for f in doc["fields"]
        )
        return TableSchema(
            version=int(version),
            id=int(doc["id"]),
            fields=fields,
            highest_field_id=int(doc.get("highestFieldId", max((f.id for f in fields), default=-1))),
            partition_keys=tuple(doc.get("partitionKeys") or ()),
            primary_keys=tuple(doc.get("primaryKeys") or ()),
            options={str(k): str(v) for k, v in (doc.get("options") or {}).items()},
            comment=doc.get("comment"),
            time_millis=int(doc.get("timeMillis") or 0),
        )
    except UnsupportedFormatError as exc:
        raise UnsupportedFormatError(f"{path}: {exc}") from None
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise CorruptMetadataError(path, f"missing or invalid field ({exc})") from None


# --- snapshot ----------------------------------------------------------------------------------------------------
def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON object of a snapshot (None fields omitted, unknown keys preserved)."""
    doc: dict[str, Any] = {}
    for key, attr in _SNAPSHOT_FIELDS:
        value = getattr(snapshot, attr)
        if value is None:
            continue
        if isinstance(value, CommitKind):
            value = value.value
        elif key == "properties":
            value = dict(value)
        doc[key] = value
    for key, value in snapshot.extra.items():
        doc.setdefault(key, value)
    return doc


def snapshot_to_json(snapshot: Snapshot) -> bytes:
    """snapshot/snapshot-N content."""
    return dumps(snapshot_to_dict(snapshot))


def snapshot_from_dict(doc: Mapping[str, Any], path: str) -> Snapshot:
    """Build a Snapshot from its JSON object."""
    version = doc.get("version", 1)
    if version not in SUPPORTED_SNAPSHOT_VERSIONS:
        raise UnsupportedFormatError(f"{path}: snapshot version {version} is not supported")
    missing = [k for k in _REQUIRED_SNAPSHOT_KEYS if doc.get(k) is None]
    if missing:
        raise CorruptMetadataError(path, f"missing field(s) {missing}")
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in doc.items():
        attr = _ATTRIBUTE_OF_KEY.get(key)
        if attr is not None:
            if value is not None:
                kwargs[attr] = value
        elif key not in _TAG_KEYS:
            extra[key] = value
    try:
        kind = doc["commitKind"]
        kwargs["commit_kind"] = _COMMIT_KINDS[kind] if kind in _COMMIT_KINDS else CommitKind(str(kind))
        for attr in ("id", "schema_id", "time_millis", "commit_identifier"):
            value = kwargs.get(attr, 0)
            if type(value) is not int or attr not in kwargs:
                kwargs[attr] = int(value)
        if "properties" in kwargs:
            kwargs["properties"] = {str(k): str(v) for k, v in kwargs["properties"].items()}
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:  # OverflowError: 1e999, Infinity
        raise CorruptMetadataError(path, f"invalid field ({exc})") from None
    return Snapshot(**kwargs, extra=extra)


def snapshot_from_json(data: bytes, path: str) -> Snapshot:
    """Parse snapshot/snapshot-N."""
    return snapshot_from_dict(_load_object(data, path), path)


# --- tags and consumers ------------------------------------------------------------------------------------------
def tag_to_json(tag: Tag) -> bytes:
    """tag/tag-NAME content: the snapshot plus tag fields."""
    doc = snapshot_to_dict(tag.snapshot)
    if tag.create_time is not None:
        doc["tagCreateTime"] = list(tag.create_time)
    if tag.time_retained_seconds is not None:
        doc["tagTimeRetained"] = tag.time_retained_seconds
    return dumps(doc)


def _parse_tag_time_retained(value: Any) -> float | None:
    """Jackson writes a Duration as seconds (7200.0); also accept ISO-8601 'PT2H'."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).upper()
    if text.startswith("PT"):
        total, number = 0.0, ""
        for ch in text[2:]:
            if ch.isdigit() or ch == ".":
                number += ch
            else:
                total += float(number or 0) * {"H": 3600, "M": 60, "S": 1}[ch]
                number = ""
        return total
    return float(text)


def tag_from_json(name: str, data: bytes, path: str) -> Tag:
    """Parse tag/tag-NAME."""
    doc = _load_object(data, path)
    snapshot = snapshot_from_dict(doc, path)
    create = doc.get("tagCreateTime")
    try:
        create_time = tuple(int(x) for x in create) if isinstance(create, list) else None
        retained = _parse_tag_time_retained(doc.get("tagTimeRetained"))
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise CorruptMetadataError(path, f"invalid tag field ({exc})") from None
    return Tag(name=name, snapshot=snapshot, create_time=create_time, time_retained_seconds=retained)


def consumer_to_json(consumer: Consumer) -> bytes:
    """consumer/consumer-ID content."""
    return dumps({"nextSnapshot": consumer.next_snapshot})


def consumer_from_json(consumer_id: str, data: bytes, path: str, modified_ms: int | None) -> Consumer:
    """Parse consumer/consumer-ID."""
    doc = _load_object(data, path)
    try:
        return Consumer(consumer_id=consumer_id, next_snapshot=int(doc["nextSnapshot"]), modified_ms=modified_ms)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise CorruptMetadataError(path, f"missing or invalid nextSnapshot ({exc})") from None


# --- statistics (statistics/stat-<uuid>-<n>) ---------------------------------------------------------------------
def statistics_to_json(statistics: Statistics) -> bytes:
    """A statistics file as Paimon's ``Statistics.toJson`` writes it (null record count and size left out)."""
    doc: dict[str, Any] = {"snapshotId": statistics.snapshot_id, "schemaId": statistics.schema_id}
    if statistics.merged_record_count is not None:
        doc["mergedRecordCount"] = statistics.merged_record_count
    if statistics.merged_record_size is not None:
        doc["mergedRecordSize"] = statistics.merged_record_size
    doc["colStats"] = {name: dict(stats) for name, stats in statistics.col_stats.items()}
    return dumps(doc)


def statistics_from_json(data: bytes, path: str) -> Statistics:
    """Parse a statistics file (unknown keys ignored, as Paimon's reader does)."""
    doc = _load_object(data, path)
    try:
        count, size, columns = doc.get("mergedRecordCount"), doc.get("mergedRecordSize"), doc.get("colStats") or {}
        return Statistics(
            snapshot_id=int(doc["snapshotId"]),
            schema_id=int(doc["schemaId"]),
            merged_record_count=None if count is None else int(count),
            merged_record_size=None if size is None else int(size),
            col_stats={str(name): dict(stats) for name, stats in columns.items()},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptMetadataError(path, f"invalid statistics ({exc})") from None


# --- commit log (a snapshot property) ----------------------------------------------------------------------------
def commit_log_to_text(log: Mapping[str, int]) -> str:
    """The {commitUser: last commitIdentifier} map as compact JSON text."""
    return json.dumps(dict(log), separators=(",", ":"))


def commit_log_from_text(text: str) -> dict[str, int]:
    """Parse the commit log; an unreadable log is empty (it only guards against re-commits)."""
    try:
        loaded = json.loads(text)
        return {str(k): int(v) for k, v in loaded.items()}
    except (ValueError, TypeError, AttributeError):
        return {}


# --- hints -------------------------------------------------------------------------------------------------------
def hint_to_bytes(snapshot_id: int) -> bytes:
    """LATEST / EARLIEST content: the decimal id, no newline."""
    return str(snapshot_id).encode("ascii")


def hint_from_bytes(data: bytes) -> int | None:
    """A hint's id, or None when the hint is unreadable (hints are only hints)."""
    try:
        value = int(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None
    return value if value > 0 else None
