"""Expire and remove-orphans on an object store that throttles: one request in ten answered ``503 SlowDown``, side by
side with the same store not throttling.

A local SeaweedFS sits behind two ``latency_proxy`` instances (this folder), both adding ``--latency-ms`` (default
20) to every request; the second also answers every ``--slowdown-every``-th request (default 10: 10%) with SlowDown
without passing it on. Each round builds two identical tables straight on SeaweedFS (``bench/s3.py``'s workload:
``--commits`` appends over 4 partitions, partition 0 dropped after ``--drop-at``; the same ``--strays`` unreferenced
files planted in both), then runs, through each proxy in turn (the order alternates by round):

* **remove-orphans**: ``remove_orphan_files`` judged two days later (every stray is old enough);
* **expire**: ``expire_snapshots(retain_min=retain_max=--keep, time_retained=0)``.

Both runs of an operation must give the same result (the same strays deleted; the same snapshots expired and the
same number of files deleted from each directory; nothing failed). Throughput throttled / unthrottled is the ratio
of the two times (the work is the same). The client is tablefmt's own S3FileIO with its default pacing (retries with
jittered backoff, per-prefix AIMD concurrency: tableformat/io/pacing.py).

Usage: ``python bench/throttle.py [--commits 100] [--drop-at 50] [--keep 10] [--strays 400] [--rounds 3]
[--latency-ms 20] [--slowdown-every 10] [--parallelism 8]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_proxy import LatencyProxy
from s3 import DAY_MS, PARTS, build
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.table import Table


def stray_names(count: int) -> list[str]:
    names = []
    for i in range(count):
        if i % 5 == 4:
            names.append(f"manifest/manifest-{uuid.uuid4()}-0")
        else:
            names.append(f"part={i % PARTS}/bucket-0/data-{uuid.uuid4()}-0.parquet")
    return names


def by_directory(paths: Any) -> Counter[str]:
    return Counter(path.rpartition("/")[0] for path in paths)


def timed(proxy: LatencyProxy, run: Any) -> tuple[float, Any, Counter[str]]:
    proxy.reset()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result, proxy.stats()[0]


def one_round(
    weed: SeaweedFS, plain: LatencyProxy, throttling: LatencyProxy, args: argparse.Namespace, number: int
) -> dict[str, float]:
    direct = weed.storage_options()
    urls = {name: f"s3://{DEFAULT_BUCKET}/throttle-{name}-{uuid.uuid4().hex[:10]}" for name in ("plain", "throttled")}
    start = time.perf_counter()
    for url in urls.values():
        build(url, direct, args.commits, args.drop_at, args.rows)
    strays = stray_names(args.strays)
    for url in urls.values():
        table = Table.open(url, storage_options=direct)
        fs = table.context.io.fsspec_filesystem()
        fs.pipe({table.context.layout.join(rel): b"stray" for rel in strays})
    print(f"round {number}: built two tables of {args.commits} commits in {time.perf_counter() - start:.1f} s")
    proxies = {"plain": plain, "throttled": throttling}
    order = ["plain", "throttled"] if number % 2 else ["throttled", "plain"]
    future = int(time.time() * 1000) + 2 * DAY_MS
    operations = {
        "remove-orphans": lambda t: t.maintenance.remove_orphan_files(now_ms=future, parallelism=args.parallelism),
        "expire": lambda t: t.maintenance.expire_snapshots(
            retain_min=args.keep,
            retain_max=args.keep,
            time_retained=0,
            limit=1_000_000,
            parallelism=args.parallelism,
        ),
    }
    figures: dict[str, float] = {}
    for name, operation in operations.items():
        runs: dict[str, tuple[float, Any, Counter[str]]] = {}
        for side in order:
            table = Table.open(urls[side], storage_options=dict(direct, endpoint_url=proxies[side].endpoint_url))
            runs[side] = timed(proxies[side], lambda op=operation, t=table: op(t))
        (fast, expected, plain_counts), (slow, result, counts) = runs["plain"], runs["throttled"]
        assert result.failures() == () and expected.failures() == (), (result.failures(), expected.failures())
        assert by_directory(result.deleted_paths) == by_directory(expected.deleted_paths), name
        if name == "remove-orphans":
            assert sorted(result.deleted_paths) == sorted(expected.deleted_paths) == sorted(strays)
        else:
            assert result.expired_snapshot_ids == expected.expired_snapshot_ids
        refused = counts.pop("SlowDown", 0)
        print(
            f"  {name:<15} unthrottled {fast:6.3f} s ({sum(plain_counts.values())} requests)  throttled {slow:6.3f} "
            f"s ({sum(counts.values())} requests, {refused} answered SlowDown)  same result: "
            f"{len(result.deleted_paths)} files  throughput throttled/unthrottled {fast / slow:.2f}"
        )
        figures[name] = fast / slow
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--drop-at", type=int, default=50)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--keep", type=int, default=10)
    parser.add_argument("--strays", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--slowdown-every", type=int, default=10)
    parser.add_argument("--parallelism", type=int, default=8)
    args = parser.parse_args()
    print(
        f"workload: {args.commits} commits x {args.rows} rows over {PARTS} partitions, partition 0 dropped after "
        f"commit {args.drop_at}; expire keeps {args.keep}; {args.strays} strays; {args.latency_ms:g} ms per request; "
        f"1 request in {args.slowdown_every} answered SlowDown; concurrency {args.parallelism}; {args.rounds} rounds"
    )
    with SeaweedFS() as weed:
        host, port = weed.endpoint_url.rsplit("//", 1)[1].split(":")
        latency = args.latency_ms / 1000
        with (
            LatencyProxy(host, int(port), latency) as plain,
            LatencyProxy(host, int(port), latency, slowdown_every=args.slowdown_every) as throttling,
        ):
            rounds = [one_round(weed, plain, throttling, args, number) for number in range(1, args.rounds + 1)]
    print("throughput throttled / unthrottled (same work, same result):")
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(f"  {key:<15} median {statistics.median(values):5.2f}  rounds {' '.join(f'{v:.2f}' for v in values)}")


if __name__ == "__main__":
    main()
