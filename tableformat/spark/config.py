"""Options of the ``tablefmt`` Spark data source: parsing, validation and the documented key set.

Spark hands a data source its options as a case-insensitive map with lower-cased keys and string values, so every
key here is lower case. Unknown keys are refused: a typo such as ``partiton`` on an overwrite would otherwise turn a
partition overwrite into a whole-table overwrite.

Read options:

* ``scan.snapshot-id``, ``scan.tag-name``, ``scan.timestamp-millis`` (at most one; default: the latest snapshot)
* ``partitions``: partition filter ``k=v[,k=v][;k=v...]`` (``,`` = AND inside one spec, ``;`` = OR of specs)
* ``source.split.target-size`` (default 128 mb), ``source.split.open-file-cost`` (default 4 mb),
  ``scan.parallelism`` (splits to aim for; default: CPUs of the driver host)

Write options:

* ``partition``: static partition overwrite ``k=v[,k=v]`` (overwrite mode only)
* ``dynamic-partition-overwrite``: ``true`` replaces exactly the partitions present in the data (overwrite mode
  only); ``false`` forces a whole-table overwrite; unset follows the table option of the same name
* ``partitionby`` / ``partition-keys``: partition columns when the write creates the table
* any table option of the registry (``snapshot.num-retained.min``, ``write-only``, ...): stored in the table when
  the write creates it; on an existing table it must equal the table's value (tablefmt has no per-job overrides)
* ``write-buffer-size``: Arrow bytes a task buffers before writing files (default: the table's target-file-size)

Both: ``storage.<key>`` sets one fsspec storage option, read like the CLI's ``--storage-option`` by
tableformat.io.storage_options (``storage.anon=false`` is False, ``storage.max_concurrency=4`` is 4,
``storage.client_kwargs.region_name=eu`` nests); ``storage-options`` takes a JSON object for anything else (values
that are dicts, keys with capitals, which Spark would lower-case in a ``storage.<key>``). ``storage.<key>`` entries
win over the JSON object.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.durations import MAX_SIZE_BYTES, parse_memory_bytes
from tableformat.errors import ValidationError
from tableformat.io.storage_options import storage_options_from_items
from tableformat.model.partition import parse_spec_text
from tableformat.option_types import INT32_MAX
from tableformat.options import DYNAMIC_PARTITION_OVERWRITE, REGISTRY

PATH = "path"
STORAGE_PREFIX = "storage."
STORAGE_OPTIONS = "storage-options"

SCAN_SNAPSHOT_ID = "scan.snapshot-id"
SCAN_TAG_NAME = "scan.tag-name"
SCAN_TIMESTAMP_MILLIS = "scan.timestamp-millis"
PARTITIONS = "partitions"
SPLIT_TARGET_SIZE = "source.split.target-size"
SPLIT_OPEN_FILE_COST = "source.split.open-file-cost"
SCAN_PARALLELISM = "scan.parallelism"
SCAN_INCLUDE_EXPIRED = "scan.include-expired"
"""``true``: also return rows expired by the table's record-level TTL (audits); default false."""

PARTITION = "partition"
DYNAMIC = DYNAMIC_PARTITION_OVERWRITE.key
PARTITION_BY = "partitionby"
PARTITION_KEYS = "partition-keys"
WRITE_BUFFER_SIZE = "write-buffer-size"
MERGE_SCHEMA = "mergeschema"
"""``mergeSchema=true``: the DataFrame's new columns (and wider types) are added to the table first (docs/schema.md)."""

DEFAULT_SPLIT_TARGET_SIZE = 128 * 1024**2
DEFAULT_SPLIT_OPEN_FILE_COST = 4 * 1024**2

_COMMON_KEYS = frozenset({PATH, STORAGE_OPTIONS})
READ_KEYS = _COMMON_KEYS | {
    SCAN_SNAPSHOT_ID,
    SCAN_TAG_NAME,
    SCAN_TIMESTAMP_MILLIS,
    PARTITIONS,
    SPLIT_TARGET_SIZE,
    SPLIT_OPEN_FILE_COST,
    SCAN_PARALLELISM,
    SCAN_INCLUDE_EXPIRED,
}
WRITE_KEYS = _COMMON_KEYS | {PARTITION, DYNAMIC, PARTITION_BY, PARTITION_KEYS, WRITE_BUFFER_SIZE, MERGE_SCHEMA}
TABLE_OPTION_KEYS = frozenset(k for k in REGISTRY if k != DYNAMIC)
"""Registry options a write may carry (stored when the write creates the table). dynamic-partition-overwrite is
a per-job switch here, never stored."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def check_keys(options: Mapping[str, str], allowed: frozenset[str] | set[str], what: str) -> None:
    """Refuse keys the data source does not know (``storage.*`` is always allowed)."""
    unknown = sorted(k for k in _lower(options) if k not in allowed and not k.startswith(STORAGE_PREFIX))
    if unknown:
        raise ValidationError(
            f"unknown {what} option(s) {unknown} for format 'tablefmt'; known: {sorted(allowed)} and storage.<key>"
        )


def table_path(options: Mapping[str, str]) -> str:
    """The table location given to ``save(path)`` / ``load(path)`` (a local path or an fsspec URL)."""
    path = _lower(options).get(PATH, "").strip()
    if not path:
        raise ValidationError("format 'tablefmt' needs a table path: use .save(path) / .load(path)")
    return path


def storage_options(options: Mapping[str, str]) -> dict[str, Any]:
    """fsspec storage options: the ``storage-options`` JSON object, then the ``storage.<key>`` entries over it.

    ``storage.<key>`` entries are read by tableformat.io.storage_options (typed values, ``outer.inner`` nests one
    level); a nested entry adds to a dict the JSON object gave for the same outer key.
    """
    lowered = _lower(options)
    result: dict[str, Any] = {}
    raw = lowered.get(STORAGE_OPTIONS)
    if raw:
        try:
            loaded = json.loads(raw)
        except ValueError as exc:
            raise ValidationError(f"option {STORAGE_OPTIONS} must be a JSON object: {exc}") from None
        if not isinstance(loaded, dict):
            raise ValidationError(f"option {STORAGE_OPTIONS} must be a JSON object, got {type(loaded).__name__}")
        result.update(loaded)
    entries = [(key, value) for key, value in lowered.items() if key.startswith(STORAGE_PREFIX)]
    for key, value in storage_options_from_items(entries, prefix=STORAGE_PREFIX).items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = {**result[key], **value}
        else:
            result[key] = value
    return result


def _int(options: Mapping[str, str], key: str) -> int | None:
    text = options.get(key)
    if text is None or not text.strip():
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise ValidationError(f"option {key} must be an integer, got {text!r}") from None


def _memory(options: Mapping[str, str], key: str) -> int | None:
    text = options.get(key)
    if text is None or not text.strip():
        return None
    try:
        value = parse_memory_bytes(text)
    except ValidationError as exc:
        raise ValidationError(f"option {key}: {exc}") from None
    if value <= 0:
        raise ValidationError(f"option {key} must be positive, got {text!r}")
    if value > MAX_SIZE_BYTES:
        raise ValidationError(f"option {key} must be >= 1 b and <= {MAX_SIZE_BYTES} b, got {text!r}")
    return value


def _bool(options: Mapping[str, str], key: str) -> bool | None:
    text = options.get(key)
    if text is None or not text.strip():
        return None
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValidationError(f"option {key} must be true or false, got {text!r}")
    return lowered == "true"


def parse_partition_filter(text: str) -> list[dict[str, str]]:
    """``dt=1,h=2;dt=3`` -> [{'dt': '1', 'h': '2'}, {'dt': '3'}] (an OR of partial specs)."""
    specs = [parse_spec_text(part) for part in text.split(";") if part.strip()]
    if not specs:
        raise ValidationError(f"option {PARTITIONS} is empty: expected k=v[,k=v][;k=v...]")
    return specs


@dataclass(frozen=True, slots=True)
class ReadConfig:
    """Parsed read options."""

    path: str
    storage_options: dict[str, Any]
    snapshot_id: int | None
    tag: str | None
    timestamp_ms: int | None
    partition_filter: list[dict[str, str]] | None
    split_target_size: int
    split_open_file_cost: int
    parallelism: int | None
    include_expired: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadConfig:
        check_keys(options, READ_KEYS, "read")
        lowered = _lower(options)
        snapshot_id = _int(lowered, SCAN_SNAPSHOT_ID)
        tag = lowered.get(SCAN_TAG_NAME) or None
        timestamp_ms = _int(lowered, SCAN_TIMESTAMP_MILLIS)
        given = {SCAN_SNAPSHOT_ID: snapshot_id, SCAN_TAG_NAME: tag, SCAN_TIMESTAMP_MILLIS: timestamp_ms}
        chosen = [k for k, v in given.items() if v is not None]
        if len(chosen) > 1:
            raise ValidationError(f"give at most one of {sorted(given)}; got {chosen}")
        filter_text = lowered.get(PARTITIONS)
        parallelism = _int(lowered, SCAN_PARALLELISM)
        if parallelism is not None and not 1 <= parallelism <= INT32_MAX:
            raise ValidationError(f"option {SCAN_PARALLELISM} must be >= 1 and <= {INT32_MAX}, got {parallelism}")
        return cls(
            path=table_path(lowered),
            storage_options=storage_options(lowered),
            snapshot_id=snapshot_id,
            tag=tag,
            timestamp_ms=timestamp_ms,
            partition_filter=parse_partition_filter(filter_text) if filter_text is not None else None,
            split_target_size=_memory(lowered, SPLIT_TARGET_SIZE) or DEFAULT_SPLIT_TARGET_SIZE,
            split_open_file_cost=_memory(lowered, SPLIT_OPEN_FILE_COST) or DEFAULT_SPLIT_OPEN_FILE_COST,
            parallelism=parallelism,
            include_expired=bool(_bool(lowered, SCAN_INCLUDE_EXPIRED)),
        )


@dataclass(frozen=True, slots=True)
class WriteConfig:
    """Parsed write options."""

    path: str
    storage_options: dict[str, Any]
    static_partition: dict[str, str] | None
    dynamic: bool | None
    partition_keys: tuple[str, ...] | None
    table_options: dict[str, str]
    buffer_bytes: int | None
    merge_schema: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str], *, overwrite: bool) -> WriteConfig:
        check_keys(options, WRITE_KEYS | TABLE_OPTION_KEYS, "write")
        lowered = _lower(options)
        spec_text = lowered.get(PARTITION)
        static = parse_spec_text(spec_text) if spec_text is not None else None
        dynamic = _bool(lowered, DYNAMIC)
        if not overwrite and (static is not None or dynamic):
            raise ValidationError(
                f"options {PARTITION!r} and {DYNAMIC!r} apply to mode('overwrite') only; this write is an append"
            )
        if static is not None and dynamic:
            raise ValidationError(f"give either {PARTITION!r} (static) or {DYNAMIC}=true (dynamic), not both")
        keys_text = [lowered[k] for k in (PARTITION_BY, PARTITION_KEYS) if k in lowered]
        if len(keys_text) == 2 and keys_text[0].replace(" ", "") != keys_text[1].replace(" ", ""):
            raise ValidationError(f"options {PARTITION_BY!r} and {PARTITION_KEYS!r} disagree: {keys_text}")
        partition_keys = tuple(k.strip() for k in keys_text[0].split(",") if k.strip()) if keys_text else None
        table_options = {k: v for k, v in lowered.items() if k in TABLE_OPTION_KEYS}
        for key, value in table_options.items():
            REGISTRY[key].parse(value)
        return cls(
            path=table_path(lowered),
            storage_options=storage_options(lowered),
            static_partition=static,
            dynamic=dynamic,
            partition_keys=partition_keys,
            table_options=table_options,
            buffer_bytes=_memory(lowered, WRITE_BUFFER_SIZE),
            merge_schema=bool(_bool(lowered, MERGE_SCHEMA)),
        )
