"""Benchmark orphan cleanup's dry run and ``check`` with a listing and with a generated file list, at N files.

For each size, a synthetic table (bench/orphans.py ``build_synthetic``: one snapshot referencing N empty data files
through real manifests, plus 1 % strays) and a generated plain Parquet file list of every file under it (the stand-in
for an S3 Inventory). Each of four runs goes in a fresh process that reports its time and its peak RSS (VmHWM)
over its RSS after opening the table: the remove-orphans dry run and ``check``, each listing the table and each
from the file list.

    python bench/file_list.py --sizes 100000,1000000 [--workdir DIR]

With ``--generated 10000000`` (a size list too), the table's data files are not made: a table whose one snapshot
references 99 % of that many data file names through real manifests, 1 % of them as strays on disk (the
orphans), and a generated Parquet file list of all those paths (old mtimes) plus the table's real metadata files.
The remove-orphans dry run and ``check`` run on it from the list (a referenced file is listed, not on disk: its
recorded size and its listed size are both 0).

    python bench/file_list.py --sizes 0 --generated 1000000,10000000

``--referenced R --on-disk M`` (with ``--generated``): the table references R of the names instead (spread evenly),
and M of the others exist on disk (the rest are listed but gone, as in an inventory days old); ``--runs`` picks the
file-list runs and ``--spark`` adds the Spark cleaner's. Each run prints its orphans, backlog and a digest of the
paths it would delete, so the local and Spark runs can be compared:

    python bench/file_list.py --sizes 0 --generated 10000000 --referenced 1000000 --on-disk 300000 \
        --runs "dry-run --file-list" --spark
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from orphans import PARTITIONS, build_synthetic, commit_references, rss_kib

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


def generate(work: Path, size: int, referenced: int | None = None, on_disk: int | None = None) -> int:
    """The table of ``--generated`` and its file list (``files.parquet``); returns the list's row count. By default
    every 100th name is an unreferenced stray on disk and the rest are referenced; with ``referenced`` the table
    references that many names (spread evenly) and ``on_disk`` of the others (default: all) exist, empty."""
    root = work / "t"
    rels = [f"part={i % PARTITIONS}/bucket-0/data-{i:024x}-0.parquet" for i in range(size)]
    if referenced:
        chosen = {int(k * size / referenced) for k in range(referenced)}
    else:
        chosen = {i for i in range(size) if i % 100}
    strays = [rel for i, rel in enumerate(rels) if i not in chosen][:on_disk]
    commit_references(root, [rels[i] for i in sorted(chosen)], 20_000)
    del chosen
    for rel in strays:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(root / rel, os.O_CREAT | os.O_WRONLY, 0o644))
    old_ms = int(time.time() * 1000) - 10 * DAY_MS
    for rel in strays:
        os.utime(root / rel, (old_ms / 1000, old_ms / 1000))
    meta_paths: list[str] = []
    meta_sizes: list[int] = []
    for folder, _, names in os.walk(root):
        for name in names:
            full = os.path.join(folder, name)
            if "/bucket-" not in full:
                meta_paths.append(full)
                meta_sizes.append(os.stat(full).st_size)
    prefix = f"{root}/"
    with pq.ParquetWriter(work / "files.parquet", FILE_LIST_SCHEMA) as writer:
        writer.write_table(
            pa.table({"path": meta_paths, "size": meta_sizes, "last_modified": [old_ms] * len(meta_paths)})
        )
        for start in range(0, size, 1_000_000):
            chunk = pa.array(rels[start : start + 1_000_000])
            paths = pc.binary_join_element_wise(pa.scalar(prefix), chunk, "")
            count = len(chunk)
            columns = {"path": paths, "size": pa.array([0] * count), "last_modified": pa.array([old_ms] * count)}
            writer.write_table(pa.table(columns, schema=FILE_LIST_SCHEMA))
    return len(meta_paths) + size


FILE_LIST_SCHEMA = pa.schema([("path", pa.string()), ("size", pa.int64()), ("last_modified", pa.int64())])


def measure_generated(
    size: int,
    workdir: str | None,
    spark: bool = False,
    referenced: int | None = None,
    on_disk: int | None = None,
    runs: tuple[str, ...] = ("dry-run --file-list", "check --file-list"),
) -> list[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix=f"bench-file-list-gen-{size}-", dir=workdir))
    try:
        started = time.perf_counter()
        listed = generate(work, size, referenced, on_disk)
        built = time.perf_counter() - started
        docs: list[dict[str, Any]] = []
        for run in (*runs, *(("spark dry-run --file-list",) if spark else ())):
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(work / "t"), run, str(work / "files.parquet")],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                sys.exit(f"{run} failed:\n{done.stderr[-3000:]}")
            doc: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
            doc.update(files=size, listed=listed, generated=True, setup_seconds=round(built, 1))
            print(json.dumps(doc), flush=True)
            docs.append(doc)
        return docs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def peak_rss_kib() -> int:
    """The process's peak RSS since it started (VmHWM). Not ru_maxrss: on Linux that keeps the high-water mark of
    the process the child was spawned from (vfork), here the parent that built a table of millions of files."""
    return proc_peak_kib("self")


def proc_peak_kib(pid: int | str) -> int:
    """Peak RSS (VmHWM) of process ``pid`` ("self": this one)."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def spark_child(path: str, file_list: str) -> None:
    """The distributed cleaner's dry run from the list on ``local[2]``: its peak RSS above the RSS once Spark is up,
    and the peaks of the whole Python driver process and of Spark's JVM."""
    from pyspark.sql import SparkSession

    from tableformat.spark import remove_orphan_files

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors' Python must have tablefmt too
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    baseline = rss_kib()
    future = int(time.time() * 1000) + 2 * DAY_MS
    start = time.perf_counter()
    result = remove_orphan_files(spark, path, dry_run=True, now_ms=future, file_list=file_list)
    seconds = time.perf_counter() - start
    python_peak, jvm_peak = proc_peak_kib("self"), proc_peak_kib(jvm)
    spark.stop()
    doc = {"run": "spark dry-run --file-list", "seconds": seconds, "peak_mib": (python_peak - baseline) / 1024}
    doc.update(python_peak_mib=python_peak / 1024, jvm_peak_mib=jvm_peak / 1024, **outcome(result))
    print(json.dumps(doc))


def outcome(result: Any) -> dict[str, Any]:
    """What a run found, to compare runs: orphans, backlog and a digest of the paths it would delete."""
    digest = hashlib.sha256("\n".join(sorted(result.deleted_paths)).encode()).hexdigest()[:16]
    return {"orphans": result.orphan_files, "backlog": result.backlog, "paths_digest": digest}


def child(path: str, run: str, file_list: str) -> None:
    if run.startswith("spark"):
        spark_child(path, file_list)
        return
    table = Table.open(path)
    budget = os.environ.get("BENCH_CANDIDATES_IN_MEMORY")  # orphan-files.candidates-in-memory, when given
    context = table.context.with_options({"orphan-files.candidates-in-memory": budget} if budget else {})
    baseline = rss_kib()
    future = int(time.time() * 1000) + 2 * DAY_MS  # every file counts as old (the list's creation caps it)
    source = file_list if "--file-list" in run else None
    maintenance = TableMaintenance(context)
    start = time.perf_counter()
    found: dict[str, Any]
    if run.startswith("check"):
        found = {"orphans": maintenance.check(now_ms=future, file_list=source).orphan_files}
    else:
        found = outcome(maintenance.remove_orphan_files(dry_run=True, now_ms=future, file_list=source))
    seconds = time.perf_counter() - start
    peak = peak_rss_kib()
    print(json.dumps({"run": run, "seconds": seconds, "peak_mib": (peak - baseline) / 1024, **found}))


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
    parser.add_argument("--generated", default="", help="Sizes of generated file lists (see above).")
    parser.add_argument("--spark", action="store_true", help="With --generated: the Spark cleaner's dry run too.")
    parser.add_argument("--referenced", type=int, default=None, help="With --generated: names the table references.")
    parser.add_argument("--on-disk", type=int, default=None, help="With --generated: unreferenced names on disk.")
    parser.add_argument("--candidates-in-memory", default="", help="orphan-files.candidates-in-memory for the runs.")
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.candidates_in_memory:
        os.environ["BENCH_CANDIDATES_IN_MEMORY"] = args.candidates_in_memory
    for size in (int(s) for s in args.sizes.split(",") if int(s)):
        measure(size, args.workdir, tuple(args.runs.split(",")))
    generated_runs = tuple(r for r in args.runs.split(",") if "--file-list" in r)
    for size in (int(s) for s in args.generated.split(",") if s):
        measure_generated(size, args.workdir, args.spark, args.referenced, args.on_disk, generated_runs)


if __name__ == "__main__":
    main()
