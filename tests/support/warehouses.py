"""Helpers of the maintainer tests: warehouses of small tables, a fake clock, and openers that count or fail calls."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat.io.factory import open_location
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

SCHEMA = pa.schema([("id", pa.int64())])
RETAIN = {
    "write-only": "true",  # commits never expire: the maintainer must do it
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "1000",
    "snapshot.time-retained": "1 ms",
    "snapshot.expire.limit": "100",
}


class FakeClock:
    """Epoch milliseconds that move only when told to (starts an hour after the real now, past every commit)."""

    def __init__(self, start_ms: int | None = None) -> None:
        self.now = start_ms if start_ms is not None else time.time_ns() // 1_000_000 + 3_600_000

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def table_with_commits(root: Path | str, commits: int, start: int = 0, **options: str) -> Table:
    """A table at ``root`` with ``commits`` one-row append snapshots (ids ``start``...)."""
    table = Table.create(str(root), SCHEMA, [], {**RETAIN, **options})
    append(table, commits, start)
    return table


def append(table: Table, commits: int, start: int = 0) -> None:
    for i in range(start, start + commits):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))


def make_warehouse(root: Path, layout: dict[str, Iterable[str]], commits: int = 6, **options: str) -> dict[str, Path]:
    """``{db: [table, ...]}`` as a Paimon filesystem warehouse; returns ``{'db.table': path}``."""
    made = {}
    for db, tables in layout.items():
        for name in tables:
            path = root / f"{db}.db" / name
            table_with_commits(path, commits, **options)
            made[f"{db}.{name}"] = path
    return made


def snapshot_ids(root: Path) -> list[int]:
    names = (p.name for p in (root / "snapshot").iterdir())
    return sorted(int(n[len("snapshot-") :]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())


def table_files(root: Path) -> set[str]:
    """Every file of the table, relative, without the maintainer's own directory."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".tablefmt" not in p.parts}


class RequestLogFileIO(ForwardingFileIO):
    """Counts every request that reads or lists (what an idle pass costs)."""

    def __init__(self, inner: FileIO, log: list[tuple[str, str]]) -> None:
        super().__init__(inner)
        self.log = log

    def read_bytes(self, path: str) -> bytes:
        self.log.append(("read", path))
        return self.inner.read_bytes(path)

    def exists(self, path: str) -> bool:
        self.log.append(("exists", path))
        return self.inner.exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        self.log.append(("list", path))
        return self.inner.list_dir(path)

    def list_names(self, path: str) -> list[str]:
        self.log.append(("list", path))
        return self.inner.list_names(path)

    def stat_file(self, path: str) -> FileInfo | None:
        self.log.append(("stat", path))
        return self.inner.stat_file(path)


def counting_opener(log: list[tuple[str, str]]) -> Callable[[str, dict[str, Any]], tuple[FileIO, str]]:
    def opener(location: str, options: dict[str, Any]) -> tuple[FileIO, str]:
        file_io, root = open_location(location, options)
        return RequestLogFileIO(file_io, log), root

    return opener


def wrapping_opener(wrap: Callable[[FileIO], FileIO]) -> Callable[[str, dict[str, Any]], tuple[FileIO, str]]:
    def opener(location: str, options: dict[str, Any]) -> tuple[FileIO, str]:
        file_io, root = open_location(location, options)
        return wrap(file_io), root

    return opener
