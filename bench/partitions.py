"""Benchmark partition expiration against deltalake 1.6.6, and the drop commit's cost as the expired set grows.

1. 365 daily partitions x 10 files (10 appends of one row per partition), expire the 335 oldest:
   * tablefmt: ``table.maintenance.expire_partitions("31d", max_num=1000, now_ms=<2026-01-01 12:00>)`` (plan +
     one mark-delete OVERWRITE snapshot);
   * deltalake 1.6.6 on the equivalent Delta table (``partition_by=["dt"]``, 10 appends):
     ``DeltaTable.delete("dt < '2025-12-02'")`` (a predicate on the partition column: metadata-only remove actions).
   Each runs ``--repeat`` times on fresh copies; medians are reported.
2. The drop commit alone (plan excluded) on tables of N + 30 daily DATE partitions x 1 file, expiring N oldest
   (N = 100, 1,000, 10,000 by default): milliseconds in total and per dropped partition.

Usage: ``python bench/partitions.py [--repeat 3] [--sizes 100 1000 10000] [--skip-delta]``. Run by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
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


def time_tablefmt(source: Path, scratch: Path) -> float:
    path = _fresh(source, scratch)
    started = time.perf_counter()
    result = Table.open(str(path)).maintenance.expire_partitions("31d", max_num=1000, now_ms=NOW_MS)
    elapsed = time.perf_counter() - started
    assert len(result.expired_partitions) == 335 and result.files == 3350, result.summary()
    return elapsed


def time_delta(source: Path, scratch: Path) -> float:
    from deltalake import DeltaTable

    path = _fresh(source, scratch)
    started = time.perf_counter()
    metrics = DeltaTable(str(path)).delete("dt < '2025-12-02'")
    elapsed = time.perf_counter() - started
    assert metrics["num_removed_files"] == 3350, metrics
    return elapsed


def drop_cost(base: Path, size: int) -> tuple[float, int]:
    """Seconds of the drop commit alone (execute), expiring ``size`` partitions of 1 file each."""
    days = [dt.date(1990, 1, 1) + dt.timedelta(days=i) for i in range(size + 30)]
    path = base / f"grow-{size}"
    table = Table.create(
        str(path), pa.schema([("id", pa.int64()), ("dt", pa.date32())]), ["dt"], {"write-only": "true"}
    )
    table.append(pa.table({"id": list(range(len(days))), "dt": days}, schema=table.arrow_schema))
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
    return elapsed, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--skip-delta", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        scratch = base / "scratch"
        scratch.mkdir()
        tablefmt_path, delta_path = build(base, not args.skip_delta)
        ours = statistics.median(time_tablefmt(tablefmt_path, scratch) for _ in range(args.repeat))
        print(f"expire 335 of 365 partitions x 10 files: tablefmt median {ours * 1000:.1f} ms")
        if delta_path is not None:
            theirs = statistics.median(time_delta(delta_path, scratch) for _ in range(args.repeat))
            print(f"deltalake DeltaTable.delete on the partition column: median {theirs * 1000:.1f} ms")
            print(f"tablefmt/deltalake: {ours / theirs:.2f}x (target <= 0.5)")
        for size in args.sizes:
            elapsed, count = drop_cost(base, size)
            print(f"drop commit of {count} partitions: {elapsed * 1000:.1f} ms ({elapsed * 1e6 / count:.1f} us each)")


if __name__ == "__main__":
    main()
