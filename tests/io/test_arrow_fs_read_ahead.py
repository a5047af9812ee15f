"""Reading small files ahead of a dataset scan (tableformat/io/arrow_fs.py): each file fetched once, in the scan's
order, a window ahead of the last one opened; what is served equals the file; large files, files outside the order
and failed fetches are opened as usual; a missing file is named; skipped files are dropped, so memory stays bounded.

Real files on local disk behind fsspec's local filesystem; ``fetch`` is the FileIO's whole-file read, recorded."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem
from pyarrow.fs import PyFileSystem

from tableformat.io.arrow_fs import KnownSizeHandler
from tableformat.io.fileio import WHOLE_GET_BYTES


class RecordingFetch:
    """Reads a whole file from disk, recording each path (fetch may run on several threads)."""

    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        self.calls: list[str] = []
        self.fail = fail
        self._lock = threading.Lock()

    def __call__(self, path: str) -> bytes:
        with self._lock:
            self.calls.append(path)
        if path in self.fail:
            raise OSError(f"injected failure reading {path}")
        return Path(path).read_bytes()


def files(tmp_path: Path, count: int) -> tuple[list[str], dict[str, int]]:
    paths = []
    for number in range(count):
        path = tmp_path / f"f{number}.parquet"
        pq.write_table(pa.table({"id": [number * 10 + i for i in range(10)]}), path)
        paths.append(str(path))
    return paths, {p: Path(p).stat().st_size for p in paths}


def reading_ahead(tmp_path: Path, count: int, window: int) -> tuple[list[str], RecordingFetch, KnownSizeHandler]:
    """``count`` small files, a recording fetch, and a handler told to read them ahead in order, ``window`` ahead."""
    paths, sizes = files(tmp_path, count)
    fetch = RecordingFetch()
    handler = KnownSizeHandler(LocalFileSystem(), sizes, fetch)
    handler.read_ahead(paths, window)
    return paths, fetch, handler


def opened(handler: KnownSizeHandler, path: str) -> bytes:
    stream = handler.open_input_file(path)
    data: bytes = stream.read()
    stream.close()
    return data


def settle(handler: KnownSizeHandler) -> None:
    """Wait until every fetch scheduled so far has finished (so the recorded calls are complete)."""
    ahead = handler._ahead
    assert ahead is not None
    for future in list(ahead._fetched.values()):
        future.exception()


def test_each_open_fetches_the_next_window_of_files_once_and_serves_them(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 6, 2)
    assert opened(handler, paths[0]) == Path(paths[0]).read_bytes()  # opened as usual, the next two fetched
    settle(handler)
    assert fetch.calls == paths[1:3]
    for number in range(1, 6):
        assert opened(handler, paths[number]) == Path(paths[number]).read_bytes()
        settle(handler)
    assert fetch.calls == paths[1:]  # every file after the first fetched exactly once, in order
    assert handler._ahead is not None and handler._ahead._fetched == {}  # nothing held once all were opened


def test_large_files_and_files_outside_the_order_are_not_fetched(tmp_path: Path) -> None:
    paths, sizes = files(tmp_path, 4)
    sizes[paths[2]] = WHOLE_GET_BYTES + 1  # as the manifest entry would say of a large file
    fetch = RecordingFetch()
    handler = KnownSizeHandler(LocalFileSystem(), sizes, fetch)
    handler.read_ahead(paths[:3], 3)
    opened(handler, paths[0])
    settle(handler)
    assert fetch.calls == [paths[1]]  # paths[2] is large, paths[3] not in the scan's order
    assert opened(handler, paths[2]) == Path(paths[2]).read_bytes()
    assert opened(handler, paths[3]) == Path(paths[3]).read_bytes()
    settle(handler)
    assert fetch.calls == [paths[1]]


def test_files_skipped_by_the_consumer_are_dropped(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 10, 2)
    opened(handler, paths[0])  # fetches 1, 2
    opened(handler, paths[6])  # a filter skipped 1-5: fetches 7, 8; 1 and 2 are more than 2 places behind
    settle(handler)
    assert fetch.calls == [paths[1], paths[2], paths[7], paths[8]]
    assert handler._ahead is not None and sorted(handler._ahead._fetched) == [7, 8]
    opened(handler, paths[9])  # two fetches were wasted: the depth halved twice, to 0, so nothing more is fetched
    settle(handler)
    assert fetch.calls == [paths[1], paths[2], paths[7], paths[8]]


def test_the_depth_grows_back_as_files_are_opened_in_order(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 12, 2)
    opened(handler, paths[0])  # fetches 1, 2
    opened(handler, paths[5])  # skipped 1-4: fetches 6, 7; 1 and 2 dropped, depth 2 -> 0
    opened(handler, paths[6])  # read ahead: depth 1, fetches nothing new (7 is fetched)
    opened(handler, paths[7])  # read ahead: depth 2, fetches 8, 9
    settle(handler)
    assert fetch.calls == [paths[1], paths[2], paths[6], paths[7], paths[8], paths[9]]


def test_a_failed_fetch_is_opened_as_usual_and_a_missing_file_is_named(tmp_path: Path) -> None:
    paths, sizes = files(tmp_path, 3)
    fetch = RecordingFetch(fail=frozenset({paths[1]}))
    handler = KnownSizeHandler(LocalFileSystem(), sizes, fetch)
    handler.read_ahead(paths, 2)
    opened(handler, paths[0])
    settle(handler)
    Path(paths[2]).unlink()  # after its fetch: served from memory, as a file read a moment before it went
    assert opened(handler, paths[1]) == Path(paths[1]).read_bytes()
    handler.read_ahead(paths, 2)  # a new order: earlier fetches dropped, paths[2] fetched again and missing
    opened(handler, paths[1])
    with pytest.raises(FileNotFoundError, match=f"data file {paths[2]} is missing"):
        opened(handler, paths[2])


def test_a_dataset_scan_over_the_handler_reads_every_row_once(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 12, 4)
    fs = PyFileSystem(handler)
    fmt = ds.ParquetFileFormat()
    dataset = ds.FileSystemDataset([fmt.make_fragment(p, fs) for p in paths], pa.schema([("id", pa.int64())]), fmt, fs)
    assert sorted(dataset.to_table().column("id").to_pylist()) == list(range(120))
    # pyarrow opens about four files at once, in any order: those opened before their fetch was scheduled are read
    # as usual; every other file is fetched once and never twice
    assert len(fetch.calls) == len(set(fetch.calls)) and len(fetch.calls) >= 12 - 4
    assert set(fetch.calls) <= set(paths[1:])


def test_a_second_pass_over_the_same_order_reads_ahead_again(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 5, 2)
    for path in paths:
        opened(handler, path)
    settle(handler)
    assert fetch.calls == paths[1:]
    fetch.calls.clear()
    for path in paths:  # a second scan of the same dataset opens paths[0] again: a new pass
        assert opened(handler, path) == Path(path).read_bytes()
    settle(handler)
    assert fetch.calls == paths[1:]


def test_a_new_pass_starts_with_the_whole_window_and_datasets_share_one_pool(tmp_path: Path) -> None:
    paths, fetch, handler = reading_ahead(tmp_path, 10, 2)
    opened(handler, paths[0])  # fetches 1, 2
    opened(handler, paths[5])  # skipped 1-4: fetches 6, 7; 1 and 2 dropped, depth 2 -> 0
    settle(handler)
    fetch.calls.clear()
    opened(handler, paths[0])  # a new pass: 6 and 7 dropped as left over (not skipped), the depth back to 2
    settle(handler)
    assert fetch.calls == paths[1:3]
    other = KnownSizeHandler(LocalFileSystem(), handler.sizes, fetch)
    other.read_ahead(paths, 3)
    assert handler._ahead is not None and other._ahead is not None
    assert handler._ahead._pool is other._ahead._pool  # no threads per dataset
