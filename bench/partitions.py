"""Benchmark partition expiration against deltalake 1.6.6, and the drop commit's cost as the expired set grows.

1. 365 daily partitions x 10 files (10 appends of one row per partition), expire the 335 oldest:
   * tablefmt: ``Table.open(path).maintenance.expire_partitions("31d", max_num=1000, now_ms=<2026-01-01 12:00>)``
     (plan + one mark-delete OVERWRITE snapshot);
   * deltalake 1.6.6 on the equivalent Delta table (``partition_by=["dt"]``, 10 appends):
     ``DeltaTable(path).delete("dt < '2025-12-02'")`` (a predicate on the partition column: metadata-only remove
     actions).
   In process: both sides are timed from opening the table to the committed result, modules already imported (no
   process start, no import), after one untimed warm-up run each; each round runs both, one after the other, on
   fresh synced copies, and its ratio is printed, with the CPU time of the process (all threads: deltalake's Rust
   runtime uses several). Whole process: ``--processes`` rounds of a fresh interpreter per side (``python -c``:
   start, imports, open, expire, exit), timed by the parent, with the import time the child measured itself, and
   the time of the same interpreter doing nothing (``python -c pass``: start and exit with this environment's site
   packages). Children run from compiled bytecode, as an installed program does (PYTHONDONTWRITEBYTECODE removed,
   one untimed run per side first).
2. The drop commit alone (plan excluded: ``execute`` of a plan made just before) on tables of N + 30 daily DATE
   partitions x 1 file, expiring the N oldest (N = 100, 1,000, 10,000 by default): total and per dropped partition.
   ``--history H`` repeats N = 1,000 on a table with H more commits before the drop (appends into the 30 kept
   partitions): the cost follows what is dropped, not the table's history.

Usage: ``python bench/partitions.py [--repeat 5] [--processes 3] [--sizes 100 1000 10000] [--history 300]
[--skip-delta]``. Run by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from tableformat.cleanup.kernel import run_operation
from tableformat.cleanup.partitions import PARTITION_EXPIRATION
from tableformat.context import TableContext
from tableformat.table import Table

os.environ["TZ"] = "UTC"
time.tzset()
NOW_MS = int(dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone.utc).timestamp() * 1000)
DAYS = [(dt.date(2025, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(365)]

TABLEFMT_CHILD = f"""
import time
started = time.perf_counter()
from tableformat.table import Table
imported = time.perf_counter()
result = Table.open({{path!r}}).maintenance.expire_partitions("31d", max_num=1000, now_ms={NOW_MS})
assert len(result.expired_partitions) == 335 and result.files == 3350
print(imported - started, time.perf_counter() - imported)
"""
DELTA_CHILD = """
import time
started = time.perf_counter()
from deltalake import DeltaTable
imported = time.perf_counter()
metrics = DeltaTable({path!r}).delete("dt < '2025-12-02'")
assert metrics["num_removed_files"] == 3350
print(imported - started, time.perf_counter() - imported)
"""


def _data(round_no: int) -> pa.Table:
    return pa.table({"id": [round_no * 1000 + i for i in range(len(DAYS))], "dt": DAYS})


def build(base: Path, delta: bool) -> tuple[Path, Path | None]:
    path = base / "tablefmt"
    table = Table.create(str(path), _data(0).schema, ["dt"], {"write-only": "true"})
    for round_no in range(10):
        table.append(_data(round_no))
    if not delta:
        return path, None
    from deltalake import write_deltalake

    delta_path = base / "delta"
    for round_no in range(10):
        write_deltalake(str(delta_path), _data(round_no), partition_by=["dt"], mode="append")
    return path, delta_path


def _fresh(source: Path, scratch: Path) -> Path:
    target = scratch / f"{source.name}-{time.monotonic_ns()}"
    shutil.copytree(source, target)
    os.sync()
    return target


def time_tablefmt(source: Path, scratch: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of opening the table and expiring (CPU: every thread of this process)."""
    path = _fresh(source, scratch)
    started, cpu = time.perf_counter(), time.process_time()
    result = Table.open(str(path)).maintenance.expire_partitions("31d", max_num=1000, now_ms=NOW_MS)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert len(result.expired_partitions) == 335 and result.files == 3350, result.summary()
    return elapsed, cpu


def time_delta(source: Path, scratch: Path) -> tuple[float, float]:
    from deltalake import DeltaTable

    path = _fresh(source, scratch)
    started, cpu = time.perf_counter(), time.process_time()
    metrics = DeltaTable(str(path)).delete("dt < '2025-12-02'")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert metrics["num_removed_files"] == 3350, metrics
    return elapsed, cpu


_CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Children run as installed programs do, from compiled bytecode (pip compiles it at install; without it every
start compiles tablefmt's modules from source: about 150 ms more, none of it deltalake's, which is compiled Rust)."""


def time_process(code: str, source: Path, scratch: Path) -> tuple[float, float, float]:
    """(whole process, import, open + operation) seconds of a fresh interpreter running ``code`` on a copy."""
    path = _fresh(source, scratch)
    started = time.perf_counter()
    command = [sys.executable, "-c", code.format(path=str(path))]
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=_CHILD_ENV)
    elapsed = time.perf_counter() - started
    imported, operation = (float(x) for x in out.stdout.split())
    return elapsed, imported, operation


def drop_cost(base: Path, size: int, history: int = 0) -> float:
    """Seconds of the drop commit alone (execute), expiring ``size`` partitions of 1 file each, after ``history``
    more commits into the partitions that stay."""
    days = [dt.date(1990, 1, 1) + dt.timedelta(days=i) for i in range(size + 30)]
    path = base / f"grow-{size}-{history}"
    table = Table.create(
        str(path), pa.schema([("id", pa.int64()), ("dt", pa.date32())]), ["dt"], {"write-only": "true"}
    )
    table.append(pa.table({"id": list(range(len(days))), "dt": days}, schema=table.arrow_schema))
    for commit in range(history):
        table.append(pa.table({"id": [10**6 + commit], "dt": [days[size + commit % 30]]}, schema=table.arrow_schema))
    ctx = TableContext.load(str(path))
    config = PARTITION_EXPIRATION.configure(ctx, {"expiration_time": "1d", "max_num": size})
    plan = PARTITION_EXPIRATION.plan(ctx, config, NOW_MS)
    started = time.perf_counter()
    result = PARTITION_EXPIRATION.execute(ctx, plan, config, None)
    elapsed = time.perf_counter() - started
    assert len(result.expired_partitions) == size
    again = run_operation(
        PARTITION_EXPIRATION, ctx, {"expiration_time": "1d", "max_num": size}, dry_run=True, now_ms=NOW_MS
    )
    assert len(again.expired_partitions) == 30  # the 30 newest are left (all older than 1 day here)
    return elapsed


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def compare_in_process(tablefmt_path: Path, delta_path: Path | None, scratch: Path, repeat: int) -> None:
    ours, theirs = [], []
    for round_no in range(1, repeat + 1):
        ours.append(time_tablefmt(tablefmt_path, scratch))
        line = f"round {round_no}: tablefmt {_ms(ours[-1][0])} (CPU {_ms(ours[-1][1])})"
        if delta_path is not None:
            theirs.append(time_delta(delta_path, scratch))
            (mine, _), (peer, peer_cpu) = ours[-1], theirs[-1]
            line += f", deltalake {_ms(peer)} (CPU {_ms(peer_cpu)}), ratio {mine / peer:.2f}x"
        print(line)
    wall = statistics.median(o[0] for o in ours)
    print(f"in process, expire 335 of 365 partitions x 10 files: tablefmt median {_ms(wall)}")
    if theirs:
        ratios = [o[0] / t[0] for o, t in zip(ours, theirs)]
        cpu_ratios = [o[1] / t[1] for o, t in zip(ours, theirs)]
        their_wall = statistics.median(t[0] for t in theirs)
        print(f"  deltalake DeltaTable.delete on the partition column: median {_ms(their_wall)}")
        best = min(o[0] for o in ours) / min(t[0] for t in theirs)
        print(
            f"  tablefmt/deltalake: median of rounds {statistics.median(ratios):.2f}x, ratio of medians "
            f"{wall / their_wall:.2f}x, best-of {best:.2f}x (target <= 0.5); CPU time, median of rounds "
            f"{statistics.median(cpu_ratios):.2f}x"
        )


def compare_processes(tablefmt_path: Path, delta_path: Path | None, scratch: Path, repeat: int) -> None:
    sides = [("tablefmt", TABLEFMT_CHILD, tablefmt_path)]
    if delta_path is not None:
        sides.append(("deltalake", DELTA_CHILD, delta_path))
    starts = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=_CHILD_ENV)
        starts.append(time.perf_counter() - started)
    print(f"whole process: the interpreter alone (python -c pass) takes {_ms(statistics.median(starts))}")
    medians = {}
    for name, code, source in sides:
        time_process(code, source, scratch)  # untimed: writes the bytecode caches if missing
        runs = [time_process(code, source, scratch) for _ in range(repeat)]
        whole, imported, operation = (statistics.median(r[i] for r in runs) for i in range(3))
        medians[name] = whole
        print(
            f"whole process, {name}: median {_ms(whole)} (import {_ms(imported)}, open + expire {_ms(operation)}, "
            f"interpreter start and exit the rest); rounds {', '.join(_ms(r[0]) for r in runs)}"
        )
    if len(medians) == 2:
        print(f"  whole process tablefmt/deltalake: {medians['tablefmt'] / medians['deltalake']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--processes", type=int, default=3, help="whole-process rounds per side (0: none)")
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--history", type=int, default=300, help="extra commits before the N=1,000 drop (0: none)")
    parser.add_argument("--skip-delta", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        scratch = base / "scratch"
        scratch.mkdir()
        tablefmt_path, delta_path = build(base, not args.skip_delta)
        time_tablefmt(tablefmt_path, scratch)  # warm-up: first imports and caches of both sides, not timed
        if delta_path is not None:
            time_delta(delta_path, scratch)
        compare_in_process(tablefmt_path, delta_path, scratch, args.repeat)
        if args.processes:
            compare_processes(tablefmt_path, delta_path, scratch, args.processes)
        for size in args.sizes:
            elapsed = drop_cost(base, size)
            print(f"drop commit of {size} partitions: {_ms(elapsed)} ({elapsed * 1e6 / size:.1f} us each)")
        if args.history:
            elapsed = drop_cost(base, 1000, args.history)
            print(f"drop commit of 1000 partitions after {args.history} more commits: {_ms(elapsed)}")


if __name__ == "__main__":
    main()
