"""Commit latency: 1,000 small appends with tablefmt and with pypaimon 2.1.0, side by side in one run.

Run by hand in an environment that has both (pypaimon pins pyarrow<20), e.g. the tox interop env:
    .tox/interop/bin/python bench/commit.py [--commits 1000]
Prints per-decile median latencies and the ratios the targets are stated in:
    tablefmt commit #1000 (last-decile median) <= 1.5x commit #10 (first-decile median); median <= pypaimon's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa

from tableformat import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("value", pa.float64()), pa.field("part", pa.int32())])


def small_batch(i: int) -> pa.Table:
    return pa.table(
        {"id": [i * 10 + k for k in range(10)], "value": [float(k) for k in range(10)], "part": [i % 4] * 10},
        schema=SCHEMA,
    )


def timed(commits: int, commit: Callable[[int], None]) -> list[float]:
    latencies = []
    for i in range(commits):
        start = time.perf_counter()
        commit(i)
        latencies.append(time.perf_counter() - start)
    return latencies


def run_tablefmt(base: str, commits: int) -> list[float]:
    table = Table.create(
        os.path.join(base, "tablefmt"), SCHEMA, partition_keys=["part"], options={"write-only": "true"}
    )
    return timed(commits, lambda i: table.append(small_batch(i)))


def run_pypaimon(base: str, commits: int) -> list[float]:
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": os.path.join(base, "pypaimon")})
    catalog.create_database("db", ignore_if_exists=True)
    catalog.create_table("db.t", Schema.from_pyarrow_schema(SCHEMA, partition_keys=["part"]), ignore_if_exists=False)
    table = catalog.get_table("db.t")

    def commit(i: int) -> None:
        builder = table.new_batch_write_builder()
        write, committer = builder.new_write(), builder.new_commit()
        try:
            write.write_arrow(small_batch(i))
            committer.commit(write.prepare_commit())
        finally:
            write.close()
            committer.close()

    return timed(commits, commit)


def deciles(latencies: list[float]) -> list[float]:
    size = max(1, len(latencies) // 10)
    return [statistics.median(latencies[i : i + size]) * 1000 for i in range(0, len(latencies), size)][:10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1000)
    args = parser.parse_args()
    print(
        f"{time.strftime('%Y-%m-%d')} {platform.node()} {platform.processor() or platform.machine()} "
        f"cpus={os.cpu_count()} python={platform.python_version()} pyarrow={pa.__version__}"
    )
    with tempfile.TemporaryDirectory() as base:
        ours = run_tablefmt(base, args.commits)
        theirs = run_pypaimon(base, args.commits)
    for name, lat in (("tablefmt", ours), ("pypaimon", theirs)):
        print(
            f"{name:9} median {statistics.median(lat) * 1000:7.2f} ms  deciles(ms) "
            + " ".join(f"{d:6.2f}" for d in deciles(lat))
        )
    first, last = deciles(ours)[0], deciles(ours)[-1]
    print(f"tablefmt last/first decile: {last / first:.2f}x (target <= 1.5)")
    print(f"tablefmt/pypaimon median: {statistics.median(ours) / statistics.median(theirs):.2f}x (target <= 1.0)")


if __name__ == "__main__":
    main()
