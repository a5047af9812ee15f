"""A pyarrow filesystem over an fsspec one that opens files of known size without asking the store for their size.

pyarrow's own ``FSSpecHandler`` asks twice before a read: ``isfile`` and the size lookup of ``fs.open`` (two HEAD
requests per file on S3). A scan knows each data file's size from its manifest entry, so those files are opened with
it, and the first request for such a file is a read (a missing file fails there, as FileNotFoundError)."""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any

from pyarrow import PythonFile
from pyarrow.fs import FSSpecHandler, PyFileSystem


class KnownSizeHandler(FSSpecHandler):  # type: ignore[misc]  # pyarrow ships no type information
    """FSSpecHandler whose ``open_input_file`` opens a path of ``sizes`` with its size, asking nothing first."""

    def __init__(self, fs: Any, sizes: Mapping[str, int]) -> None:
        super().__init__(fs)
        self.sizes = dict(sizes)

    def open_input_file(self, path: str) -> Any:
        size = self.sizes.get(path)
        if size is None:
            return super().open_input_file(path)
        handle = self.fs.open(path, mode="rb", size=size)
        if getattr(handle, "_details", False) is None:
            # fsspec looks the details up on first use (s3fs >= 2026 wants an ETag to pin its ranged reads to one
            # version of the object): a HEAD. A data file is never rewritten under its name, so nothing is pinned.
            handle._details = {"name": path, "size": size, "type": "file"}
        return PythonFile(_NamingMissing(handle, path), mode="r")


class _NamingMissing:
    """A file object whose reads say which file is missing (s3fs says only "The specified key does not exist")."""

    def __init__(self, handle: Any, path: str) -> None:
        self._handle = handle
        self._path = path

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._handle.read(size)
        except FileNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, f"data file {self._path} is missing ({exc})", self._path) from exc
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def arrow_filesystem_over(fs: Any, sizes: Mapping[str, int] | None) -> Any:
    """A ``pyarrow.fs.PyFileSystem`` over the fsspec filesystem ``fs``; files of ``sizes`` open without a lookup."""
    return PyFileSystem(KnownSizeHandler(fs, sizes or {}))
