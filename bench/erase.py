"""Benchmark erasure by key, side by side with deltalake's ``delete(predicate)`` in the same run.

The table: ``--files`` appends of ``--rows-per-file`` rows (user_id, unique and ascending, so each file holds one
id range; email; amount; day), written once with tablefmt and once with deltalake 1.6.6 (one append per file
each). The keys: ``--keys`` user ids spread evenly over ``--spread`` of the files (1 % by default: the issue's
"1,000 keys spread over 1 % of a 10M-row table's files").

* tablefmt: ``table.maintenance.erase(keys_file=..., key="user_id")`` (a Parquet file of the keys; files pruned by
  statistics, the filter column read, only the files holding keys rewritten), and its ``rewritten_bytes`` against
  the bytes of the files that hold the keys;
* deltalake: ``DeltaTable.delete("user_id IN (k1, ..., kN)")`` on the Delta table.

Both sides write Parquet with the same codec, ``--compression`` (zstd at level 1 by default, tablefmt's default
and the level its rewrites use; or snappy): the tablefmt table sets Paimon's ``file.compression``, deltalake gets
``WriterProperties(compression=..., compression_level=1)`` for its appends and for the files its delete writes
(without them deltalake appends snappy and its delete writes zstd). Both keep a dictionary on every column their
writer chooses to (tablefmt's rewrite: the columns the rewritten file had one for; deltalake: every column), one row
group per file, statistics and page indexes.

Each runs ``--repeat`` times on fresh copies of the tables (alternating); the medians and the median of the
per-round ratios are printed, of the elapsed time and of the CPU time (all threads of the process: it moves less
with the machine's load), with the bytes each side wrote.

Usage: ``python bench/erase.py [--files 200] [--rows-per-file 50000] [--keys 1000] [--spread 0.01] [--repeat 3]
[--compression zstd|snappy]``. Run by hand; not a test.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tableformat import Table

SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.int64()),
        pa.field("email", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("day", pa.date32()),
    ]
)


def file_rows(index: int, rows: int) -> pa.Table:
    first = index * rows
    ids = pa.array(range(first, first + rows), pa.int64())
    return pa.table(
        {
            "user_id": ids,
            "email": pa.array([f"user{i}@example.com" for i in range(first, first + rows)]),
            "amount": pa.array([(i % 1000) * 0.25 for i in range(first, first + rows)], pa.float64()),
            "day": pa.array([dt.date(2026, 1, 1)] * rows, pa.date32()),
        },
        schema=SCHEMA,
    )


def writer_properties(compression: str) -> Any:
    from deltalake import WriterProperties

    return WriterProperties(compression=compression.upper(), compression_level=1 if compression == "zstd" else None)


def build(root: Path, files: int, rows: int, compression: str) -> tuple[Path, Path]:
    from deltalake import write_deltalake

    ours, delta = root / "tablefmt", root / "delta"
    table = Table.create(str(ours), SCHEMA, options={"write-only": "true", "file.compression": compression})
    for index in range(files):
        data = file_rows(index, rows)
        table.append(data)
        write_deltalake(str(delta), data, mode="append", writer_properties=writer_properties(compression))
    return ours, delta


def chosen_keys(files: int, rows: int, keys: int, spread: float) -> list[int]:
    holding = max(1, round(files * spread))
    step = max(1, files // holding)
    indexes = [i * step for i in range(holding)]
    per_file = max(1, keys // holding)
    found = []
    for index in indexes:
        first = index * rows
        found += [first + (j * rows) // per_file for j in range(per_file)]
    return found[:keys]


def run_tablefmt(source: Path, scratch: Path, keys_file: Path) -> tuple[float, float, int, int, int, int]:
    """Seconds, CPU seconds (all threads), rows erased, files rewritten, their bytes, bytes of the new files."""
    copy = scratch / "t"
    shutil.copytree(source, copy)
    table = Table.open(str(copy))
    started, cpu = time.perf_counter(), time.process_time()
    result = table.maintenance.erase(keys_file=str(keys_file), key="user_id")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    written = sum((copy / path).stat().st_size for path in result.written_paths)
    shutil.rmtree(copy)
    return elapsed, cpu, result.erased_rows, len(result.rewritten_paths), result.rewritten_bytes, written


def run_delta(source: Path, scratch: Path, keys: list[int], compression: str) -> tuple[float, float, int, int]:
    """Seconds, CPU seconds (all threads), rows deleted, bytes of the new files."""
    from deltalake import DeltaTable

    copy = scratch / "d"
    shutil.copytree(source, copy)
    before = {path.name for path in copy.glob("*.parquet")}
    started, cpu = time.perf_counter(), time.process_time()
    metrics = DeltaTable(str(copy)).delete(
        f"user_id IN ({', '.join(map(str, keys))})", writer_properties=writer_properties(compression)
    )
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    written = sum(path.stat().st_size for path in copy.glob("*.parquet") if path.name not in before)
    shutil.rmtree(copy)
    return elapsed, cpu, int(metrics.get("num_deleted_rows", -1)), written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows-per-file", type=int, default=50_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--spread", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compression", choices=("zstd", "snappy"), default="zstd")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="erase-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        ours, delta = build(root, args.files, args.rows_per_file, args.compression)
        print(f"built {args.files} files x {args.rows_per_file} rows twice ({args.compression}) in "
              f"{time.perf_counter() - started:.1f} s")  # fmt: skip
        keys = chosen_keys(args.files, args.rows_per_file, args.keys, args.spread)
        keys_file = root / "keys.parquet"
        pq.write_table(pa.table({"user_id": pa.array(keys, pa.int64())}), keys_file)
        holding = {k // args.rows_per_file for k in keys}
        ours_times, delta_times, ours_cpu, delta_cpu = [], [], [], []
        for _ in range(args.repeat):
            seconds, cpu, erased, rewritten, rewritten_bytes, written = run_tablefmt(ours, root, keys_file)
            ours_times.append(seconds)
            ours_cpu.append(cpu)
            delta_seconds, cpu, deleted, delta_written = run_delta(delta, root, keys, args.compression)
            delta_times.append(delta_seconds)
            delta_cpu.append(cpu)
        holding_bytes = _holding_bytes(ours, holding, args.rows_per_file)
        ours_median, delta_median = statistics.median(ours_times), statistics.median(delta_times)
        print(f"keys {len(keys)} in {len(holding)} of {args.files} files; tablefmt erased {erased} rows, rewrote "
              f"{rewritten} files ({rewritten_bytes} bytes; the files holding the keys: {holding_bytes} bytes, "
              f"{rewritten_bytes / holding_bytes:.2f}x) and wrote {written} bytes ({written / holding_bytes:.2f}x); "
              f"deltalake deleted {deleted} rows and wrote {delta_written} bytes")  # fmt: skip
        print(f"tablefmt erase median {ours_median * 1000:.0f} ms {[round(t * 1000) for t in ours_times]}")
        print(f"deltalake delete median {delta_median * 1000:.0f} ms {[round(t * 1000) for t in delta_times]}")
        ratios = [ours / theirs for ours, theirs in zip(ours_times, delta_times)]
        print(f"tablefmt / deltalake: median of per-round ratios {statistics.median(ratios):.3f}x "
              f"{[round(r, 2) for r in ratios]}; ratio of medians {ours_median / delta_median:.3f}x")  # fmt: skip
        cpu_ratios = [ours / theirs for ours, theirs in zip(ours_cpu, delta_cpu)]
        print(f"CPU time (all threads; moves less with the machine's load): tablefmt median "
              f"{statistics.median(ours_cpu) * 1000:.0f} ms, deltalake {statistics.median(delta_cpu) * 1000:.0f} ms, "
              f"median of per-round ratios {statistics.median(cpu_ratios):.3f}x")  # fmt: skip


def _holding_bytes(root: Path, holding: set[int], rows: int) -> int:
    """Bytes of the files holding a key: each append wrote one file of ids [i * rows, (i + 1) * rows)."""
    table = Table.open(str(root))
    total = 0
    for entry in table.plan_files(table.latest_snapshot()):
        first = pq.read_table(next(root.rglob(entry.file.file_name)), columns=["user_id"])["user_id"][0].as_py()
        if first // rows in holding:
            total += entry.file.file_size
    return total


if __name__ == "__main__":
    main()
