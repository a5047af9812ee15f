"""Fixtures for the expiration tests: real tables on disk and an independent reachability oracle."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tableformat.codec import json_codec
from tableformat.context import TableContext
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.live_set import live_entries
from tableformat.scan.reader import DataReader
from tableformat.store import MetadataStore
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
FAR_FUTURE_MS = 4_102_444_800_000  # 2100-01-01: every snapshot and tag is old by then


class Crash(Exception):
    """Raised by CrashingIO at the chosen call: stands for the process dying there."""


class CrashingIO(LocalFileIO):
    """Local FileIO that 'crashes' at the n-th deleted path (after deleting the paths before it in that call),
    or at the n-th write, when armed. Thread-safe counters (deletes run on a pool)."""

    def __init__(self, crash_at_delete: int | None = None, crash_at_write: int | None = None) -> None:
        self.crash_at_delete = crash_at_delete
        self.crash_at_write = crash_at_write
        self.deletes = 0
        self.writes = 0
        self._lock = threading.Lock()

    def delete_files(self, paths: Any) -> list[str]:
        with self._lock:
            allowed = len(paths)
            if self.crash_at_delete is not None:
                allowed = max(0, min(len(paths), self.crash_at_delete - self.deletes - 1))
            self.deletes += len(paths)
        done = super().delete_files(list(paths)[:allowed])
        if allowed < len(paths):
            self.crash_at_delete = None  # crash once
            raise Crash(f"crash before deleting {paths[allowed]}")
        return done

    def write_bytes(self, path: str, data: bytes) -> None:
        with self._lock:
            self.writes += 1
            crash = self.crash_at_write is not None and self.writes == self.crash_at_write
        if crash:
            self.crash_at_write = None
            raise Crash(f"crash before writing {path}")
        super().write_bytes(path, data)


def context_with_io(root: Path, file_io: LocalFileIO) -> TableContext:
    layout = TableLayout(str(root))
    store = MetadataStore(file_io, layout)
    return TableContext(location=str(root), io=file_io, layout=layout, store=store, schema=store.latest_schema())


def disk_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def rows_of(table: pa.Table) -> list[tuple[int, int]]:
    return sorted(zip(table.column("id").to_pylist(), table.column("part").to_pylist()))


def reachable_files(ctx: TableContext) -> set[str]:
    """Every file a retained snapshot or tag references, plus the metadata roots: computed independently of
    cleanup/ (scan planner + reader paths), as the oracle for "nothing leaked, nothing retained deleted"."""
    store, layout = ctx.store, ctx.layout
    reader = DataReader(ctx.io, layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec())
    roots = [store.read_snapshot(i) for i in store.snapshot_ids()] + [t.snapshot for t in store.tags()]
    files = {layout.relative(layout.snapshot_file(i)) for i in store.snapshot_ids()}
    files |= {layout.relative(layout.tag_file(n)) for n in store.tag_names()}
    files |= {layout.relative(layout.consumer_file(c.consumer_id)) for c in store.consumers()}
    files |= {layout.relative(layout.schema_file(i)) for i in store.schema_ids()}
    files |= {f"snapshot/{hint}" for hint in ("LATEST", "EARLIEST") if ctx.io.exists(layout.hint_file(hint))}
    for snapshot in roots:
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
            files.add(layout.relative(layout.manifest_file(name)))
        for meta in store.manifests_of(snapshot):
            files.add(layout.relative(layout.manifest_file(meta.file_name)))
        for entry in live_entries(store, snapshot, ctx.partition_codec()):
            files.add(layout.relative(reader.path_of(entry)))
    return files


class Kit:
    """Builds partitioned test tables under one directory and inspects them (tests reach every helper here)."""

    FAR_FUTURE_MS = FAR_FUTURE_MS
    Crash = Crash
    CrashingIO = CrashingIO
    disk_files = staticmethod(disk_files)
    rows_of = staticmethod(rows_of)
    reachable_files = staticmethod(reachable_files)
    context_with_io = staticmethod(context_with_io)

    def __init__(self, base: Path) -> None:
        self.base = base
        self._ids = itertools.count()
        self._names = itertools.count()

    def table(self, name: str | None = None, **options: str) -> Table:
        path = self.base / (name or f"t{next(self._names)}")
        return Table.create(str(path), SCHEMA, partition_keys=["part"], options={"write-only": "true", **options})

    def rows(self, count: int, parts: Iterable[int] = (0, 1)) -> pa.Table:
        ids = [next(self._ids) for _ in range(count)]
        cycle = list(parts)
        return pa.table({"id": ids, "part": [cycle[i % len(cycle)] for i in range(count)]}, schema=SCHEMA)

    @staticmethod
    def root(table: Table) -> Path:
        return Path(table.context.layout.root)

    @staticmethod
    def set_times(table: Table, times: Mapping[int, int]) -> None:
        """Rewrite snapshot files with chosen commit times (ms): the time rule's test input."""
        ctx = table.context
        for snapshot_id, millis in times.items():
            snapshot = dataclasses.replace(ctx.store.read_snapshot(snapshot_id), time_millis=millis)
            ctx.io.write_bytes(ctx.layout.snapshot_file(snapshot_id), json_codec.snapshot_to_json(snapshot))

    @staticmethod
    def snapshot_rows(table: Table) -> dict[int, list[tuple[int, int]]]:
        return {s.id: rows_of(table.to_arrow(snapshot_id=s.id)) for s in table.snapshots()}


@pytest.fixture
def kit(tmp_path: Path) -> Kit:
    return Kit(tmp_path)

