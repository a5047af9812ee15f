"""Benchmark snapshot expiration against deltalake 1.6.6 and against plain deletion of the same files.

Default run (local disk): 500 commits of 1,000 rows over 4 partitions (4 Parquet files per commit), partition 0
dropped after commit 250, then expire all but the newest 10 snapshots:

* tablefmt: ``maintenance.expire_snapshots(retain_min=10, retain_max=10, time_retained=0)`` (plan + journal + deletes);
* plain: an ``os.remove`` loop over exactly the files tablefmt deleted, on an identical copy of the table;
* deltalake 1.6.6 on the equivalent Delta table (``partition_by=["part"]``, ``delete("part = 0")`` at commit
  250): ``vacuum(retention_hours=0, enforce_retention_duration=False, keep_versions=<last 10>)``,
  ``create_checkpoint()`` at the oldest kept version and ``cleanup_metadata()`` (notes/peers.md section 4).

``--memory N`` (repeatable) instead builds a table whose metadata references N data files of 8 bytes (written
with the metadata store directly), drops them all, and measures the peak RSS of a child process that expires it.

``--history N`` (repeatable) instead builds a table of N one-row appends and times expiring its oldest 10
snapshots, ``--repeat`` times in a row, with the metadata calls of one run counted (the cost must follow
what expires, not the length of the history): once with ``limit=10`` deciding the range (the result then reports
the backlog, which lists ``snapshot/`` and reads O(log N) snapshots), once with ``snapshot.num-retained.max``
deciding it.

``--audit N`` (repeatable) instead builds the ``--memory`` table of N data files and times expiring it with the audit
ledger on and off (``maintenance.audit.enabled``), alternating, on fresh synced copies: the ledger's cost is the
difference (its record of N + 44 rows is one Parquet file).

Each contender runs ``--repeat`` times (default 3) on fresh copies, synced to disk first (``--no-sync`` skips that:
then the copies' blocks may not be allocated yet and every unlink, the plain loop's included, is much cheaper);
the medians are reported.

Usage: ``python bench/expire.py [--commits 500] [--keep 10] [--repeat 3] [--skip-delta] [--memory 100000 ...]``.
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
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat.codec.binary_row import encode_row
from tableformat.layout import NameFactory
from tableformat.maintenance import TableMaintenance
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta
from tableformat.model.snapshot import CommitKind, Snapshot
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
PARTS = 4


def batch(commit: int, rows: int) -> pa.Table:
    start = commit * rows
    return pa.table(
        {"id": list(range(start, start + rows)), "part": [i % PARTS for i in range(rows)]}, schema=SCHEMA
    )


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def build_ours(path: Path, commits: int, drop_at: int, rows: int) -> None:
    table = Table.create(str(path), SCHEMA, ["part"], options={"write-only": "true"})
    for commit in range(commits):
        table.append(batch(commit, rows))
        if commit + 1 == drop_at:
            table.drop_partitions([{"part": 0}])


def build_delta(path: Path, commits: int, drop_at: int, rows: int) -> None:
    from deltalake import DeltaTable, write_deltalake

    config = {"delta.logRetentionDuration": "interval 0 seconds", "delta.enableExpiredLogCleanup": "false"}
    for commit in range(commits):
        write_deltalake(str(path), batch(commit, rows), partition_by=["part"], mode="append",
                        configuration=config if commit == 0 else None)
        if commit + 1 == drop_at:
            DeltaTable(str(path)).delete("part = 0")


def run_ours(path: Path, keep: int) -> tuple[float, Any]:
    table = Table.open(str(path))
    start = time.perf_counter()
    result = table.maintenance.expire_snapshots(retain_min=keep, retain_max=keep, time_retained=0, limit=1_000_000)
    return time.perf_counter() - start, result


def run_plain(path: Path, relative: list[str]) -> float:
    start = time.perf_counter()
    for rel in relative:
        os.remove(os.path.join(path, rel))
    return time.perf_counter() - start


def run_delta(path: Path, keep: int) -> tuple[float, int]:
    from deltalake import DeltaTable

    before = files_under(path)
    start = time.perf_counter()
    table = DeltaTable(str(path))
    latest = table.version()
    kept = list(range(latest - keep + 1, latest + 1))
    table.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False, keep_versions=kept)
    DeltaTable(str(path), version=kept[0]).create_checkpoint()
    DeltaTable(str(path)).cleanup_metadata()
    seconds = time.perf_counter() - start
    return seconds, len(before - files_under(path))


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main_bench(args: argparse.Namespace, work: Path) -> None:
    print(f"workload: {args.commits} commits x {args.rows} rows over {PARTS} partitions, partition 0 dropped after "
          f"commit {args.drop_at}, keep {args.keep}; {args.repeat} run(s) each on fresh copies"
          f"{'' if args.no_sync else ' (synced to disk)'}, medians")
    built = work / "built"
    start = time.perf_counter()
    build_ours(built, args.commits, args.drop_at, args.rows)
    print(f"built tablefmt table in {time.perf_counter() - start:.1f} s: {len(files_under(built))} files")
    delta_built = work / "delta-built"
    if not args.skip_delta:
        start = time.perf_counter()
        build_delta(delta_built, args.commits, args.drop_at, args.rows)
        print(f"built Delta table in {time.perf_counter() - start:.1f} s: {len(files_under(delta_built))} files")
    dry_runs: list[float] = []
    ours_runs: list[float] = []
    plain_runs: list[float] = []
    delta_runs: list[float] = []
    for run in range(args.repeat):
        # Every contender works on a fresh copy: files the committer wrote with fsync + link unlink slower on some
        # filesystems than copied ones, which would favour the plain loop.
        ours, copy, delta = work / f"ours-{run}", work / f"plain-{run}", work / f"delta-{run}"
        shutil.copytree(built, ours)
        shutil.copytree(built, copy)
        if not args.skip_delta:
            shutil.copytree(delta_built, delta)
        if not args.no_sync:
            os.sync()  # files of a real table are on disk: unlinking never-flushed copies is far cheaper
        start = time.perf_counter()
        dry = Table.open(str(ours)).maintenance.expire_snapshots(retain_min=args.keep, retain_max=args.keep,
                               time_retained=0, limit=1_000_000, dry_run=True)
        dry_runs.append(time.perf_counter() - start)
        seconds, result = run_ours(ours, args.keep)
        ours_runs.append(seconds)
        plain = run_plain(copy, list(result.deleted_paths))
        plain_runs.append(plain)
        assert files_under(copy) ^ files_under(ours) <= {"snapshot/EARLIEST"}, "plain deletion left a different table"
        assert sorted(dry.deleted_paths) == sorted(result.deleted_paths), "the dry run listed other files"
        line = (f"run {run + 1}: tablefmt {seconds:.3f} s (dry run {dry_runs[-1]:.3f} s), plain {plain:.3f} s "
                f"({seconds / plain:.2f}x)")
        if not args.skip_delta:
            delta_seconds, delta_deleted = run_delta(delta, args.keep)
            delta_runs.append(delta_seconds)
            line += f", deltalake {delta_seconds:.3f} s ({delta_deleted} files, {seconds / delta_seconds:.2f}x)"
        print(line)
        for path in (ours, copy, delta):
            shutil.rmtree(path, ignore_errors=True)
    print(f"tablefmt expire: expired {result.expired_snapshots} snapshots, deleted {result.deleted_data_files} data "
          f"files, {result.deleted_manifests} manifests, {result.deleted_manifest_lists} manifest lists, "
          f"{len(result.deleted_paths)} files, {result.deleted_bytes} bytes")
    ours_s, plain_s = _median(ours_runs), _median(plain_runs)
    print(f"median tablefmt expire: {ours_s:.3f} s (dry run, planning only: {_median(dry_runs):.3f} s)")
    print(f"median plain os.remove of the same {len(result.deleted_paths)} files: {plain_s:.3f} s")
    print(f"ratio tablefmt / plain: {ours_s / plain_s:.2f} (target <= 1.5)")
    if delta_runs:
        delta_s = _median(delta_runs)
        print(f"median deltalake vacuum + create_checkpoint + cleanup_metadata: {delta_s:.3f} s")
        print(f"ratio tablefmt / deltalake: {ours_s / delta_s:.2f} (target <= 0.5)")


# --- memory mode -----------------------------------------------------------------------------------------------
def build_synthetic(path: Path, n_files: int, commits: int = 20, per_manifest: int = 50_000) -> None:
    """N fake data files (8 bytes each) added over ``commits`` snapshots, then all dropped in one more."""
    table = Table.create(str(path), SCHEMA, ["part"], options={"write-only": "true"})
    store = table.context.store
    types = [f.type for f in table.context.schema.partition_fields]
    rows = [encode_row([p], types) for p in range(PARTS)]
    names = NameFactory()
    tag = uuid.uuid4().hex
    for p in range(PARTS):
        (path / f"part={p}" / "bucket-0").mkdir(parents=True, exist_ok=True)
    per_commit = n_files // commits

    def entries(commit: int, kind: FileKind) -> list[ManifestEntry]:
        result = []
        for k in range(per_commit):
            meta = DataFileMeta(file_name=f"data-{tag}-{commit}-{k}.parquet", file_size=8, row_count=1)
            result.append(ManifestEntry(kind=kind, partition=rows[k % PARTS], bucket=0, total_buckets=-1, file=meta))
        return result

    def manifests(items: list[ManifestEntry]) -> list[ManifestFileMeta]:
        return [store.write_manifest(items[i : i + per_manifest], names, 0, types)
                for i in range(0, len(items), per_manifest)]

    base: list[ManifestFileMeta] = []
    for commit in range(commits + 1):
        if commit < commits:
            added = entries(commit, FileKind.ADD)
            for entry in added:
                with open(path / f"part={rows.index(entry.partition)}" / "bucket-0" / entry.file.file_name, "wb") as f:
                    f.write(b"8 bytes!")
            delta = manifests(added)
        else:
            delta = []
            for dropped in range(commits):
                delta += manifests(entries(dropped, FileKind.DELETE))
        base_list = store.write_manifest_list(base, names)
        delta_list = store.write_manifest_list(delta, names)
        store.write_snapshot_if_absent(Snapshot(
            id=commit + 1, schema_id=0, base_manifest_list=base_list.name, delta_manifest_list=delta_list.name,
            base_manifest_list_size=base_list.size, delta_manifest_list_size=delta_list.size,
            commit_user="bench", commit_identifier=commit + 1,
            commit_kind=CommitKind.APPEND if commit < commits else CommitKind.OVERWRITE,
            time_millis=int(time.time() * 1000), total_record_count=0, delta_record_count=0,
        ))
        base = base + delta
    store.write_hint("LATEST", commits + 1)


def memory_child(path: str) -> None:
    table = Table.open(path)
    start = time.perf_counter()
    result = TableMaintenance(table.context).expire_snapshots(retain_min=1, time_retained=0, limit=1_000_000)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_kb / 1024,
                      "deleted_data_files": result.deleted_data_files, "deleted_paths": len(result.deleted_paths)}))


def memory_bench(sizes: list[int], work: Path) -> None:
    for n_files in sizes:
        path = work / f"mem-{n_files}"
        start = time.perf_counter()
        build_synthetic(path, n_files)
        built = time.perf_counter() - start
        out = subprocess.run([sys.executable, __file__, "--memory-child", str(path)], check=True,
                             capture_output=True, text=True).stdout
        figures = json.loads(out.strip().splitlines()[-1])
        print(f"memory: {n_files} data files (built in {built:.0f} s): expire {figures['seconds']:.1f} s, "
              f"peak RSS {figures['peak_rss_mb']:.0f} MB, deleted {figures['deleted_data_files']} data files "
              f"({figures['deleted_paths']} files)")
        shutil.rmtree(path)


# --- audit mode ------------------------------------------------------------------------------------------------
class _LedgerClock:
    """Time spent making and writing audit records (the row collection and the record's write), in this process."""

    def __init__(self) -> None:
        import tableformat.audit as audit
        import tableformat.cleanup.kernel.audit as kernel_audit

        self.seconds = 0.0
        for module, name in ((kernel_audit, "_rows"), (audit.RunRecord, "write")):
            original = getattr(module, name)

            def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - start

            setattr(module, name, timed)


def _expire_with_audit(path: Path, enabled: bool) -> tuple[float, int]:
    ctx = Table.open(str(path)).context.with_options({"maintenance.audit.enabled": "true" if enabled else "false"})
    start = time.perf_counter()
    result = TableMaintenance(ctx).expire_snapshots(retain_min=1, time_retained=0, limit=1_000_000)
    return time.perf_counter() - start, len(result.deleted_paths)


def audit_bench(sizes: list[int], repeat: int, work: Path, sync: bool) -> None:
    clock = _LedgerClock()
    for n_files in sizes:
        source = work / f"audit-{n_files}"
        build_synthetic(source, n_files)
        warm = work / f"audit-{n_files}-warm"  # the first record of a process imports pyarrow's Parquet writer
        build_synthetic(warm, 200)
        _expire_with_audit(warm, True)
        shutil.rmtree(warm)
        times: dict[bool, list[float]] = {True: [], False: []}
        ledger: list[float] = []
        for run in range(repeat):
            for enabled in (True, False) if run % 2 == 0 else (False, True):
                copy = work / f"audit-{n_files}-{run}-{enabled}"
                shutil.copytree(source, copy)
                if sync:
                    os.sync()
                before = clock.seconds
                seconds, deleted = _expire_with_audit(copy, enabled)
                times[enabled].append(seconds)
                if enabled:
                    ledger.append(clock.seconds - before)
                records = list((copy / ".tablefmt" / "audit").glob("*.parquet")) if enabled else []
                assert len(records) == (1 if enabled else 0), records
                shutil.rmtree(copy)
        on, off, own = _median(times[True]), _median(times[False]), _median(ledger)
        print(
            f"audit: expire {n_files} data files ({deleted} files deleted), medians of {repeat}: ledger on {on:.2f} s, "
            f"off {off:.2f} s ({100 * (on - off) / off:+.1f} %; fastest on {min(times[True]):.2f} s, off "
            f"{min(times[False]):.2f} s); the ledger's own work (rows + record) {own * 1000:.0f} ms = "
            f"{100 * own / off:.1f} % of the run"
        )
        listed = {enabled: ", ".join(f"{t:.2f}" for t in times[enabled]) for enabled in (True, False)}
        print(f"  runs on: {listed[True]}; off: {listed[False]}")
        shutil.rmtree(source)


# --- history mode ----------------------------------------------------------------------------------------------
class _Counting:
    """Counts a FileIO's metadata calls by kind (reads, listings, existence checks, stats)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def wrap(self, file_io: Any) -> Any:
        from tableformat.io.forwarding import ForwardingFileIO

        counts = self.calls

        class Counted(ForwardingFileIO):
            pass

        for name in ("read_bytes", "list_dir", "list_names", "list_names_with_prefix", "exists", "file_exists",
                     "stat_file"):
            def counted(self: Any, *args: Any, _name: str = name) -> Any:
                counts[_name] = counts.get(_name, 0) + 1
                return getattr(self.inner, _name)(*args)

            setattr(Counted, name, counted)
        return Counted(file_io)


def history_bench(sizes: list[int], repeat: int, work: Path) -> None:
    from tableformat.context import TableContext
    from tableformat.store import MetadataStore

    def counted_context(ctx: TableContext, file_io: Any) -> TableContext:
        return TableContext(location=ctx.location, io=file_io, layout=ctx.layout,
                            store=MetadataStore(file_io, ctx.layout), schema=ctx.schema)

    for size in sizes:
        path = work / f"history-{size}"
        table = Table.create(str(path), SCHEMA, ["part"], options={"write-only": "true"})
        start = time.perf_counter()
        for commit in range(size):
            table.append(batch(commit, 1))
        built = time.perf_counter() - start
        table.maintenance.expire_snapshots(retain_min=1, time_retained=0, limit=1)  # EARLIEST written, as usual
        for label, by_limit in (("limit=10", True), ("retain_max", False)):
            runs: list[float] = []
            plans: list[float] = []
            calls: dict[str, int] = {}
            for run in range(min(repeat, (size - 1) // 20 - 1)):  # both variants expire 10 a run from one table
                count = len(table.snapshots()) if not by_limit else 0
                settings: dict[str, Any] = (
                    {"limit": 10, "time_retained": 0} if by_limit
                    else {"limit": 1_000_000, "time_retained": "1d", "retain_max": count - 10}
                )
                begin = time.perf_counter()
                TableMaintenance(table.context).expire_snapshots(retain_min=1, dry_run=True, **settings)
                plans.append(time.perf_counter() - begin)
                counting = _Counting()
                ctx = counted_context(table.context, counting.wrap(table.context.io))
                begin = time.perf_counter()
                result = TableMaintenance(ctx).expire_snapshots(retain_min=1, **settings)
                runs.append(time.perf_counter() - begin)
                assert result.expired_snapshots == 10, result
                calls = counting.calls if run == 0 else calls
            print(f"history {size:>6} snapshots (built in {built:.0f} s), {label}: expire the oldest 10: median "
                  f"{_median(runs) * 1000:.1f} ms (min {min(runs) * 1000:.1f}), planning alone (dry run) median "
                  f"{_median(plans) * 1000:.1f} ms (min {min(plans) * 1000:.1f}); calls of one run: "
                  + ", ".join(f"{n} {name}" for name, n in sorted(calls.items())))
        shutil.rmtree(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--drop-at", type=int, default=250)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--skip-delta", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="Runs of each contender (medians are reported).")
    parser.add_argument("--no-sync", action="store_true",
                        help="Skip os.sync() after copying (the copies' blocks may still be unwritten: cheap unlinks).")
    parser.add_argument("--memory", type=int, action="append", default=[], metavar="N_FILES")
    parser.add_argument("--history", type=int, action="append", default=[], metavar="N_SNAPSHOTS")
    parser.add_argument("--audit", type=int, action="append", default=[], metavar="N_FILES",
                        help="Time expiring N data files with the audit ledger on and off.")
    parser.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default=None, help="Where to build tables (default: a temp dir, removed).")
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tablefmt-bench-"))
    try:
        if args.audit:
            audit_bench(args.audit, max(args.repeat, 5), work, not args.no_sync)
        elif args.history:
            history_bench(args.history, max(args.repeat, 5), work)
        elif args.memory:
            memory_bench(args.memory, work)
        else:
            main_bench(args, work)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
