"""File lists for ``--file-list`` tests: S3 Inventory reports written as AWS documents them ("Locating your
inventory list", "Inventory manifest"), and plain Parquet/CSV lists of ``path, size, last_modified``.

An inventory report is written into a destination "bucket" given as a ``put(key, data)`` callable (a directory on
disk or a real bucket): ``<prefix>/<source bucket>/<config>/data/<uuid>.<ext>`` data files and
``<prefix>/<source bucket>/<config>/<YYYY-MM-DDTHH-MMZ>/manifest.json``.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import os
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote_plus

import pyarrow as pa
import pyarrow.parquet as pq

Row = tuple[str, int, int]
"""(key or path, size, mtime in ms)."""

CSV_SCHEMA = "Bucket, Key, Size, LastModifiedDate, ETag, StorageClass, IsMultipartUploaded"


def iso_ms(millis: int) -> str:
    """AWS's LastModifiedDate in CSV: ``2026-11-27T10:00:00.000Z``."""
    moment = dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def _csv_bytes(bucket: str, rows: Iterable[Row]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for key, size, mtime_ms in rows:
        writer.writerow([bucket, quote_plus(key, safe="/"), size, iso_ms(mtime_ms), "etag", "STANDARD", "FALSE"])
    return out.getvalue().encode()


def _parquet_bytes(bucket: str, rows: list[Row]) -> bytes:
    table = pa.table(
        {
            "bucket": pa.array([bucket] * len(rows), pa.string()),
            "key": pa.array([key for key, _, _ in rows], pa.string()),
            "size": pa.array([size for _, size, _ in rows], pa.int64()),
            "last_modified_date": pa.array([mtime for _, _, mtime in rows], pa.timestamp("ms")),
            "e_tag": pa.array(["etag"] * len(rows), pa.string()),
            "storage_class": pa.array(["STANDARD"] * len(rows), pa.string()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_s3_inventory(
    put: Callable[[str, bytes], None],
    source_bucket: str,
    destination_bucket: str,
    rows: list[Row],
    *,
    file_format: str,
    created_ms: int,
    prefix: str = "inventory",
    config: str = "daily",
    parts: int = 2,
    schema: str = CSV_SCHEMA,
) -> str:
    """Write an inventory report of ``rows`` (keys of ``source_bucket``) in ``parts`` data files of
    ``file_format`` ('CSV' gzipped as AWS writes it, 'CSV-plain' not gzipped, 'Parquet'); returns the key of its
    ``manifest.json``."""
    base = f"{prefix}/{source_bucket}/{config}"
    files = []
    for number in range(parts):
        chunk = rows[number::parts]
        if file_format == "Parquet":
            data, ext = _parquet_bytes(source_bucket, chunk), "parquet"
        elif file_format == "CSV":
            data, ext = gzip.compress(_csv_bytes(source_bucket, chunk)), "csv.gz"
        else:
            data, ext = _csv_bytes(source_bucket, chunk), "csv"
        key = f"{base}/data/{uuid.uuid4()}.{ext}"
        put(key, data)
        files.append({"key": key, "size": len(data), "MD5checksum": hashlib.md5(data).hexdigest()})
    stamp = dt.datetime.fromtimestamp(created_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H-%MZ")
    manifest = {
        "sourceBucket": source_bucket,
        "destinationBucket": f"arn:aws:s3:::{destination_bucket}",
        "version": "2016-11-30",
        "creationTimestamp": str(created_ms),
        "fileFormat": "Parquet" if file_format == "Parquet" else "CSV",
        "fileSchema": schema if file_format != "Parquet" else "message s3.inventory { ... }",
        "files": files,
    }
    key = f"{base}/{stamp}/manifest.json"
    put(key, json.dumps(manifest, indent=2).encode())
    return key


def directory_put(directory: Path) -> Callable[[str, bytes], None]:
    """``put`` into a directory on disk standing in for the destination bucket."""

    def put(key: str, data: bytes) -> None:
        path = directory / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return put


def local_rows(root: Path) -> list[Row]:
    """Every file under ``root`` as (absolute path, size, mtime ms)."""
    rows = []
    for folder, _, names in os.walk(root):
        for name in names:
            stat = os.stat(os.path.join(folder, name))
            rows.append((os.path.join(folder, name), stat.st_size, stat.st_mtime_ns // 1_000_000))
    return sorted(rows)


def write_plain_list(path: Path, rows: list[Row], *, file_format: str) -> Path:
    """A plain file list: Parquet (``last_modified`` a timestamp) or CSV with a header (ISO times)."""
    if file_format == "parquet":
        table = pa.table(
            {
                "path": [p for p, _, _ in rows],
                "size": pa.array([s for _, s, _ in rows], pa.int64()),
                "last_modified": pa.array([m for _, _, m in rows], pa.timestamp("ms", tz="UTC")),
            }
        )
        pq.write_table(table, path)
    else:
        with open(path, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["path", "size", "last_modified"])
            writer.writerows((p, s, iso_ms(m)) for p, s, m in rows)
    return path
