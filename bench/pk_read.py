"""Benchmark merge-on-read of a primary-key table: tablefmt ``to_arrow()`` against pypaimon 2.1.0's read of the same
table, which pypaimon writes.

The table: ``--keys`` keys (default 1,000,000) with primary key ``id`` in 8 buckets (``--buckets``), written in
``--versions`` upsert rounds (default 5) that each rewrite every key (so each bucket holds 5 overlapping level-0
files and every read merges 5 versions of every key). Columns id BIGINT, name STRING, amount DOUBLE, round INT.
Each round times, in alternating order, tablefmt ``Table.open(path).to_arrow()`` and pypaimon's
``new_read().to_arrow(new_scan().plan().splits())``, checks both return one row per key, and prints the times
and the ratio (tablefmt / pypaimon), their medians and the ratio of the best times.

Runs with the interop environment's Python (pypaimon pins pyarrow<20)::

    .tox/interop/bin/python bench/pk_read.py [--keys 1000000] [--versions 5] [--buckets 8] [--rounds 3]
        [--warehouse DIR]

``--warehouse``: build the table there (kept), or reuse the one a previous run built there.

Run by hand, on an otherwise quiet machine if you can.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tableformat.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("round", pa.int32()),
    ]
)


def build(warehouse: Path, keys: int, versions: int, buckets: int) -> tuple[str, object]:
    """Write the table with pypaimon (unless the warehouse has it); its location and pypaimon's catalog."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": str(warehouse)})
    catalog.create_database("db", ignore_if_exists=True)
    location = str(warehouse / "db.db" / "pk")
    if (warehouse / "db.db" / "pk" / "snapshot").exists():
        return location, catalog
    schema = Schema.from_pyarrow_schema(SCHEMA, primary_keys=["id"], options={"bucket": str(buckets)})
    catalog.create_table("db.pk", schema, False)
    ids = pa.array(range(keys), pa.int64())
    for version in range(versions):
        data = pa.table(
            {
                "id": ids,
                "name": pc.binary_join_element_wise(f"v{version}-", pc.cast(ids, pa.string()), ""),
                "amount": pc.multiply(pc.cast(ids, pa.float64()), float(version + 1)),
                "round": pa.array([version] * keys, pa.int32()),
            },
            schema=SCHEMA,
        )
        builder = catalog.get_table("db.pk").new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
    return location, catalog


def timed(fn: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warehouse", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        location, catalog = build(args.warehouse or Path(scratch), args.keys, args.versions, args.buckets)
        files = len(Table.open(location).files())
        print(
            f"{args.keys:,} keys x {args.versions} versions in {args.buckets} buckets ({files} data files), written "
            f"by pypaimon in {time.perf_counter() - start:.1f} s (~0: built before); pyarrow {pa.__version__}, "
            f"{os.cpu_count()} CPUs, {platform.platform()}"
        )

        def ours() -> pa.Table:
            return Table.open(location).to_arrow()

        def peer() -> pa.Table:
            builder = catalog.get_table("db.pk").new_read_builder()  # type: ignore[attr-defined]
            return builder.new_read().to_arrow(builder.new_scan().plan().splits())

        mine, theirs, ratios = [], [], []
        for round_no in range(args.rounds):
            order = [("tablefmt", ours), ("pypaimon", peer)]
            if round_no % 2:
                order.reverse()
            times = {}
            for label, fn in order:
                times[label], result = timed(fn)
                last = pc.min_max(result.column("round")).as_py() if result.num_rows else None
                assert result.num_rows == args.keys, f"{label} read {result.num_rows:,} rows"
                assert last == {"min": args.versions - 1, "max": args.versions - 1}, f"{label}: rounds {last}"
            mine.append(times["tablefmt"])
            theirs.append(times["pypaimon"])
            ratios.append(times["tablefmt"] / times["pypaimon"])
            print(
                f"  round {round_no + 1}: tablefmt {times['tablefmt']:.2f} s, pypaimon {times['pypaimon']:.2f} s, "
                f"ratio {ratios[-1]:.3f}"
            )
        print(
            f"median tablefmt {statistics.median(mine):.2f} s, pypaimon {statistics.median(theirs):.2f} s, "
            f"median ratio {statistics.median(ratios):.3f}, best-of ratio {min(mine) / min(theirs):.3f}"
        )


if __name__ == "__main__":
    main()
