"""Benchmark reads: ``table.to_arrow()`` against one ``pyarrow.dataset`` scan of exactly the same Parquet files.

The table: 1,000,000 rows (``--rows``) in 10 appends over 10 daily DATE partitions (100 files), columns id BIGINT,
day DATE (partition), name STRING, amount DOUBLE. Each round times, in alternating order:

* tablefmt ``to_arrow()``: plan the latest snapshot (manifests read) and read its files;
* pyarrow ``ds.dataset(<the same 100 paths>, format="parquet").to_table()`` (the paths given, no listing, no
  planning: the peer gets the file list for free);
* the same two with a projection (``id``, ``amount``) and a filter (``id >= 900,000``: tablefmt prunes files by
  their statistics; pyarrow prunes row groups by the Parquet statistics of every file it opens);
* the previous reader (``DataReader.read_all``, file by file) for reference.

Prints per-round times and ratios (tablefmt / pyarrow), their medians, and the ratio of the best times (the
least disturbed by other load on a shared machine). Usage: ``python bench/read.py
[--rows 1000000] [--rounds 5]``. Run by hand, on an otherwise quiet machine if you can.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from tableformat.table import Table

DAYS = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(10)]


def build(path: Path, rows: int) -> Table:
    table = Table.create(
        str(path),
        pa.schema([("id", pa.int64()), ("day", pa.date32()), ("name", pa.string()), ("amount", pa.float64())]),
        ["day"],
        {"write-only": "true"},
    )
    per_append = rows // 10
    for append in range(10):
        ids = pa.array(range(append * per_append, (append + 1) * per_append), pa.int64())
        table.append(
            pa.table(
                {
                    "id": ids,
                    "day": pa.array([DAYS[i % 10] for i in range(per_append)], pa.date32()),
                    "name": pc.binary_join_element_wise("name-", pc.cast(ids, pa.string()), ""),
                    "amount": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
                }
            )
        )
    return table


def timed(fn: Callable[[], pa.Table]) -> tuple[float, int]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        table = build(Path(scratch) / "t", args.rows)
        paths = [
            str(Path(table.context.layout.root) / p) for p in table.inspect.files().column("file_path").to_pylist()
        ]
        wanted = pc.field("id") >= int(args.rows * 0.9)
        cases: dict[str, tuple[Callable[[], pa.Table], Callable[[], pa.Table]]] = {
            "full scan": (
                lambda: Table.open(table.location).to_arrow(),
                lambda: ds.dataset(paths, format="parquet").to_table(),
            ),
            "projection + filter": (
                lambda: Table.open(table.location).to_arrow(columns=["id", "amount"], filter=wanted),
                lambda: ds.dataset(paths, format="parquet").to_table(columns=["id", "amount"], filter=wanted),
            ),
        }
        old = Table.open(table.location)
        print(f"{args.rows:,} rows in {len(paths)} files; pyarrow {pa.__version__}")
        for name, (ours, peer) in cases.items():
            ratios, mine, theirs = [], [], []
            for round_no in range(args.rounds):
                order = [("tablefmt", ours), ("pyarrow", peer)]
                if round_no % 2:
                    order.reverse()
                times = {}
                for label, fn in order:
                    times[label], count = timed(fn)
                mine.append(times["tablefmt"])
                theirs.append(times["pyarrow"])
                ratios.append(times["tablefmt"] / times["pyarrow"])
                print(
                    f"  {name} round {round_no + 1}: tablefmt {times['tablefmt'] * 1000:7.1f} ms, pyarrow "
                    f"{times['pyarrow'] * 1000:7.1f} ms, ratio {ratios[-1]:.2f} ({count:,} rows)"
                )
            print(
                f"{name}: median tablefmt {statistics.median(mine) * 1000:.1f} ms, pyarrow "
                f"{statistics.median(theirs) * 1000:.1f} ms, median ratio {statistics.median(ratios):.2f}, "
                f"best-of ratio {min(mine) / min(theirs):.2f}"
            )
        entries = old.plan_files(old.latest_snapshot())
        seconds, _ = timed(lambda: old._reader().read_all(entries))
        print(f"previous reader (DataReader.read_all, file by file): {seconds * 1000:.1f} ms")


if __name__ == "__main__":
    main()
