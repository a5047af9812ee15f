"""Benchmark orphan removal: tablefmt vs deltalake 1.6.6 ``vacuum(full=True)``, and peak memory at up to 1M files.

Compare mode (default), one run, local disk:
  1. Build a 500-commit table (1,000 rows per commit over 4 partitions) with tablefmt and the same data as a Delta
     table (``partition_by=["part"]``).
  2. Plant the same strays in both: 1,000 old ones (1 KiB, mtime now - 10 days) spread over the partition
     directories and 100 fresh ones (mtime now, an in-flight writer).
  3. Time each system's dry run then real run with the same guard: 7 days (Delta's enforced default
     ``retention_hours=168``; tablefmt ``older_than=7 days``). Deletions are measured by diffing the filesystem.
     The strays are flushed to disk before timing (``os.sync``): real orphans are old files on disk, and unlinking
     a file that is only in the page cache costs a tenth of that.
  4. Repeat 2-3 ``--rounds`` times (default 5), alternating which system runs first; compare the medians.

Memory mode (``--memory 100000,300000,1000000``): for each size, a synthetic table whose one snapshot references
that many (empty) data files through real manifests, plus 1 % strays; a fresh process runs the dry run and reports
its peak RSS (ru_maxrss) over its RSS before the run.

    python bench/orphans.py [--commits 500] [--strays 1000] [--fresh 100] [--rounds 5] [--workdir DIR]
    python bench/orphans.py --memory 100000,300000,1000000
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
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat import Table
from tableformat.codec.binary_row import encode_row
from tableformat.layout import NameFactory
from tableformat.maintenance import TableMaintenance
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry
from tableformat.model.snapshot import CommitKind, Snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32()), pa.field("payload", pa.string())])
PARTITIONS = 4
DAY_S = 86_400
GUARD_DAYS = 7
STRAY_AGE_DAYS = 10


def batch(commit: int, rows: int) -> pa.Table:
    start = commit * rows
    ids = list(range(start, start + rows))
    return pa.table(
        {"id": ids, "part": [i % PARTITIONS for i in ids], "payload": [f"row-{i}" for i in ids]}, schema=SCHEMA
    )


def files_of(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def plant(directory: Path, name: str, age_days: float) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_bytes(os.urandom(1024))
    stamp = time.time() - age_days * DAY_S
    os.utime(path, (stamp, stamp))


def plant_strays(root: Path, old: int, fresh: int, *, delta: bool) -> None:
    """The same strays for both systems: Delta data sits in part=N/, tablefmt's in part=N/bucket-0/."""
    for index in range(old + fresh):
        part_dir = root / f"part={index % PARTITIONS}"
        directory = part_dir if delta else part_dir / "bucket-0"
        name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet" if delta else f"data-{uuid.uuid4()}-0.parquet"
        plant(directory, name, STRAY_AGE_DAYS if index < old else 0)


def build_tablefmt(path: Path, commits: int, rows: int) -> float:
    table = Table.create(str(path), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    seconds, _ = timed(lambda: [table.append(batch(c, rows)) for c in range(commits)])
    return seconds


def build_delta(path: Path, commits: int, rows: int) -> float:
    from deltalake import write_deltalake

    def run() -> None:
        for c in range(commits):
            write_deltalake(str(path), batch(c, rows), mode="append", partition_by=["part"])

    seconds, _ = timed(run)
    return seconds


def run_tablefmt(root: Path) -> dict[str, Any]:
    guard = timedelta(days=GUARD_DAYS)
    before = files_of(root)

    def clean(dry_run: bool) -> Any:  # opening the table is timed, as DeltaTable(...) is for deltalake
        return Table.open(str(root)).maintenance.remove_orphan_files(older_than=guard, dry_run=dry_run)

    dry_s, dry = timed(lambda: clean(True))
    real_s, real = timed(lambda: clean(False))
    gone = before - files_of(root)
    same = set(dry.deleted_paths) == set(real.deleted_paths) == gone
    return {"dry_s": dry_s, "real_s": real_s, "found": dry.orphan_files, "deleted": len(gone), "dry_equals_real": same}


def run_delta(root: Path) -> dict[str, Any]:
    from deltalake import DeltaTable

    hours = GUARD_DAYS * 24
    before = files_of(root)
    dry_s, dry = timed(lambda: DeltaTable(str(root)).vacuum(retention_hours=hours, dry_run=True, full=True))
    real_s, _ = timed(lambda: DeltaTable(str(root)).vacuum(retention_hours=hours, dry_run=False, full=True))
    return {"dry_s": dry_s, "real_s": real_s, "found": len(dry), "deleted": len(before - files_of(root))}


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Build both tables once, then ``rounds`` rounds of: plant the same strays in both, run both (alternating
    which goes first), measure. Times are per round; the ratios compare the medians."""
    import deltalake
    from deltalake import DeltaTable

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-orphans-"))
    ours, delta = work / "tablefmt", work / "delta"
    for path in (ours, delta):
        shutil.rmtree(path, ignore_errors=True)
    report: dict[str, Any] = {"commits": args.commits, "old_strays": args.strays, "fresh_strays": args.fresh}
    report["deltalake_version"] = deltalake.__version__
    report["build_tablefmt_s"] = build_tablefmt(ours, args.commits, args.rows)
    report["build_delta_s"] = build_delta(delta, args.commits, args.rows)
    rounds: list[dict[str, Any]] = []
    for number in range(args.rounds):
        plant_strays(ours, args.strays, args.fresh, delta=False)
        plant_strays(delta, args.strays, args.fresh, delta=True)
        os.sync()  # real orphans are old files on disk, not fresh ones in the page cache (unlinks differ a lot)
        if number == 0:
            report["files_tablefmt"] = len(files_of(ours))
            report["files_delta"] = len(files_of(delta))
        if number % 2 == 0:
            mine, theirs = run_tablefmt(ours), run_delta(delta)
        else:
            theirs, mine = run_delta(delta), run_tablefmt(ours)
        rounds.append({"tablefmt": mine, "delta": theirs})
        print(
            f"round {number + 1}: tablefmt dry {mine['dry_s']:.3f} s real {mine['real_s']:.3f} s "
            f"(found {mine['found']}, deleted {mine['deleted']}) | deltalake dry {theirs['dry_s']:.3f} s "
            f"real {theirs['real_s']:.3f} s (found {theirs['found']}, deleted {theirs['deleted']})",
            flush=True,
        )
    for system, label in (("tablefmt", "tablefmt"), ("delta", "delta")):
        for what in ("dry_s", "real_s"):
            report[f"{label}_{what}_median"] = median([r[system][what] for r in rounds])
            report[f"{label}_{what}_rounds"] = [round(r[system][what], 4) for r in rounds]
    report["tablefmt_found"] = sorted({r["tablefmt"]["found"] for r in rounds})
    report["tablefmt_deleted_measured"] = sorted({r["tablefmt"]["deleted"] for r in rounds})
    report["tablefmt_dry_equals_real"] = all(r["tablefmt"]["dry_equals_real"] for r in rounds)
    report["delta_found"] = sorted({r["delta"]["found"] for r in rounds})
    report["delta_deleted_measured"] = sorted({r["delta"]["deleted"] for r in rounds})
    report["ratio_real"] = report["tablefmt_real_s_median"] / report["delta_real_s_median"]
    report["ratio_dry"] = report["tablefmt_dry_s_median"] / report["delta_dry_s_median"]
    report["ratio_real_rounds"] = [round(r["tablefmt"]["real_s"] / r["delta"]["real_s"], 3) for r in rounds]
    report["tablefmt_rows_after"] = Table.open(str(ours)).to_arrow().num_rows
    report["delta_rows_after"] = DeltaTable(str(delta)).to_pyarrow_table().num_rows
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return report


# --- memory mode ------------------------------------------------------------------------------------------------------


def commit_references(path: Path, referenced: list[str], per_manifest: int) -> None:
    """Create the table at ``path`` with one snapshot referencing ``referenced`` (``part=<p>/bucket-0/<name>``,
    recorded as empty one-row files) through real manifests of ``per_manifest`` entries; no data file is made."""
    table = Table.create(str(path), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    ctx = table.context
    store, types = ctx.store, [f.type for f in ctx.schema.partition_fields]
    names = NameFactory()
    partitions = {f"part={p}": encode_row([p], types) for p in range(PARTITIONS)}
    metas = []
    for start in range(0, len(referenced), per_manifest):
        entries = []
        for rel in referenced[start : start + per_manifest]:
            part, _, name = rel.split("/")
            meta = DataFileMeta(file_name=name, file_size=0, row_count=1, schema_id=0)
            entries.append(
                ManifestEntry(kind=FileKind.ADD, partition=partitions[part], bucket=0, total_buckets=-1, file=meta)
            )
        metas.append(store.write_manifest(entries, names, 0, types))
    base = store.write_manifest_list(metas, names)
    delta = store.write_manifest_list([], names)
    snapshot = Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list=base.name,
        delta_manifest_list=delta.name,
        base_manifest_list_size=base.size,
        delta_manifest_list_size=delta.size,
        commit_user="bench",
        commit_identifier=1,
        commit_kind=CommitKind.APPEND,
        time_millis=int(time.time() * 1000),
    )
    store.write_snapshot_if_absent(snapshot)


def build_synthetic(path: Path, files: int, per_manifest: int = 10_000) -> None:
    """One snapshot referencing ``files`` empty data files through real manifests, plus 1 % unreferenced strays."""
    for p in range(PARTITIONS):
        (path / f"part={p}" / "bucket-0").mkdir(parents=True)
    referenced = []
    for index in range(files):
        rel = f"part={index % PARTITIONS}/bucket-0/data-{uuid.uuid4()}-0.parquet"
        os.close(os.open(path / rel, os.O_CREAT | os.O_WRONLY, 0o644))
        referenced.append(rel)
    commit_references(path, referenced, per_manifest)
    for index in range(files // 100):
        name = f"data-{uuid.uuid4()}-0.parquet"
        os.close(os.open(path / f"part={index % PARTITIONS}" / "bucket-0" / name, os.O_CREAT | os.O_WRONLY, 0o644))


def rss_kib() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def memory_child(path: str) -> None:
    table = Table.open(path)
    baseline = rss_kib()
    future = int(time.time() * 1000) + 2 * DAY_S * 1000  # every file counts as old
    seconds, result = timed(lambda: TableMaintenance(table.context).remove_orphan_files(dry_run=True, now_ms=future))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    doc = {"baseline_kib": baseline, "peak_kib": peak, "seconds": seconds, "orphans": result.orphan_files}
    print(json.dumps(doc))


def memory(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    for size in (int(s) for s in args.memory.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-orphans-{size}-", dir=args.workdir))
        try:
            build_s, _ = timed(lambda size=size, work=work: build_synthetic(work / "t", size))  # type: ignore[misc]
            child = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(work / "t")],
                check=True,
                capture_output=True,
                text=True,
            )
            doc = json.loads(child.stdout.strip().splitlines()[-1])
            doc.update(files=size, build_s=build_s)
            doc["kib_per_file"] = (doc["peak_kib"] - doc["baseline_kib"]) / (size * 1.01)
            results.append(doc)
            print(json.dumps(doc), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--rows", type=int, default=1000, help="Rows per commit.")
    parser.add_argument("--strays", type=int, default=1000, help="Old strays (10 days).")
    parser.add_argument("--fresh", type=int, default=100, help="Fresh strays (now).")
    parser.add_argument("--rounds", type=int, default=5, help="Rounds of plant + clean (medians are compared).")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the tables of compare mode.")
    parser.add_argument("--memory", default=None, metavar="N[,N...]", help="Memory mode with these file counts.")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    if args.memory:
        memory(args)
        return
    report = compare(args)
    width = max(len(k) for k in report)
    for key, value in report.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(f"{key:<{width}}  {shown}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
