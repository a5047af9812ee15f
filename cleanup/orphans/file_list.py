"""A file list in place of the census's listing (``--file-list``): an S3 Inventory report or a plain list.

:func:`load_file_list` reads the source (a local path, or an ``s3://`` URL read with the table's own FileIO), keeps
the files under the table root and says when the list was made. The census then walks these files exactly as it
walks a listing (:func:`.census.walk_listed`: same directories, same names, same nested-table rule), and treats
them as listed without stats: the list's mtime only rules out files too young to matter, and every candidate
left unreferenced is stat'ed before it is called an orphan (a file the list names that is gone is skipped, one
rewritten since is judged by its new mtime). Nothing in the list is trusted to exist.

The list cannot know files written after it was made, so the cleanup's cutoff is capped at its creation time
(an S3 Inventory's ``creationTimestamp``; a plain list's own mtime).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from tableformat.codec.inventory_codec import (
    InventoryManifest,
    ListedFile,
    inventory_rows,
    manifest_from_json,
    plain_rows,
)
from tableformat.context import TableContext
from tableformat.errors import FileListError
from tableformat.io.factory import S3_SCHEMES, split_scheme
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.local import LocalFileIO
from tableformat.layout import SCHEMA_DIR

MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, slots=True)
class FileList:
    """The files of a list under one table root (FileIO paths), and when the list was made."""

    source: str
    created_ms: int
    files: tuple[FileInfo, ...]
    outside_root: int
    """Files of the list elsewhere in the bucket or filesystem (ignored)."""
    kind: str
    """'S3 Inventory' or 'file list'."""

    def describe(self) -> str:
        return f"{self.kind} {self.source}"


def load_file_list(ctx: TableContext, source: str | os.PathLike[str]) -> FileList:
    """The files of ``source`` under the table root; FileListError (one line, nothing read of the table) when it is
    missing or unreadable, has the wrong columns, is an inventory of another bucket or names nothing under the
    root."""
    if not isinstance(source, str | os.PathLike):
        raise FileListError(f"file_list must be a path or URL, got {type(source).__name__}")
    where = os.fspath(source)
    file_io, path = _open(ctx, where)
    data = _read(file_io, path, where)
    rows: Iterator[ListedFile]
    if path.rstrip("/").endswith(MANIFEST_NAME) or data.lstrip()[:1] == b"{":
        manifest = manifest_from_json(data, where)
        _require_table_bucket(ctx, manifest, where)
        rows = (row for key in manifest.files for row in _inventory_file(file_io, path, manifest, key.key, where))
        created_ms, kind = manifest.created_ms, "S3 Inventory"
    else:
        rows = plain_rows(data, where)
        stat = file_io.stat_file(path)
        created_ms, kind = (stat.mtime_ms if stat is not None else 0), "file list"
    return _under_root(ctx, where, kind, created_ms, rows)


def _open(ctx: TableContext, where: str) -> tuple[FileIO, str]:
    scheme, rest = split_scheme(where)
    if scheme == "file":
        return LocalFileIO(), os.path.abspath(rest)
    table_scheme = split_scheme(ctx.url())[0]
    if scheme in S3_SCHEMES and table_scheme in S3_SCHEMES:
        return ctx.io, rest.strip("/")
    raise FileListError(f"{where}: a file list is read from a local path or, for a table on S3, from s3://")


def _read(file_io: FileIO, path: str, where: str) -> bytes:
    try:
        return file_io.read_bytes(path)
    except FileNotFoundError:
        raise FileListError(f"{where}: no such file") from None
    except (IsADirectoryError, PermissionError, OSError) as exc:
        raise FileListError(f"{where}: cannot read it: {exc}") from None


def _require_table_bucket(ctx: TableContext, manifest: InventoryManifest, where: str) -> None:
    if split_scheme(ctx.url())[0] not in S3_SCHEMES:
        raise FileListError(f"{where} is an S3 Inventory of bucket {manifest.source_bucket}; {ctx.url()} is not on S3")
    bucket = ctx.layout.root.split("/", 1)[0]
    if manifest.source_bucket != bucket:
        raise FileListError(
            f"{where} is an inventory of bucket {manifest.source_bucket!r}, the table is in bucket {bucket!r}"
        )


def _inventory_file(
    file_io: FileIO, manifest_path: str, manifest: InventoryManifest, key: str, where: str
) -> Iterator[ListedFile]:
    """The rows of one data file of the inventory: ``<destination bucket>/<key>`` on S3; on a local disk the bucket's
    directory is where the manifest's directory ends in the key's prefix (``<prefix>/<source>/<config>``)."""
    if isinstance(file_io, LocalFileIO):
        config_dir = os.path.dirname(os.path.dirname(manifest_path))
        key_dir = key.rpartition("/data/")[0]
        if not key_dir or not config_dir.endswith("/" + key_dir):
            raise FileListError(f"{where}: cannot find its data file {key!r} next to the manifest")
        path = config_dir[: -len(key_dir)] + key
    else:
        path = f"{manifest.destination_bucket}/{key}"
    return inventory_rows(_read(file_io, path, f"{where} data file {key}"), manifest, f"{where} data file {key}")


def _normalised(path: str) -> str:
    """A listed path as a FileIO path: ``s3://bucket/key`` -> ``bucket/key``, ``file:///x`` -> ``/x``."""
    scheme, rest = split_scheme(path)
    if scheme == "file":
        return rest
    return rest.lstrip("/") if scheme in S3_SCHEMES else path


def _under_root(ctx: TableContext, where: str, kind: str, created_ms: int, rows: Iterator[ListedFile]) -> FileList:
    """The rows under the table root, once each (the last row of a path wins). Refused when one is not a plain path
    below the root, or when none is a schema file: a list that does not show ``schema/`` does not cover the table
    (an inventory filtered by a prefix below the root cannot show where other tables' roots are)."""
    prefix = ctx.layout.root.rstrip("/") + "/"
    files: dict[str, FileInfo] = {}
    outside = 0
    for row in rows:
        path = _normalised(row.path) if kind == "file list" else row.path
        if not path.startswith(prefix):
            outside += 1
            continue
        rel = path[len(prefix) :]
        if not rel or rel.startswith("/") or "//" in rel or any(part in (".", "..") for part in rel.split("/")):
            raise FileListError(f"{where} names {row.path!r}: not a plain path below the table root; nothing was done")
        files[path] = FileInfo(path, row.size, row.mtime_ms, False)
    if not files:
        raise FileListError(f"{where} names no file under the table root {ctx.url()} ({outside} elsewhere)")
    if not any(path.startswith(f"{prefix}{SCHEMA_DIR}/") for path in files):
        raise FileListError(f"{where} names no file of {SCHEMA_DIR}/ of {ctx.url()}: it does not cover the table root")
    return FileList(where, created_ms, tuple(files.values()), outside, kind)
