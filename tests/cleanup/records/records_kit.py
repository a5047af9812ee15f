"""Builders for the record TTL and compaction tests: tables whose time column has each supported type, a FileIO
that counts data-file opens, and an independent oracle of which rows a TTL keeps."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow.fs import FileSystemHandler, PyFileSystem

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

DAY = 86_400_000
NOW = int(dt.datetime(2026, 3, 10, 12, 34, 56, 789000, tzinfo=dt.timezone.utc).timestamp() * 1000)
CUTOFF = NOW - 30 * DAY
EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class TimeType:
    """A time column type: its Arrow type, how a moment (epoch ms) is stored, and the stored value's time."""

    name: str
    arrow: pa.DataType

    def value(self, ms: int | None) -> Any:
        if ms is None:
            return None
        if self.name in ("int", "bigint-seconds"):
            return ms // 1000
        if self.name == "bigint-millis":
            return ms
        if self.name == "date":
            return (EPOCH + dt.timedelta(milliseconds=ms)).date()
        moment = EPOCH + dt.timedelta(milliseconds=ms)
        return moment.replace(tzinfo=dt.timezone.utc) if self.arrow.tz else moment  # type: ignore[attr-defined]

    def stored_ms(self, value: Any) -> int:
        """The time (epoch ms) of a stored value, by the documented rule, computed independently."""
        if self.name in ("int", "bigint-seconds"):
            return int(value) * 1000
        if self.name == "bigint-millis":
            return int(value)
        if self.name == "date":
            return (value - dt.date(1970, 1, 1)).days * DAY
        naive = value.replace(tzinfo=None) if value.tzinfo else value
        return int((naive - EPOCH) / dt.timedelta(milliseconds=1))


TIME_TYPES = [
    TimeType("int", pa.int32()),
    TimeType("bigint-seconds", pa.int64()),
    TimeType("bigint-millis", pa.int64()),
    TimeType("timestamp-3", pa.timestamp("ms")),
    TimeType("timestamp-6", pa.timestamp("us")),
    TimeType("timestamp-9", pa.timestamp("ns")),
    TimeType("timestamp-ltz-6", pa.timestamp("us", tz="UTC")),
    TimeType("date", pa.date32()),
]


def kept(kind: TimeType, value: Any, cutoff: int = CUTOFF) -> bool:
    """The oracle: a null time keeps its row; otherwise the row stays when its time is not before the cutoff."""
    return value is None or kind.stored_ms(value) >= cutoff


def make_table(path: Path, kind: TimeType, partition: bool = False, **options: str) -> Table:
    fields = [pa.field("id", pa.int64()), pa.field("ts", kind.arrow), pa.field("p", pa.int32())]
    defaults = {
        "record-level.expire-time": "30 d",
        "record-level.time-field": "ts",
        "write-only": "true",
        "file-operation.thread-num": "1",
    }
    return Table.create(
        str(path), pa.schema(fields), partition_keys=["p"] if partition else [], options={**defaults, **options}
    )


def append(table: Table, kind: TimeType, ids: Sequence[int], times_ms: Sequence[int | None], p: int = 0) -> None:
    data = {"id": list(ids), "ts": [kind.value(t) for t in times_ms], "p": [p] * len(ids)}
    table.append(pa.table(data, schema=table.arrow_schema))


def rows(table: Table, **kwargs: Any) -> list[tuple[Any, ...]]:
    return sorted(((r["id"], r["ts"], r["p"]) for r in table.to_arrow(**kwargs).to_pylist()), key=lambda r: r[0])


class _CountingHandler(FileSystemHandler):  # type: ignore[misc]
    """Delegates to a pyarrow filesystem, recording every path opened for reading."""

    def __init__(self, inner: Any, opened: list[str]) -> None:
        self.inner = inner
        self.opened = opened

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def get_type_name(self) -> str:
        return "counting"

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
        self.opened.append(path)
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        self.opened.append(path)
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.inner.open_append_stream(path, metadata=metadata)


class CountingFileIO(ForwardingFileIO):
    """A FileIO whose Arrow filesystem (the one data files are read through) records every file it opens."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.opened: list[str] = []

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        return PyFileSystem(_CountingHandler(self.inner.arrow_filesystem(sizes), self.opened))

    def fsspec_filesystem(self) -> Any:
        return self.inner.fsspec_filesystem()

    def data_reads(self) -> list[str]:
        return [p.rsplit("/", 1)[-1] for p in self.opened if p.rsplit("/", 1)[-1].startswith("data-")]
