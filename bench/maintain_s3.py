"""The first ``tablefmt maintain`` pass over one many-commit table on an object store, side by side with the same
expiration and orphan cleanup through the API.

A local SeaweedFS behind ``latency_proxy`` (this folder: ``--latency-ms``, default 20, added to every request). Each
round builds two identical tables straight on SeaweedFS (``bench/s3.py``'s workload: ``--commits`` appends over 4
partitions, partition 0 dropped halfway), retaining 10 snapshots (``snapshot.num-retained.min/max=10``,
``snapshot.time-retained=1 ms``). Then, through the proxy:

* **maintain**: ``Maintainer([warehouse]).run_once()`` on the first table's warehouse (a first pass: no maintain
  state yet, so the keep-up count reads the whole history: every snapshot, its delta manifest list and manifests);
* **API**: ``expire_snapshots`` then ``remove_orphan_files`` on the second table (what the pass runs, without leases,
  state or keep-up).

Prints both times, their ratio, requests by type and the objects read more than once.

Usage: ``python bench/maintain_s3.py [--commits 200] [--rounds 3] [--latency-ms 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_proxy import LatencyProxy
from s3 import build
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings
from tableformat.table import Table

RETAIN = {"snapshot.num-retained.min": "10", "snapshot.num-retained.max": "10", "snapshot.time-retained": "1 ms"}


def one_round(weed: SeaweedFS, proxy: LatencyProxy, args: argparse.Namespace, number: int) -> float:
    direct = weed.storage_options()
    proxied = dict(direct, endpoint_url=proxy.endpoint_url)
    warehouses = [f"s3://{DEFAULT_BUCKET}/maintain-{uuid.uuid4().hex[:10]}" for _ in range(2)]
    for warehouse in warehouses:
        build(f"{warehouse}/db.db/t", direct, args.commits, args.commits // 2, 100)
        Table.open(f"{warehouse}/db.db/t", storage_options=direct).set_options(RETAIN)
    proxy.reset()
    start = time.perf_counter()
    reports = Maintainer([warehouses[0]], MaintainSettings(storage_options=proxied)).run_once()
    maintain = time.perf_counter() - start
    counts, twice, _, _ = proxy.stats()
    assert [r.ok for r in reports] == [True], [r.errors for r in reports]
    expired = dict(reports[0].operations)["expire"].to_json()["expired_snapshot_ids"]
    print(
        f"round {number}: maintain pass {maintain:.3f} s, expired {len(expired)} snapshots; requests "
        f"{dict(sorted(counts.items()))}; read twice {len(twice)}"
    )
    proxy.reset()
    start = time.perf_counter()
    table = Table.open(f"{warehouses[1]}/db.db/t", storage_options=proxied)
    result = table.maintenance.expire_snapshots()
    table.maintenance.remove_orphan_files()
    api = time.perf_counter() - start
    counts, twice, _, _ = proxy.stats()
    assert len(result.expired_snapshot_ids) == len(expired)
    print(
        f"  API expire + remove-orphans {api:.3f} s; requests {dict(sorted(counts.items()))}; read twice "
        f"{len(twice)}; maintain / API {maintain / api:.2f}"
    )
    return maintain / api


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    with SeaweedFS() as weed:
        host, port = weed.endpoint_url.rsplit("//", 1)[1].split(":")
        with LatencyProxy(host, int(port), args.latency_ms / 1000) as proxy:
            ratios = [one_round(weed, proxy, args, number) for number in range(1, args.rounds + 1)]
    print(f"maintain / API: median {statistics.median(ratios):.2f}, rounds {' '.join(f'{r:.2f}' for r in ratios)}")


if __name__ == "__main__":
    main()
