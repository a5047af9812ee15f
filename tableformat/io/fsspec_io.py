"""FileIO over any fsspec filesystem; the base of the S3 backend.

A generic fsspec backend has no atomic create-if-absent (fsspec's ``mode="create"`` is exists-then-write), so it
reports ``atomic_create = False`` and tables on it refuse concurrent writers (see Table.open).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import IO, Any

from tableformat.errors import DeleteFailedError
from tableformat.io.fileio import FileInfo, FileIO


def mtime_ms_of(info: dict[str, Any]) -> int:
    """Normalise an fsspec info dict's modification time to epoch milliseconds."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, (int, float)):
            # seconds (float or int below ~1e11) vs milliseconds
            return int(value * 1000) if value < 1e11 else int(value)
        if isinstance(value, str):
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    return 0


class FsspecFileIO(FileIO):
    """A FileIO over an fsspec filesystem instance."""

    atomic_create = False
    is_object_store = True

    def __init__(self, fs: Any, scheme: str, storage_options: dict[str, Any] | None = None) -> None:
        self.fs = fs
        self.scheme = scheme
        self._storage_options = dict(storage_options or {})

    def read_bytes(self, path: str) -> bytes:
        data: bytes = self.fs.cat_file(path)
        return data

    def read_range(self, path: str, start: int, end: int) -> bytes:
        data: bytes = self.fs.cat_file(path, start=start, end=end)
        return data

    def write_bytes(self, path: str, data: bytes) -> None:
        self.fs.pipe_file(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.exists(path):
            return False
        self.fs.pipe_file(path, data)
        return True

    def exists(self, path: str) -> bool:
        self.fs.invalidate_cache(path)
        return bool(self.fs.exists(path))

    def _info_of(self, entry: dict[str, Any]) -> FileInfo:
        return FileInfo(
            path=entry["name"].rstrip("/"),
            size=int(entry.get("size") or 0),
            mtime_ms=mtime_ms_of(entry),
            is_dir=entry.get("type") == "directory",
        )

    def list_dir(self, path: str) -> list[FileInfo]:
        self.fs.invalidate_cache(path)
        try:
            entries = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        base = path.rstrip("/")
        return [self._info_of(e) for e in entries if e["name"].rstrip("/") != base]

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        self.fs.invalidate_cache(path)
        try:
            found = self.fs.find(path, detail=True)
        except FileNotFoundError:
            return
        for entry in found.values():
            if entry.get("type") != "directory":
                yield self._info_of(entry)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        deleted: list[str] = []
        failed: list[str] = []
        for path in paths:
            try:
                self.fs.invalidate_cache(path)
                if self.fs.info(path).get("type") == "directory":  # one request settles existence and kind
                    failed.append(f"{path}: is a directory")
                    continue
                self.fs.rm_file(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed.append(f"{path}: {exc}")
                continue
            deleted.append(path)
        if failed:
            raise DeleteFailedError(f"could not delete {len(failed)} file(s): {failed[0]}", deleted, failed)
        return deleted

    def delete_listed(self, paths: Sequence[str]) -> list[str]:
        """One ``fs.rm`` of the whole batch (backends batch it: GCS, Azure); should it fail, file by file, exactly."""
        if not paths:
            return []
        try:
            self.fs.rm(list(paths))
        except Exception:  # which of the batch went is unknown: settle each one
            return self.delete_files(paths)
        return list(dict.fromkeys(paths))

    def remove_empty_dir(self, path: str) -> bool:
        return False

    def open_input(self, path: str) -> IO[bytes]:
        handle: IO[bytes] = self.fs.open(path, "rb")
        return handle

    def file_size(self, path: str) -> int:
        return int(self.fs.size(path))

    def fsspec_filesystem(self) -> Any:
        return self.fs

    def storage_options(self) -> dict[str, Any]:
        return dict(self._storage_options)
