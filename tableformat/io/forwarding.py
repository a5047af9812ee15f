"""A FileIO that forwards every call to another one: the base of wrappers that change a few operations."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from tableformat.io.fileio import DistributedMap, FileInfo, FileIO


class ForwardingFileIO(FileIO):
    """Forwards everything to ``inner``; subclasses override the operations they change."""

    def __init__(self, inner: FileIO) -> None:
        self.inner = inner
        self.scheme = inner.scheme
        self.atomic_create = inner.atomic_create
        self.is_object_store = inner.is_object_store
        self.latency_bound = inner.latency_bound
        self.bulk_delete = inner.bulk_delete
        self.lists_subtrees = inner.lists_subtrees

    def read_bytes(self, path: str) -> bytes:
        return self.inner.read_bytes(path)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        return self.inner.read_range(path, start, end)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        return self.inner.write_if_absent(path, data)

    def sync(self, files: Sequence[str], directories: Sequence[str] = ()) -> None:
        self.inner.sync(files, directories)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def file_exists(self, path: str) -> bool:
        return self.inner.file_exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir(path)

    # list_dir_without_file_stats is not forwarded: the base's calls self.list_dir, which subclasses may override

    def stat_file(self, path: str) -> FileInfo | None:
        return self.inner.stat_file(path)

    def list_names(self, path: str) -> list[str]:
        return self.inner.list_names(path)

    def list_names_with_prefix(self, path: str, prefix: str) -> list[str]:
        return self.inner.list_names_with_prefix(path, prefix)

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        return self.inner.walk_files(path)

    def list_subtree(self, path: str) -> list[FileInfo]:
        return self.inner.list_subtree(path)

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        return self.inner.list_subtree_range(path, first, last)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        return self.inner.delete_files(paths)

    def existing_files(self, paths: Sequence[str]) -> tuple[list[str], list[str]]:
        return self.inner.existing_files(paths)

    # delete_listed is not forwarded either: the base's calls self.delete_files, which wrappers (fault injection,
    # executors) override; a wrapper that wants the inner store's cheaper path overrides delete_listed itself

    def remove_empty_dir(self, path: str) -> bool:
        return self.inner.remove_empty_dir(path)

    def open_input(self, path: str) -> IO[bytes]:
        return self.inner.open_input(path)

    def file_size(self, path: str) -> int:
        return self.inner.file_size(path)

    def verify_atomic_create(self, root: str) -> bool:
        return self.inner.verify_atomic_create(root)

    def distributed_map(self) -> DistributedMap | None:
        return self.inner.distributed_map()

    def mkdirs(self, path: str) -> None:
        self.inner.mkdirs(path)

    def url(self, path: str) -> str:
        return self.inner.url(path)

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        return self.inner.arrow_filesystem(sizes)

    def fsspec_filesystem(self) -> Any:
        return self.inner.fsspec_filesystem()

    def storage_options(self) -> dict[str, Any]:
        return self.inner.storage_options()
