"""Builders for the record TTL and compaction tests: tables whose time column has each supported type, a FileIO
that records data-file opens, and an independent oracle of which rows a TTL keeps."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import tableformat.scan.record_ttl as record_ttl
from support.observed_fs import observed_filesystem
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


def ttl_table(path: Path, kind: TimeType, partition: bool = False, **options: str) -> Table:
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


class DataOpenRecordingFileIO(ForwardingFileIO):
    """A FileIO whose Arrow filesystem (the one data files are read through) records every file it opens."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.opened: list[str] = []

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        return observed_filesystem(self.inner.arrow_filesystem(sizes), self.opened.append)

    def fsspec_filesystem(self) -> Any:
        return self.inner.fsspec_filesystem()

    def data_reads(self) -> list[str]:
        return [p.rsplit("/", 1)[-1] for p in self.opened if p.rsplit("/", 1)[-1].startswith("data-")]


@pytest.fixture(autouse=True)
def fixed_read_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Record TTL tests read at a fixed time: the read path's clock is pinned to :data:`NOW` (a conftest imports
    this fixture to apply it to its directory)."""
    monkeypatch.setattr(record_ttl, "system_now_ms", lambda: NOW)
