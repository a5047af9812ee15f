"""WriteOnceCache: manifest lists, manifests and index manifests are fetched once; snapshot files, hints and
anything else are read through every time; a file it deletes is forgotten; past its limit it keeps nothing more."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.io.local import LocalFileIO
from tableformat.io.write_once_cache import WriteOnceCache
from tableformat.layout import TableLayout


class CountingReads(ForwardingFileIO):
    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.reads: Counter[str] = Counter()

    def read_bytes(self, path: str) -> bytes:
        self.reads[path.rsplit("/", 1)[-1]] += 1
        return self.inner.read_bytes(path)


def _table(tmp_path: Path) -> tuple[TableLayout, LocalFileIO]:
    layout, local = TableLayout(str(tmp_path)), LocalFileIO()
    for name in ("manifest-list-a-0", "manifest-a-0", "index-manifest-a-0", "other-file"):
        local.write_bytes(f"{tmp_path}/manifest/{name}", name.encode())
    local.write_bytes(layout.snapshot_file(1), b"one")
    local.write_bytes(layout.hint_file("LATEST"), b"1")
    return layout, local


def test_write_once_files_are_read_once_and_the_others_every_time(tmp_path: Path) -> None:
    layout, local = _table(tmp_path)
    counting = CountingReads(local)
    cache = WriteOnceCache(counting, layout.is_write_once)
    names = ["manifest-list-a-0", "manifest-a-0", "index-manifest-a-0", "other-file"]
    for _ in range(3):
        assert [cache.read_bytes(f"{tmp_path}/manifest/{n}") for n in names] == [n.encode() for n in names]
        assert cache.read_bytes(layout.snapshot_file(1)) == b"one"
        assert cache.read_bytes(layout.hint_file("LATEST")) == b"1"
    assert counting.reads == {
        "manifest-list-a-0": 1,
        "manifest-a-0": 1,
        "index-manifest-a-0": 1,
        "other-file": 3,
        "snapshot-1": 3,
        "LATEST": 3,
    }
    local.write_bytes(layout.snapshot_file(1), b"another")  # a rollback frees an id: the new file is read
    assert cache.read_bytes(layout.snapshot_file(1)) == b"another"


def test_a_deleted_file_is_forgotten_and_the_limit_keeps_nothing_more(tmp_path: Path) -> None:
    layout, local = _table(tmp_path)
    counting = CountingReads(local)
    cache = WriteOnceCache(counting, layout.is_write_once, limit_bytes=len(b"manifest-list-a-0"))
    list_path, manifest_path = f"{tmp_path}/manifest/manifest-list-a-0", f"{tmp_path}/manifest/manifest-a-0"
    for _ in range(2):
        cache.read_bytes(list_path)
        cache.read_bytes(manifest_path)
    assert counting.reads == {"manifest-list-a-0": 1, "manifest-a-0": 2}  # the manifest did not fit
    assert cache.delete_files([list_path]) == [list_path]
    with pytest.raises(FileNotFoundError):  # not served from the cache
        cache.read_bytes(list_path)
    assert counting.reads["manifest-list-a-0"] == 2
