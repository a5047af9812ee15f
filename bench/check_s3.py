"""``check`` against the orphan cleaner's dry run on an object store, side by side, with real request latency.

``check`` counts orphans with the cleaner's own planner and verifies every referenced file against the same
listing, so on an object store (where a listing carries every object's size) it should cost about what the dry run
costs plus its own CPU. This bench builds a table straight on a local SeaweedFS (tests/support/seaweedfs.py): the
same workload as bench/s3.py (``--commits`` appends of ``--rows`` rows over 4 partitions, ``--strays`` unreferenced
files planted), then runs through ``latency_proxy`` (``--latency-ms`` per request), alternating which goes first,
``--rounds`` times: the remove-orphans dry run and ``check``, each judged two days later (every stray is old
enough), each on a freshly opened table. Prints each run's time and requests by type, the medians and the median
of the per-round ratios check / dry run.

Usage: ``python bench/check_s3.py [--commits 200] [--rows 100] [--strays 200] [--rounds 5] [--latency-ms 20]
[--parallelism 8]``. Run by hand; not a test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_proxy import LatencyProxy
from s3 import DAY_MS, build, plant_strays
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.maintenance import TableMaintenance
from tableformat.table import Table


def timed(proxy: LatencyProxy, run: Callable[[], int | None]) -> tuple[float, int | None, dict[str, int]]:
    proxy.reset()
    start = time.perf_counter()
    orphans = run()
    seconds = time.perf_counter() - start
    counts = proxy.stats()[0]
    return seconds, orphans, dict(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--strays", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--parallelism", type=int, default=8)
    args = parser.parse_args()
    with SeaweedFS() as weed:
        direct = weed.storage_options()
        url = f"s3://{DEFAULT_BUCKET}/bench-check-{uuid.uuid4().hex[:12]}"
        build(url, direct, args.commits, args.commits + 1, args.rows)
        plant_strays(Table.open(url, storage_options=direct), args.strays)
        future = int(time.time() * 1000) + 2 * DAY_MS
        host, port = weed.endpoint_url.rsplit("//", 1)[1].split(":")
        with LatencyProxy(host, int(port), args.latency_ms / 1000) as proxy:
            proxied = dict(direct, endpoint_url=proxy.endpoint_url)

            def maintenance() -> TableMaintenance:
                return TableMaintenance(Table.open(url, storage_options=proxied).context)

            runs: dict[str, Callable[[], int | None]] = {
                "dry run": lambda: (
                    maintenance()
                    .remove_orphan_files(now_ms=future, parallelism=args.parallelism, dry_run=True)
                    .orphan_files
                ),
                "check": lambda: maintenance().check(now_ms=future, parallelism=args.parallelism).orphan_files,
            }
            times: dict[str, list[float]] = {name: [] for name in runs}
            for number in range(args.rounds):
                order = list(runs) if number % 2 == 0 else list(reversed(runs))
                for name in order:
                    seconds, orphans, counts = timed(proxy, runs[name])
                    times[name].append(seconds)
                    print(f"round {number + 1} {name:<8} {seconds:6.3f} s  {orphans} orphans  {counts}", flush=True)
    ratios = [c / d for c, d in zip(times["check"], times["dry run"])]
    summary: dict[str, Any] = {name: round(statistics.median(values), 3) for name, values in times.items()}
    print(
        f"{args.commits} commits, {args.strays} strays, {args.latency_ms:g} ms per request, concurrency "
        f"{args.parallelism}: median dry run {summary['dry run']} s, check {summary['check']} s; check / dry run "
        f"median of per-round ratios {statistics.median(ratios):.2f} (rounds {' '.join(f'{r:.2f}' for r in ratios)})"
    )


if __name__ == "__main__":
    main()
