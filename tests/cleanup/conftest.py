"""Fixtures for the maintenance tests: the ``kit`` that builds partitioned tables on disk, and an IO that crashes.

Files on disk, ageing, rows and the independent reachability oracle are in tests/support/tables.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.tables import ID_PART_SCHEMA, id_part_rows, rows_of

from tableformat.cleanup import check as check_module
from tableformat.cleanup.orphans import candidates as orphan_candidates
from tableformat.cleanup.orphans import file_list as orphan_file_list
from tableformat.codec import json_codec
from tableformat.io.local import LocalFileIO
from tableformat.table import Table


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


class Kit:
    """Builds partitioned tables (``id`` BIGINT, ``part`` INT, partitioned by ``part``) under one directory."""

    Crash = Crash
    CrashingIO = CrashingIO

    def __init__(self, base: Path) -> None:
        self.base = base
        self._next_id = 0
        self._names = itertools.count()

    def table(self, name: str | None = None, **options: str) -> Table:
        path = self.base / (name or f"t{next(self._names)}")
        return Table.create(
            str(path), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true", **options}
        )

    def rows(self, count: int, parts: Iterable[int] = (0, 1)) -> pa.Table:
        """``count`` new rows (ids never repeat within a test), parts cycling through ``parts``."""
        start = self._next_id
        self._next_id += count
        return id_part_rows(start, count, parts)

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


SPILLED = "spilled"
"""The id of the runs of the orphan and check tests whose data candidates are all spilled to disk."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test of tests/cleanup/orphans and tests/cleanup/test_check*.py twice: with the candidates in memory,
    and with ``orphan-files.candidates-in-memory`` at 1, so that every data candidate is spilled to disk
    (cleanup/orphans/spill.py) and the references are matched bucket by bucket, and with a file list walked three
    files at a time (cleanup/orphans/file_list.py)."""
    path = metafunc.definition.path
    spills = (path.parent.name == "orphans" and path.name != "test_spill.py") or path.name.startswith("test_check")
    if spills and "candidates_in_memory" in metafunc.fixturenames:
        metafunc.parametrize("candidates_in_memory", [None, 1], ids=["in-memory", SPILLED], indirect=True)


@pytest.fixture(autouse=True)
def candidates_in_memory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int | None:
    """The default of ``orphan-files.candidates-in-memory`` for this test (None: the registry's)."""
    budget: int | None = getattr(request, "param", None)
    if budget is not None:
        option = dataclasses.replace(orphan_candidates.ORPHAN_CANDIDATES_IN_MEMORY, default=budget)
        monkeypatch.setattr(orphan_candidates, "ORPHAN_CANDIDATES_IN_MEMORY", option)
        monkeypatch.setattr(check_module, "ORPHAN_CANDIDATES_IN_MEMORY", option)
        monkeypatch.setattr(orphan_file_list, "SPOOL_CHUNK", 3)
    return budget
