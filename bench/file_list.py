"""Benchmark orphan cleanup's dry run and ``check`` with a listing and with a generated file list, at N files.

For each size, a synthetic table (bench/orphans.py ``build_synthetic``: one snapshot referencing N empty data files
through real manifests, plus 1 % strays) and a generated plain Parquet file list of every file under it (the stand-in
for an S3 Inventory). Each of four runs goes in a fresh process that reports its time and its peak RSS (ru_maxrss)
over its RSS after opening the table: the remove-orphans dry run and ``check``, each listing the table and each
from the file list.

    python bench/file_list.py --sizes 100000,1000000 [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from orphans import build_synthetic, rss_kib

from tableformat import Table
from tableformat.maintenance import TableMaintenance

DAY_MS = 86_400_000
RUNS = ("dry-run", "dry-run --file-list", "check", "check --file-list")


def write_file_list(root: Path, target: Path) -> int:
    """Every file under ``root`` as ``path, size, last_modified`` (ms) in one Parquet file; returns the row count."""
    paths: list[str] = []
    sizes: list[int] = []
    times: list[int] = []
    for folder, _, names in os.walk(root):
        for name in names:
            full = os.path.join(folder, name)
            stat = os.stat(full)
            paths.append(full)
            sizes.append(stat.st_size)
            times.append(stat.st_mtime_ns // 1_000_000)
    table = pa.table({"path": paths, "size": pa.array(sizes, pa.int64()), "last_modified": pa.array(times, pa.int64())})
    pq.write_table(table, target)
    return len(paths)


def child(path: str, run: str, file_list: str) -> None:
    table = Table.open(path)
    baseline = rss_kib()
    future = int(time.time() * 1000) + 2 * DAY_MS  # every file counts as old (the list's creation caps it)
    source = file_list if "--file-list" in run else None
    maintenance = TableMaintenance(table.context)
    start = time.perf_counter()
    if run.startswith("check"):
        orphans = maintenance.check(now_ms=future, file_list=source).orphan_files
    else:
        orphans = maintenance.remove_orphan_files(dry_run=True, now_ms=future, file_list=source).orphan_files
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"run": run, "seconds": seconds, "peak_mib": (peak - baseline) / 1024, "orphans": orphans}))


def measure(size: int, workdir: str | None, runs: tuple[str, ...] = RUNS) -> list[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix=f"bench-file-list-{size}-", dir=workdir))
    try:
        build_synthetic(work / "t", size)
        listed = write_file_list(work / "t", work / "files.parquet")
        # the list is made now; files planted before it are judged against its creation time
        results = []
        for run in runs:
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(work / "t"), run, str(work / "files.parquet")],
                check=True,
                capture_output=True,
                text=True,
            )
            doc = json.loads(done.stdout.strip().splitlines()[-1])
            doc.update(files=size, listed=listed)
            results.append(doc)
            print(json.dumps(doc), flush=True)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--runs", default=",".join(RUNS), help=f"Some of: {', '.join(RUNS)} (comma-separated).")
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    for size in (int(s) for s in args.sizes.split(",")):
        measure(size, args.workdir, tuple(args.runs.split(",")))


if __name__ == "__main__":
    main()
