"""A pyarrow filesystem that calls back before every open for reading: how tests see (and interfere with) the
data files a read opens, since data files are read through the FileIO's Arrow filesystem, not ``read_bytes``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyarrow.fs import FileSystemHandler, PyFileSystem


class _ObservingHandler(FileSystemHandler):  # type: ignore[misc]
    """Delegates to a pyarrow filesystem, calling ``on_open(path)`` before every open for reading."""

    def __init__(self, inner: Any, on_open: Callable[[str], None]) -> None:
        self.inner = inner
        self.on_open = on_open

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def get_type_name(self) -> str:
        return "observed"

    def normalize_path(self, path: str) -> str:
        return str(self.inner.normalize_path(path))

    def get_file_info(self, paths: Any) -> Any:
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> Any:
        return self.inner.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not allowed")

    def delete_file(self, path: str) -> None:
        self.inner.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.inner.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.inner.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        self.on_open(path)
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        self.on_open(path)
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_append_stream(path, metadata=metadata)


def observed_filesystem(inner: Any, on_open: Callable[[str], None]) -> Any:
    """``inner`` (a pyarrow filesystem) with ``on_open(path)`` called before each file is opened for reading."""
    return PyFileSystem(_ObservingHandler(inner, on_open))
