"""The orphan census of a table with many first-level partitions on an object store: flat (runs of key ranges, one
recursive listing each) side by side with one recursive listing per directory below the root (before 2026-11-27).

A local SeaweedFS behind ``latency_proxy`` (this folder: ``--latency-ms``, default 20, per request). The table's
tree is planted straight on SeaweedFS: ``--partitions`` first-level partition directories with ``--files`` data
files each (in ``bucket-0/``), plus ``schema/``, ``snapshot/`` and ``manifest/``. Then ``walk_table`` (what orphan
cleanup and ``check`` list) runs through the proxy both ways, at window 8, the order alternating by round; both
must find the same files.

Usage: ``python bench/census_s3.py [--partitions 1000] [--files 3] [--rounds 3] [--latency-ms 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_proxy import LatencyProxy
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.cleanup.orphans.census import walk_table
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.io.s3 import S3FileIO
from tableformat.layout import TableLayout
from tableformat.parallel import executor


class PerDirectory(ForwardingFileIO):
    """One recursive listing per directory below the root: the census before the flat runs."""

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        return FileIO.list_subtree_range(self, path, first, last)


def census(io: Any, root: str) -> tuple[float, list[str]]:
    start = time.perf_counter()
    with executor(8, "bench-census") as pool:
        listings = list(walk_table(io, TableLayout(root), ("part",), pool, 8))
    seconds = time.perf_counter() - start
    return seconds, sorted(info.path for listing in listings for info in listing.files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    with SeaweedFS() as weed:
        host, port = weed.endpoint_url.rsplit("//", 1)[1].split(":")
        direct = weed.storage_options()
        root = f"{DEFAULT_BUCKET}/census-{uuid.uuid4().hex[:10]}"
        keys = ["schema/schema-0", "snapshot/LATEST", "snapshot/snapshot-1", "manifest/manifest-list-a-0"]
        keys += [f"part={p:05d}/bucket-0/data-{uuid.uuid4()}-0.parquet" for p in range(args.partitions)]
        keys += [k.replace("-0.parquet", f"-{n}.parquet") for k in keys[4:] for n in range(1, args.files)]
        S3FileIO.create(direct).fs.pipe({f"{root}/{key}": b"x" for key in keys})
        print(f"{len(keys)} objects, {args.partitions} partitions; {args.latency_ms:g} ms per request; window 8")
        ratios = []
        with LatencyProxy(host, int(port), args.latency_ms / 1000) as proxy:
            for number in range(1, args.rounds + 1):
                io = S3FileIO.create(dict(direct, endpoint_url=proxy.endpoint_url))
                runs: dict[str, tuple[float, list[str], int]] = {}
                for name in ("flat", "per directory") if number % 2 else ("per directory", "flat"):
                    proxy.reset()
                    seconds, found = census(io if name == "flat" else PerDirectory(io), root)
                    runs[name] = (seconds, found, proxy.stats()[0]["ListObjectsV2"])
                assert runs["flat"][1] == runs["per directory"][1] and len(runs["flat"][1]) == len(keys)
                flat, per = runs["flat"], runs["per directory"]
                print(
                    f"round {number}: flat {flat[0]:.3f} s, {flat[2]} LISTs; per directory {per[0]:.3f} s, "
                    f"{per[2]} LISTs; flat / per directory {flat[0] / per[0]:.2f}"
                )
                ratios.append(flat[0] / per[0])
    print(f"flat / per directory: median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
