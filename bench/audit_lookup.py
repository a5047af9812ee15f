"""Benchmark ``tablefmt audit --path``: how long one file's question takes on a ledger of N deleted paths.

Builds a table whose ledger holds ``--paths`` (default 1,000,000) deleted paths in ``--runs`` records (default 10:
expirations of 100,000 files each; ``--runs 1000`` is a year of small hourly runs), written through the store as
real runs write them, then times ``Table.audit_path`` (what ``tablefmt audit TABLE --path PATH`` calls) for
``--queries`` paths that are in the ledger and one that is not, on local disk. The target: under 1 s.

Usage: ``python bench/audit_lookup.py [--paths 1000000] [--runs 10] [--queries 20]``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

from tableformat.audit import RunRecord
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
DAY_MS = 86_400_000


def build(path: Path, n_paths: int, runs: int) -> list[str]:
    """The table and its ledger; returns every recorded path."""
    table = Table.create(str(path), SCHEMA, ["part"], options={"write-only": "true"})
    store = table.context.store
    per_run = n_paths // runs
    every: list[str] = []
    start = int(time.time() * 1000) - runs * DAY_MS
    for run in range(runs):
        record = RunRecord("expire", table.context.options, {"retain_min": 1}, started_ms=start + run * DAY_MS)
        tag = uuid.uuid4()
        reason = f"used only by expired snapshot(s) {run * 100 + 1}-{run * 100 + 100}: snapshot.time-retained=1 h"
        for k in range(per_run):
            path = f"part={k % 4}/bucket-0/data-{tag}-{k}.parquet"
            record.add(path, 1_000_000 + k, reason)
            every.append(path)
        assert record.write(store)
    return every


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tablefmt-bench-"))
    try:
        began = time.perf_counter()
        every = build(work / "t", args.paths, args.runs)
        built = time.perf_counter() - began
        ledger = sum(p.stat().st_size for p in (work / "t" / ".tablefmt" / "audit").glob("*"))
        table = Table.open(str(work / "t"))
        picks = random.Random(7).sample(every, args.queries)
        seconds = []
        for path in [*picks, "part=0/bucket-0/data-not-there.parquet"]:
            start = time.perf_counter()
            events = Table.open(str(work / "t")).audit_path(path)  # a fresh open, as the CLI does
            seconds.append(time.perf_counter() - start)
            assert len(events) == (0 if "not-there" in path else 1), (path, events)
        runs = table.audit()
        assert sum(r.run.counts.deleted_files for r in runs) == len(every)
        print(
            f"audit --path: {len(every):,} deleted paths in {args.runs} records ({ledger / 1e6:.1f} MB, built in "
            f"{built:.0f} s): median {statistics.median(seconds[:-1]) * 1000:.0f} ms, max "
            f"{max(seconds[:-1]) * 1000:.0f} ms over {args.queries} recorded paths; a path never recorded "
            f"{seconds[-1] * 1000:.0f} ms"
        )
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
