"""Bytes of file lists that stand in for a listing (``--file-list``): an S3 Inventory report and a plain list.

An S3 Inventory report (as AWS documents it, "Locating your inventory list") is a ``manifest.json`` naming its
source bucket, its destination bucket (an ARN), the format and schema of its data files and the data files
themselves (``files``: ``key`` in the destination bucket, ``size``, ``MD5checksum``), with ``creationTimestamp``
in milliseconds (a string). CSV data files (gzipped as AWS writes them; plain ones are read too) have no header:
their columns are ``fileSchema`` (``Bucket, Key, Size, LastModifiedDate, ...``), keys URL-encoded (``+`` for a
space). Parquet data files have named columns (``bucket``, ``key``, ``size``, ``last_modified_date``). A versioned
inventory's rows that are not the latest version, or are delete markers, are not files.

A plain file list is a Parquet file or a CSV file with a header, columns ``path``, ``size``, ``last_modified``
(a timestamp, an ISO 8601 string, or milliseconds).

Everything here turns bytes (or a stream, read as the rows are needed) into :class:`ListedFile` rows or raises
:class:`~tableformat.errors.FileListError`.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, cast
from urllib.parse import unquote_plus

from tableformat.errors import FileListError
from tableformat.lazy_module import lazy_module
from tableformat.units import instant_ms

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pq = lazy_module("pyarrow.parquet")

INVENTORY_FORMATS = ("CSV", "Parquet")
"""Data file formats of an S3 Inventory that are read (AWS also writes ORC)."""

_CSV_FIELDS = ("Bucket", "Key", "Size", "LastModifiedDate")
_PARQUET_COLUMNS = ("bucket", "key", "size", "last_modified_date")
PLAIN_COLUMNS = ("path", "size", "last_modified")


@dataclass(frozen=True, slots=True)
class InventoryDataFile:
    key: str
    """The data file's key in the destination bucket."""
    size: int


@dataclass(frozen=True, slots=True)
class InventoryManifest:
    """A decoded ``manifest.json``."""

    source_bucket: str
    destination_bucket: str
    """The destination bucket's name (the ARN's last part)."""
    file_format: str
    file_schema: tuple[str, ...]
    """CSV: the column names in order; Parquet: empty (its columns are named in the files)."""
    files: tuple[InventoryDataFile, ...]
    created_ms: int


@dataclass(frozen=True, slots=True)
class ListedFile:
    """One row: a file's location (``bucket/key`` for an inventory, the given path for a plain list), size, mtime."""

    path: str
    size: int
    mtime_ms: int


def manifest_from_json(data: bytes, where: str) -> InventoryManifest:
    """The manifest; FileListError naming ``where`` when it is not an S3 Inventory manifest this reads."""
    try:
        doc = json.loads(data.decode("utf-8"))
        destination = str(doc["destinationBucket"])
        file_format = str(doc["fileFormat"])
        files = tuple(InventoryDataFile(str(f["key"]), int(f.get("size", 0))) for f in doc["files"])
        manifest = InventoryManifest(
            source_bucket=str(doc["sourceBucket"]),
            destination_bucket=destination.rpartition(":::")[2] if ":::" in destination else destination,
            file_format=file_format,
            file_schema=tuple(f.strip() for f in str(doc.get("fileSchema", "")).split(","))
            if file_format == "CSV"
            else (),
            files=files,
            created_ms=int(doc["creationTimestamp"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FileListError(f"{where} is not an S3 Inventory manifest: {type(exc).__name__} {exc}") from None
    if file_format not in INVENTORY_FORMATS:
        raise FileListError(f"{where}: inventory format {file_format!r} is not read (only CSV and Parquet)")
    missing = [field for field in _CSV_FIELDS if file_format == "CSV" and field not in manifest.file_schema]
    if missing:
        raise FileListError(f"{where}: the inventory has no {', '.join(missing)} field (configure it with them)")
    return manifest


def inventory_rows(source: bytes | IO[bytes], manifest: InventoryManifest, where: str) -> Iterator[ListedFile]:
    """The files of one inventory data file (``bucket/key`` paths, keys decoded), read as they are needed from
    ``source`` (its bytes, or a seekable stream)."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    if manifest.file_format == "CSV":
        return _csv_inventory_rows(stream, manifest.file_schema, where)
    return _parquet_inventory_rows(stream, where)


def _csv_inventory_rows(stream: IO[bytes], schema: tuple[str, ...], where: str) -> Iterator[ListedFile]:
    column = {name: index for index, name in enumerate(schema)}
    bucket, key, size, modified = (column[field] for field in _CSV_FIELDS)
    latest, marker = column.get("IsLatest"), column.get("IsDeleteMarker")
    for number, row in enumerate(csv.reader(_text_lines(stream, where)), start=1):
        if len(row) != len(schema):
            raise FileListError(
                f"{where} row {number}: {len(row)} columns, the manifest's fileSchema has {len(schema)}"
            )
        if (latest is not None and row[latest].lower() != "true") or (
            marker is not None and row[marker].lower() == "true"
        ):
            continue
        name = unquote_plus(row[key])
        if name.endswith("/") or not row[size]:
            continue  # a directory marker, or a delete marker without a size
        yield ListedFile(
            f"{row[bucket]}/{name}", _int(row[size], where, number), _time_ms(row[modified], where, number)
        )


def _parquet_inventory_rows(stream: IO[bytes], where: str) -> Iterator[ListedFile]:
    for batch in _parquet_batches(stream, where, _PARQUET_COLUMNS, ("is_latest", "is_delete_marker")):
        buckets, keys, sizes = (batch.column(name).to_pylist() for name in _PARQUET_COLUMNS[:3])
        times = _times_ms(batch.column("last_modified_date"), where)
        names = batch.schema.names
        latest = batch.column("is_latest").to_pylist() if "is_latest" in names else None
        markers = batch.column("is_delete_marker").to_pylist() if "is_delete_marker" in names else None
        for index, (bucket, key, size, mtime) in enumerate(zip(buckets, keys, sizes, times)):
            if (latest is not None and latest[index] is not True) or (markers is not None and markers[index] is True):
                continue
            if key is None or bucket is None or size is None or mtime is None or key.endswith("/"):
                continue
            yield ListedFile(f"{bucket}/{key}", int(size), mtime)


def plain_rows(source: bytes | IO[bytes], where: str) -> Iterator[ListedFile]:
    """The rows of a plain file list (Parquet by its magic bytes, else CSV with a header), read as they are needed
    from ``source`` (its bytes, or a seekable stream)."""
    stream = io.BytesIO(source) if isinstance(source, bytes) else source
    if _peek(stream, 4, where) == b"PAR1":
        number = 0
        for batch in _parquet_batches(stream, where, PLAIN_COLUMNS, ()):
            paths, sizes = batch.column("path").to_pylist(), batch.column("size").to_pylist()
            times = _times_ms(batch.column("last_modified"), where)
            for path, size, mtime in zip(paths, sizes, times):
                number += 1
                if path is None or size is None or mtime is None:
                    raise FileListError(f"{where} row {number}: path, size and last_modified must not be null")
                yield ListedFile(str(path), int(size), mtime)
        return
    reader = csv.reader(_text_lines(stream, where))
    header = [name.strip() for name in next(reader, [])]
    missing = [name for name in PLAIN_COLUMNS if name not in header]
    if missing:
        raise FileListError(f"{where} has no column {', '.join(missing)} (a file list has path, size, last_modified)")
    path, size, modified = (header.index(name) for name in PLAIN_COLUMNS)
    for number, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise FileListError(f"{where} line {number}: {len(row)} columns, the header has {len(header)}")
        yield ListedFile(row[path], _int(row[size], where, number), _time_ms(row[modified], where, number))


def _peek(stream: IO[bytes], count: int, where: str) -> bytes:
    """The first ``count`` bytes of ``stream``, which is left where it was."""
    try:
        start = stream.tell()
        head = stream.read(count)
        stream.seek(start)
    except (OSError, ValueError) as exc:
        raise FileListError(f"{where}: cannot read it: {exc}") from None
    return head


def _text_lines(stream: IO[bytes], where: str) -> Iterator[str]:
    """The lines of a UTF-8 text, gzipped or not, decoded as they are read."""
    try:
        raw: IO[bytes] | gzip.GzipFile = stream
        if _peek(stream, 2, where) == b"\x1f\x8b":
            raw = gzip.GzipFile(fileobj=stream)
        yield from io.TextIOWrapper(cast("IO[bytes]", raw), encoding="utf-8", newline="")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise FileListError(f"{where} is not readable as CSV: {exc}") from None


_BATCH_ROWS = 65_536
"""Rows decoded at a time from a Parquet file list."""


def _parquet_batches(
    stream: IO[bytes], where: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> Iterator[pa.RecordBatch]:
    """The Parquet file's record batches of the ``required`` columns and those of ``optional`` it has, decoded one
    batch at a time."""
    try:
        parquet = pq.ParquetFile(stream)
        names = parquet.schema_arrow.names
        missing = [name for name in required if name not in names]
        if missing:
            raise FileListError(f"{where} has no column {', '.join(missing)} (columns: {', '.join(names)})")
        wanted = [*required, *(name for name in optional if name in names)]
        yield from parquet.iter_batches(batch_size=_BATCH_ROWS, columns=wanted)
    except (pa.ArrowException, OSError) as exc:
        raise FileListError(f"{where} is not readable as Parquet: {exc}") from None


def _times_ms(column: Any, where: str) -> list[int | None]:
    """A column of timestamps (any unit), integers (milliseconds) or ISO strings, as milliseconds."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        return list(column.cast(pa.timestamp("ms", tz=kind.tz)).cast(pa.int64()).to_pylist())
    if pa.types.is_integer(kind):
        return [None if v is None else int(v) for v in column.to_pylist()]
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return [None if v is None else _time_ms(v, where, index + 1) for index, v in enumerate(column.to_pylist())]
    raise FileListError(f"{where}: a modification time of type {kind} (expected a timestamp, ms or ISO string)")


def _int(value: str, where: str, number: int) -> int:
    try:
        return int(value)
    except ValueError:
        raise FileListError(f"{where} row {number}: size {value!r} is not a whole number") from None


def _time_ms(value: str, where: str, number: int) -> int:
    """ISO 8601 (``2026-11-27T10:00:00.000Z``; without an offset: UTC) or milliseconds since the epoch."""
    try:
        return instant_ms(value, dt.timezone.utc)
    except ValueError:
        raise FileListError(f"{where} row {number}: {value!r} is not a time (ISO 8601 or milliseconds)") from None
