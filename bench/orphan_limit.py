"""Peak memory of a real orphan cleanup by the number of orphans, with and without ``orphan-files.max-files``.

For each stray count, a small committed table (20 appends over 4 partitions) gets that many old, empty,
unreferenced data files spread over its partition directories; a fresh process then runs ``remove_orphan_files``
(a real run: it deletes, writes its audit record and reports every deleted path) once with the limit above the
stray count and once with ``--limit``, each on freshly planted strays, and reports its time, its peak RSS (VmHWM)
over its RSS after opening the table, what it deleted and its backlog.

    python bench/orphan_limit.py [--strays 200000,400000] [--limit 50000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
from orphans import rss_kib

from tableformat import Table
from tableformat.maintenance import TableMaintenance

DAY_S = 86_400
PARTS = 4


def build(root: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
    table = Table.create(str(root), schema, ["part"], options={"write-only": "true"})
    for commit in range(20):
        ids = list(range(commit * 100, commit * 100 + 100))
        table.append(pa.table({"id": ids, "part": [i % PARTS for i in ids]}, schema=schema))


def plant(root: Path, count: int) -> None:
    old = time.time() - 10 * DAY_S
    for number in range(count):
        path = root / f"part={number % PARTS}" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet"
        path.touch()
        os.utime(path, (old, old))


def child(root: str, limit: int) -> None:
    table = Table.open(root)
    table.set_options({"orphan-files.max-files": str(limit)})
    table = Table.open(root)
    base = rss_kib()
    start = time.perf_counter()
    result = TableMaintenance(table.context).remove_orphan_files()
    seconds = time.perf_counter() - start
    peak = int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0])
    print(json.dumps({"seconds": seconds, "peak_mib": (peak - base) / 1024, "deleted": len(result.deleted_paths),
                      "backlog": result.backlog, "failed": len(result.failed)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strays", default="200000,400000")
    parser.add_argument("--limit", type=int, default=50_000)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    work = Path(tempfile.mkdtemp(prefix="orphan-limit-", dir=args.workdir))
    try:
        root = work / "t"
        build(root)
        for strays in (int(s) for s in args.strays.split(",")):
            for limit in (strays + 1, args.limit):
                plant(root, strays)
                out = subprocess.run([sys.executable, __file__, "--child", str(root), str(limit)], check=True,
                                     capture_output=True, text=True).stdout
                figures = json.loads(out.strip().splitlines()[-1])
                leftover = strays - figures["deleted"]
                print(f"strays {strays:>9,}  max-files {limit:>9,}: {figures['seconds']:6.1f} s, peak "
                      f"{figures['peak_mib']:6.1f} MiB, deleted {figures['deleted']:,}, "
                      f"backlog {figures['backlog']:,}, failed {figures['failed']}", flush=True)
                assert figures["backlog"] == leftover, "the backlog is not what was left"
                while leftover:  # clear the rest for the next run
                    out = subprocess.run([sys.executable, __file__, "--child", str(root), str(strays + 1)],
                                         check=True, capture_output=True, text=True).stdout
                    leftover -= json.loads(out.strip().splitlines()[-1])["deleted"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
