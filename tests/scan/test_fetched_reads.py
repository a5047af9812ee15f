"""fetch_parquet (the object-store read of a data file of known size) on local files, its ranged reads counted: the
same rows, types and dictionary columns as read_parquet, whole or footer first; a footer longer than the tail and a
read outside the fetched ranges each cost one more ranged read, never a wrong answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tableformat.io.factory import open_location
from tableformat.scan import reader
from tableformat.scan.reader import FetchedFile, fetch_parquet, read_parquet


class Counting:
    """A FileIO whose read_bytes and read_range calls are recorded (as (start, end); whole reads as None)."""

    def __init__(self, io: Any) -> None:
        self.io = io
        self.calls: list[tuple[int, int] | None] = []

    def read_bytes(self, path: str) -> bytes:
        self.calls.append(None)
        data: bytes = self.io.read_bytes(path)
        return data

    def read_range(self, path: str, start: int, end: int) -> bytes:
        self.calls.append((start, end))
        data: bytes = self.io.read_range(path, start, end)
        return data

    def url(self, path: str) -> str:
        return str(self.io.url(path))


def written(tmp_path: Path, columns: int, rows: int) -> tuple[str, pa.Table]:
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "kind": pa.array([("view", "click", "buy")[i % 3] for i in range(rows)]),
            **{f"c{i:04d}": pa.array([i * r for r in range(rows)], pa.int32()) for i in range(columns)},
        }
    )
    path = str(tmp_path / "data.parquet")
    pq.write_table(table, path, row_group_size=max(1, rows // 3))
    return path, table


def test_a_small_file_is_one_whole_read_equal_to_read_parquet(tmp_path: Path) -> None:
    path, table = written(tmp_path, 3, 1000)
    io = Counting(open_location(str(tmp_path))[0])
    fetched = fetch_parquet(io, path, Path(path).stat().st_size)  # type: ignore[arg-type]
    assert io.calls == [None]
    assert fetched.equals(read_parquet(path, pafs.LocalFileSystem()))
    assert fetched.schema.field("kind").type == pa.dictionary(pa.int32(), pa.string())
    assert fetched.cast(table.schema).equals(table)


def test_a_long_footer_costs_one_more_read_and_reads_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "WHOLE_GET_BYTES", 0)  # every file takes the footer-first path
    path, table = written(tmp_path, 600, 30)  # 600 columns x 3 row groups: a footer over 64 KiB
    size = Path(path).stat().st_size
    assert pq.read_metadata(path).serialized_size > reader.TAIL_BYTES
    io = Counting(open_location(str(tmp_path))[0])
    fetched = fetch_parquet(io, path, size)  # type: ignore[arg-type]
    assert fetched.equals(read_parquet(path, pafs.LocalFileSystem()))
    assert len(io.calls) == 3 and io.calls[0] == (size - reader.TAIL_BYTES, size)  # tail, rest of footer, chunks
    io.calls.clear()
    projected = fetch_parquet(io, path, size, ["c0007", "kind", "gone"])  # type: ignore[arg-type]
    assert projected.column_names == ["c0007", "kind"]  # a name the file lacks is left out
    assert projected.cast(table.select(["c0007", "kind"]).schema).equals(table.select(["c0007", "kind"]))
    assert len(io.calls) == 3  # tail, rest of footer, the two columns' chunks (less than 1 MiB apart: one read)


def test_fetched_file_serves_fetched_ranges_and_fetches_the_rest(tmp_path: Path) -> None:
    data = bytes(range(256)) * 8
    (tmp_path / "f").write_bytes(data)
    io = Counting(open_location(str(tmp_path))[0])
    path = str(tmp_path / "f")
    source = FetchedFile(io, path, len(data), [(1000, data[1000:1100]), (0, data[:10])])  # type: ignore[arg-type]
    source.seek(1010)
    assert (source.read(20), source.tell(), io.calls) == (data[1010:1030], 1030, [])
    source.seek(-5, 2)
    assert source.read() == data[-5:] and io.calls == [(len(data) - 5, len(data))]
    source.seek(5)
    assert source.read(10) == data[5:15] and io.calls[-1] == (5, 15)  # straddles a fetched range's end
    source.seek(0)
    assert source.read(10) == data[:10] and len(io.calls) == 2
