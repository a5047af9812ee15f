"""Benchmark ``tablefmt maintain`` over warehouses, side by side with what a cron job does without it.

1. **Idle warehouse**: 1,000 small tables (3 snapshots each), already maintained once, nothing due. One
   ``tablefmt maintain --once`` pass, timed as a whole process (start-up included), and the metadata requests per
   table counted in-process (target: at most 3 per idle table). Side by side, the loops a cron job runs without the
   maintainer: snapshot expiration and orphan cleanup per table in one process (the API in a loop),
   and deltalake 1.6.6 ``DeltaTable(path).vacuum(dry_run=True)`` over 1,000 equivalent Delta tables.
2. **Due work**: 100 tables with 20 expirable snapshots each, one pass with ``--parallelism 2`` and ``1`` on
   this 2-core machine, against one process looping over the tables with the API (expire + remove-orphans: what
   the pass runs on a table with everything due, without leases, state or keep-up).
3. **Keep-up**: a table that gets 10 commits per hour with ``snapshot.expire.limit=2``, maintained hourly (fake
   clock): the keep-up report after each pass.

Every timing is the median of ``--repeat`` rounds (default 3) with the contenders' order alternating.

Usage: ``python bench/maintain.py [--tables 1000] [--due-tables 100] [--repeat 3] [--skip-delta]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings
from tableformat.context import TableContext
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64())])
TABLEFMT = str(Path(sys.executable).with_name("tablefmt"))


class Counting(ForwardingFileIO):
    """Counts requests that read or list."""

    def __init__(self, inner: FileIO, counts: dict[str, int]) -> None:
        super().__init__(inner)
        self.counts = counts

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def read_bytes(self, path: str) -> bytes:
        self._count("read")
        return self.inner.read_bytes(path)

    def exists(self, path: str) -> bool:
        self._count("exists")
        return self.inner.exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        self._count("list")
        return self.inner.list_dir(path)

    def list_names(self, path: str) -> list[str]:
        self._count("list")
        return self.inner.list_names(path)


def build_warehouse(root: Path, tables: int, commits: int, options: dict[str, str]) -> list[Path]:
    paths = []
    for i in range(tables):
        path = root / f"db{i % 10}.db" / f"t{i}"
        table = Table.create(str(path), SCHEMA, [], options)
        for c in range(commits):
            table.append(pa.table({"id": [c]}, schema=SCHEMA))
        paths.append(path)
    return paths


def whole_process(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([TABLEFMT, *args], check=True, capture_output=True)
    return time.perf_counter() - start


def expire_loop(paths: list[Path]) -> None:
    for path in paths:
        TableMaintenance(TableContext.load(str(path))).expire_snapshots()


def loop_process(paths_file: Path) -> float:
    """One process running, for every table, what ``maintain`` runs on a table that has it all due: snapshot
    expiration and orphan cleanup, through the API (the fastest a hand-written cron loop gets)."""
    code = (
        "import sys; from tableformat.table import Table\n"
        "for line in open(sys.argv[1]):\n"
        "    maintenance = Table.open(line.strip()).maintenance\n"
        "    maintenance.expire_snapshots(); maintenance.remove_orphan_files()"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(paths_file)], check=True)
    return time.perf_counter() - start


def delta_loop_process(paths_file: Path) -> float:
    code = (
        "import sys; from deltalake import DeltaTable\n"
        "for line in open(sys.argv[1]): DeltaTable(line.strip()).vacuum(dry_run=True)"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(paths_file)], check=True)
    return time.perf_counter() - start


def median_rounds(contenders: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(repeat):
        for name in names if r % 2 == 0 else list(reversed(names)):
            times[name].append(contenders[name]())
    return times


def idle(tmp: Path, count: int, repeat: int, skip_delta: bool) -> dict[str, Any]:
    wh = tmp / "idle"
    paths = build_warehouse(wh, count, 3, {"write-only": "true"})
    whole_process("maintain", "--once", str(wh))  # the first pass: everything due once
    counts: dict[str, int] = {}

    def opener(location: str, options: dict[str, Any]) -> tuple[FileIO, str]:
        file_io, root = open_location(location, options)
        return Counting(file_io, counts), root

    reports = Maintainer([str(wh)], MaintainSettings(), opener=opener).run_once()
    assert all(r.skipped == "nothing due" for r in reports), {r.skipped for r in reports}
    listing = tmp / "paths.txt"
    listing.write_text("\n".join(map(str, paths)))
    contenders: dict[str, Callable[[], float]] = {
        "tablefmt maintain --once (idle)": lambda: whole_process("maintain", "--once", str(wh)),
        "expire + remove-orphans loop (API)": lambda: loop_process(listing),
    }
    if not skip_delta:
        import deltalake

        delta_paths = []
        for i in range(count):
            path = tmp / "delta" / f"t{i}"
            for c in range(3):
                deltalake.write_deltalake(str(path), pa.table({"id": [c]}, schema=SCHEMA), mode="append")
            delta_paths.append(path)
        delta_listing = tmp / "delta-paths.txt"
        delta_listing.write_text("\n".join(map(str, delta_paths)))
        contenders["deltalake vacuum(dry_run) loop"] = lambda: delta_loop_process(delta_listing)
    times = median_rounds(contenders, repeat)
    return {"tables": count, "requests_per_idle_table": {k: v / count for k, v in counts.items()}, "times": times}


def due(tmp: Path, count: int, repeat: int) -> dict[str, Any]:
    options = {"write-only": "true", "snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms",
               "snapshot.expire.limit": "100"}  # fmt: skip
    base = tmp / "due-base"
    paths = build_warehouse(base, count, 22, options)
    rounds: dict[str, list[float]] = {"maintain --parallelism 2": [], "maintain --parallelism 1": [], "API loop": []}
    for r in range(repeat):
        order = list(rounds) if r % 2 == 0 else list(reversed(rounds))
        for name in order:
            copy = tmp / "due"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            subprocess.run(["sync"], check=False)
            if name == "API loop":
                listing = tmp / "due-paths.txt"
                listing.write_text("\n".join(str(copy / p.relative_to(base)) for p in paths))
                rounds[name].append(loop_process(listing))
            else:
                rounds[name].append(whole_process("maintain", "--once", "--parallelism", name[-1], str(copy)))
    return {"tables": count, "expirable_per_table": 20, "times": rounds}


def keep_up(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "keep-up" / "t"
    options = {"write-only": "true", "snapshot.expire.limit": "2", "snapshot.num-retained.min": "1",
               "snapshot.time-retained": "1 ms"}  # fmt: skip
    table = Table.create(str(path), SCHEMA, [], options)
    now = [time.time_ns() // 1_000_000 + 3_600_000]
    maintainer = Maintainer([str(path)], MaintainSettings(backlog_retry_ms=3_600_000), clock=lambda: now[0])
    out = []
    for hour in range(4):
        for c in range(10):
            table.append(pa.table({"id": [hour * 10 + c]}, schema=SCHEMA))
        report = maintainer.run_once()[0]
        assert report.keep_up is not None
        out.append({"hour": hour, **report.keep_up.to_json()})
        now[0] += 3_600_000
    return out


def ratio_lines(times: dict[str, list[float]]) -> list[str]:
    medians = {k: statistics.median(v) for k, v in times.items()}
    first = next(iter(medians))
    lines = []
    for name, value in medians.items():
        rounds = ", ".join(f"{t:.2f}" for t in times[name])
        ratio = "" if name == first else f"  (tablefmt: {medians[first] / value:.2f}x this)"
        lines.append(f"  {name:42s} {value:7.2f} s  rounds [{rounds}]{ratio}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--due-tables", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-delta", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-maintain-"))
    try:
        found = idle(tmp, args.tables, args.repeat, args.skip_delta)
        print(f"idle warehouse: {found['tables']} tables, requests per idle table {found['requests_per_idle_table']}")
        print("\n".join(ratio_lines(found["times"])))
        work = due(tmp, args.due_tables, args.repeat)
        print(f"due work: {work['tables']} tables x {work['expirable_per_table']} expirable snapshots, 2 cores")
        print("\n".join(ratio_lines(work["times"])))
        print("keep-up, 10 commits/h against snapshot.expire.limit=2, one pass per hour:")
        for row in keep_up(tmp):
            print("  " + json.dumps(row))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
