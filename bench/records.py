"""Benchmark record-level TTL and compaction, side by side with their peers in the same run.

1. Record expiry: 90 days of hourly appends (2,160 time-clustered files of ``--rows`` rows: id, ts, value, name)
   with a 30-day TTL, judged at a fixed time:
   * tablefmt: ``expire_records(now_ms=...)`` (fully expired files dropped by statistics in one metadata-only
     snapshot, the one straddling file rewritten);
   * deltalake 1.6.6 on the equivalent Delta table (one append per hour): ``DeltaTable.delete("ts < cutoff")``;
   * a row-by-row rewrite of every file (read, keep rows one at a time in Python, write a new file), the way a
     naive implementation expires records.
   Each runs ``--repeat`` times on fresh copies; medians and ratios are printed.
2. Compaction of ``--small-files`` small files (one commit holding them all): ``compact()`` rows/s against pyarrow
   reading the same files and writing them in the same groups (the limit: no metadata, no statistics).
3. ``--rss-mb N``: peak RSS of a child process rewriting one N-MB partly expired file (``expire_records``), against
   the file's size.

Usage: ``python bench/records.py [--repeat 3] [--rows 200] [--small-files 10000] [--rss-mb 1024] [--skip-delta]``.
Run by hand; not a test.
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
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import DataFileWriter
from tableformat.commit.rolling_writer import RollingFileWriter
from tableformat.context import TableContext
from tableformat.layout import NameFactory
from tableformat.maintenance import TableMaintenance
from tableformat.model.manifest import EMPTY_ROW
from tableformat.table import Table

HOUR = 3_600_000
NOW_MS = int(dt.datetime(2026, 4, 1, 0, 30, tzinfo=dt.timezone.utc).timestamp() * 1000)
START_MS = NOW_MS - 90 * 24 * HOUR
CUTOFF_MS = NOW_MS - 30 * 24 * HOUR
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us")), ("value", pa.float64()), ("name", pa.string())])
OPTIONS = {"record-level.expire-time": "30 d", "record-level.time-field": "ts", "write-only": "true"}


def _hour(hour: int, rows: int) -> pa.Table:
    first = START_MS + hour * HOUR
    ts = [dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=first + i * (HOUR // rows)) for i in range(rows)]
    return pa.table(
        {"id": range(hour * rows, (hour + 1) * rows), "ts": ts, "value": [i * 0.5 for i in range(rows)],
         "name": [f"n{i % 97}" for i in range(rows)]},
        schema=SCHEMA,
    )


def build(base: Path, rows: int, delta: bool) -> tuple[Path, Path | None]:
    path = base / "tablefmt"
    table = Table.create(str(path), SCHEMA, options=OPTIONS)
    hours = [_hour(h, rows) for h in range(90 * 24)]
    for data in hours:
        table.append(data)
    if not delta:
        return path, None
    from deltalake import write_deltalake

    delta_path = base / "delta"
    for data in hours:
        write_deltalake(str(delta_path), data, mode="append")
    return path, delta_path


def _fresh(source: Path, scratch: Path) -> Path:
    target = scratch / f"{source.name}-{time.monotonic_ns()}"
    shutil.copytree(source, target)
    return target


def _median(run: Callable[[Path], object], source: Path, scratch: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        copy = _fresh(source, scratch)
        start = time.perf_counter()
        run(copy)
        times.append(time.perf_counter() - start)
        shutil.rmtree(copy)
    return statistics.median(times)


def run_tablefmt(path: Path) -> None:
    result = TableMaintenance(TableContext.load(str(path))).expire_records(now_ms=NOW_MS)
    assert len(result.rewritten_files) <= 1 and result.expired_rows > 0, result


def run_delta(path: Path) -> None:
    from deltalake import DeltaTable

    cutoff = (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=CUTOFF_MS)).isoformat()
    DeltaTable(str(path)).delete(f"ts < '{cutoff}'")


def run_row_by_row(path: Path) -> None:
    """Every live file read, its rows kept one at a time in Python, written anew (no commit: the cost floor)."""
    cutoff = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=CUTOFF_MS)
    for file in sorted(path.rglob("data-*.parquet")):
        rows = [r for r in pq.read_table(file).to_pylist() if r["ts"] is None or r["ts"] >= cutoff]
        if rows:
            pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), str(file) + ".rewritten")


def bench_expiry(args: argparse.Namespace, scratch: Path) -> None:
    started = time.perf_counter()
    source, delta = build(scratch / "src", args.rows, not args.skip_delta)
    print(f"built 2,160 hourly files x {args.rows} rows in {time.perf_counter() - started:.0f} s")
    ours = _median(run_tablefmt, source, scratch, args.repeat)
    naive = _median(run_row_by_row, source, scratch, args.repeat)
    print(f"expire-records (30 d of 90 d): tablefmt {ours * 1000:.0f} ms")
    print(f"  row-by-row rewrite of every file {naive * 1000:.0f} ms: ratio {ours / naive:.3f}x")
    if delta is not None:
        peer = _median(run_delta, delta, scratch, args.repeat)
        print(f"  deltalake 1.6.6 delete('ts < cutoff') {peer * 1000:.0f} ms: ratio {ours / peer:.3f}x")


def _small_table(scratch: Path, files: int) -> Path:
    path = scratch / "small"
    table = Table.create(str(path), SCHEMA, options={"write-only": "true"})
    ctx = table.context
    writer = DataFileWriter(ctx.io, ctx.layout, ctx.schema, NameFactory())
    new = []
    for number in range(files):
        new += writer.write(_hour(number, 20))
    Committer(ctx.store, ctx.schema).commit(CommitRequest(kind=ChangeKind.APPEND, new_files=new))
    return path


def run_pyarrow_groups(path: Path, group: int) -> int:
    """pyarrow alone: read the same files and write them in groups of ``group`` files (the work's floor)."""
    files = sorted(path.rglob("data-*.parquet"))
    rows = 0
    for start in range(0, len(files), group):
        table = pa.concat_tables(pq.read_table(f) for f in files[start : start + group])
        pq.write_table(table, str(files[start]) + ".merged", compression="zstd", compression_level=1)
        rows += table.num_rows
    return rows


def bench_compaction(args: argparse.Namespace, scratch: Path) -> None:
    source = _small_table(scratch, args.small_files)
    ours, peer = [], []
    rows = 0
    for _ in range(args.repeat):
        copy = _fresh(source, scratch)
        start = time.perf_counter()
        result = TableMaintenance(TableContext.load(str(copy))).compact(now_ms=NOW_MS)
        ours.append(time.perf_counter() - start)
        rows = result.rows
        assert len(result.compacted_files) == args.small_files, result.notes
        shutil.rmtree(copy)
        copy = _fresh(source, scratch)
        start = time.perf_counter()
        assert run_pyarrow_groups(copy, 50) == rows
        peer.append(time.perf_counter() - start)
        shutil.rmtree(copy)
    ours_s, peer_s = statistics.median(ours), statistics.median(peer)
    print(f"compaction of {args.small_files} small files ({rows} rows, groups of 50):")
    print(f"  tablefmt {rows / ours_s:,.0f} rows/s ({ours_s:.2f} s); pyarrow read+write {rows / peer_s:,.0f} rows/s "
          f"({peer_s:.2f} s): ratio {ours_s / peer_s:.2f}x the time")


_CHILD = """
import resource
import sys
from tableformat.table import Table
result = Table.open(sys.argv[1]).maintenance.expire_records(now_ms=int(sys.argv[2]))
assert len(result.rewritten_files) == 1, result
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, result.expired_rows)
"""


def build_big(path: Path, size_mb: int) -> None:
    """One big partly expired file, written as a stream of row groups and committed (run in its own process)."""
    ctx = Table.create(str(path), SCHEMA, options=OPTIONS).context
    rolling = RollingFileWriter(
        ctx.io, ctx.layout, ctx.schema, NameFactory(), partition=EMPTY_ROW, partition_values=(), bucket=0,
        target_size=size_mb * 1024**2,
    )
    number = 0
    while not rolling.files:  # the writer closes the file once it reaches the size asked for
        data = _hour(number * 997 % 2160, 200_000)  # hours from all 90 days: about a third survive
        rolling.write(data.set_column(3, "name", pa.array([os.urandom(40).hex() for _ in range(data.num_rows)])))
        number += 1
    files = rolling.close()
    Committer(ctx.store, ctx.schema).commit(CommitRequest(kind=ChangeKind.APPEND, new_files=files))


def bench_rss(args: argparse.Namespace, scratch: Path) -> None:
    """The big file is built by one child process and rewritten by another: the second's peak RSS is the
    rewrite's alone (a child forked from a process that held the file would inherit its high-water mark)."""
    path = scratch / "big"
    subprocess.run([sys.executable, __file__, "--build-big", str(path), str(args.rss_mb)], check=True)
    big = Table.open(str(path)).files()[0]
    start = time.perf_counter()
    child = [sys.executable, "-c", _CHILD, str(path), str(NOW_MS)]
    out = subprocess.run(child, check=True, capture_output=True, text=True).stdout.split()
    elapsed = time.perf_counter() - start
    rss_mb, size_mb = int(out[0]) / 1024, big.file_size / 1024**2
    print(f"rewrite of one {size_mb:.0f} MB file ({big.row_count} rows, {out[1]} expired, target-file-size 128 MB): "
          f"peak RSS {rss_mb:.0f} MB ({rss_mb / size_mb:.2f}x the file), {elapsed:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--small-files", type=int, default=10_000)
    parser.add_argument("--rss-mb", type=int, default=0)
    parser.add_argument("--skip-delta", action="store_true")
    parser.add_argument("--only", choices=("expiry", "compaction", "rss"), default=None)
    parser.add_argument("--build-big", nargs=2, metavar=("PATH", "MB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_big:
        build_big(Path(args.build_big[0]), int(args.build_big[1]))
        return
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        if args.only in (None, "expiry"):
            bench_expiry(args, scratch)
        if args.only in (None, "compaction"):
            bench_compaction(args, scratch)
        if args.rss_mb and args.only in (None, "rss"):
            bench_rss(args, scratch)


if __name__ == "__main__":
    main()
