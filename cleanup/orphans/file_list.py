"""A file list in place of the census's listing (``--file-list``): an S3 Inventory report or a plain list.

:func:`load_file_list` reads the source (a local path, or an ``s3://`` URL read with the table's own FileIO), keeps
the files under the table root and says when the list was made. The census then walks these files exactly as it
walks a listing (:func:`.census.walk_listed`: same directories, same names, same nested-table rule), and treats
them as listed without stats: the list's mtime only rules out files too young to matter, and every candidate
left unreferenced is stat'ed before it is called an orphan (a file the list names that is gone is skipped, one
rewritten since is judged by its new mtime). Nothing in the list is trusted to exist.

The list is read once, as a stream (a Parquet list a batch of rows at a time), and its files under the root are
spooled to a private temporary file on local disk (:class:`ListedFiles`), which the census walks a chunk at a time:
memory holds a chunk of the list, never all of it. The list is checked whole before the table is read (a path
outside the root, no ``schema/``), and the directories holding another table's ``schema/`` or ``snapshot/`` are
known before the walk starts, whichever chunk their files are in.

The list cannot know files written after it was made, so the cleanup's cutoff is capped at its creation time
(an S3 Inventory's ``creationTimestamp``; a plain list's own mtime).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, cast

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

from .census import TABLE_ROOT_MARKERS as ROOT_MARKERS
from .spill import ChunkFile, SpillDirectory

MANIFEST_NAME = "manifest.json"
SPOOL_CHUNK = 100_000
"""Files of the list kept in memory at a time while it is read, and walked at a time by the census."""


class ListedFiles(SpillDirectory):
    """The files of a list under one table root, spooled once to a private temporary file (local disk, removed
    when this object is collected or the process exits) and read back in chunks of ``SPOOL_CHUNK`` each time they
    are walked, so that neither reading the list nor walking it holds every file. A path the list names twice is
    yielded twice (the census counts one candidate)."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = root.rstrip("/")
        self._spool = ChunkFile(os.path.join(self.directory, "files"), "the file list's spool file")
        self._chunk: tuple[list[str], list[int], list[int]] = ([], [], [])
        self.table_roots: set[str] = set()
        """Directories (relative to the root) that hold ``schema/`` or ``snapshot/``: the root of another table, if
        the census looks for data there (``census.walk_listed``)."""
        self.has_schema = False

    def add(self, rel: str, size: int, mtime_ms: int) -> None:
        rels, sizes, times = self._chunk
        rels.append(rel)
        sizes.append(size)
        times.append(mtime_ms)
        if rel.startswith(f"{SCHEMA_DIR}/"):
            self.has_schema = True
        if "schema/" in rel or "snapshot/" in rel:
            parts = rel.split("/")
            self.table_roots.update("/".join(parts[:i]) for i in range(1, len(parts) - 1) if parts[i] in ROOT_MARKERS)
        if len(rels) >= SPOOL_CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._chunk[0]:
            self._spool.append(self._chunk, len(self._chunk[0]))
            self._chunk = ([], [], [])

    def __len__(self) -> int:
        return self._spool.entries + len(self._chunk[0])

    def batches(self) -> Iterator[list[FileInfo]]:
        """The files, ``SPOOL_CHUNK`` at a time, in the list's order."""
        self.flush()
        base = f"{self.root}/"
        for chunk in self._spool.chunks_read():
            rels, sizes, times = cast("tuple[list[str], list[int], list[int]]", chunk)
            yield [FileInfo(base + rel, size, mtime) for rel, size, mtime in zip(rels, sizes, times)]


@dataclass(frozen=True, slots=True)
class FileList:
    """The files of a list under one table root (FileIO paths), and when the list was made."""

    source: str
    created_ms: int
    files: ListedFiles
    outside_root: int
    """Files of the list elsewhere in the bucket or filesystem (ignored)."""
    kind: str
    """'S3 Inventory' or 'file list'."""

    def describe(self) -> str:
        return f"{self.kind} {self.source}"


def load_file_list(ctx: TableContext, source: str | os.PathLike[str]) -> FileList:
    """The files of ``source`` under the table root, read once and spooled (:class:`ListedFiles`); FileListError
    (one line, nothing read of the table) when it is missing or unreadable, has the wrong columns, is an inventory
    of another bucket or names nothing under the root."""
    if not isinstance(source, str | os.PathLike):
        raise FileListError(f"file_list must be a path or URL, got {type(source).__name__}")
    where = os.fspath(source)
    file_io, path = _open(ctx, where)
    rows: Iterator[ListedFile]
    if path.rstrip("/").endswith(MANIFEST_NAME) or _starts_like_json(file_io, path, where):
        manifest = manifest_from_json(_read(file_io, path, where), where)
        _require_table_bucket(ctx, manifest, where)
        rows = (row for key in manifest.files for row in _inventory_file(file_io, path, manifest, key.key, where))
        created_ms, kind = manifest.created_ms, "S3 Inventory"
    else:
        rows = _streamed(file_io, path, where, lambda stream: plain_rows(stream, where))
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


@contextmanager
def _as_file_list_error(where: str) -> Iterator[None]:
    """A missing or unreadable ``where`` as a one-line FileListError."""
    try:
        yield
    except FileNotFoundError:
        raise FileListError(f"{where}: no such file") from None
    except OSError as exc:  # a directory, no permission, the store refusing
        raise FileListError(f"{where}: cannot read it: {exc}") from None


def _read(file_io: FileIO, path: str, where: str) -> bytes:
    with _as_file_list_error(where):
        return file_io.read_bytes(path)


def _opened(file_io: FileIO, path: str, where: str) -> IO[bytes]:
    with _as_file_list_error(where):
        return file_io.open_input(path)


def _streamed(
    file_io: FileIO, path: str, where: str, rows: Callable[[IO[bytes]], Iterator[ListedFile]]
) -> Iterator[ListedFile]:
    """``rows`` of the file at ``path``, opened as a stream and read as they are taken."""
    with _opened(file_io, path, where) as stream:
        yield from rows(stream)


def _starts_like_json(file_io: FileIO, path: str, where: str) -> bool:
    """Whether the file's first non-blank byte is ``{`` (an S3 Inventory manifest not named manifest.json)."""
    with _as_file_list_error(where), file_io.open_input(path) as stream:
        head = stream.read(4096)
    return head.lstrip()[:1] == b"{"


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
    named = f"{where} data file {key}"  # read whole (one GET), decoded as its rows are taken
    return inventory_rows(_read(file_io, path, named), manifest, named)


def _normalised(path: str) -> str:
    """A listed path as a FileIO path: ``s3://bucket/key`` -> ``bucket/key``, ``file:///x`` -> ``/x``."""
    scheme, rest = split_scheme(path)
    if scheme == "file":
        return rest
    return rest.lstrip("/") if scheme in S3_SCHEMES else path


def _under_root(ctx: TableContext, where: str, kind: str, created_ms: int, rows: Iterator[ListedFile]) -> FileList:
    """The rows under the table root, spooled. Refused when one is not a plain path below the root, or when none is
    a schema file: a list that does not show ``schema/`` does not cover the table (an inventory filtered by a
    prefix below the root cannot show where other tables' roots are)."""
    prefix = ctx.layout.root.rstrip("/") + "/"
    files = ListedFiles(ctx.layout.root)
    outside = 0
    plain = kind == "file list"
    for row in rows:
        path = _normalised(row.path) if plain else row.path
        if not path.startswith(prefix):
            outside += 1
            continue
        rel = path[len(prefix) :]
        if not rel or rel.startswith("/") or "//" in rel or any(part in (".", "..") for part in rel.split("/")):
            raise FileListError(f"{where} names {row.path!r}: not a plain path below the table root; nothing was done")
        files.add(rel, row.size, row.mtime_ms)
    files.flush()
    if not len(files):
        raise FileListError(f"{where} names no file under the table root {ctx.url()} ({outside} elsewhere)")
    if not files.has_schema:
        raise FileListError(f"{where} names no file of {SCHEMA_DIR}/ of {ctx.url()}: it does not cover the table root")
    return FileList(where, created_ms, files, outside, kind)
