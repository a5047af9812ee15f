"""Benchmark ``tablefmt report`` against running the commands whose figures it gathers, side by side.

1. **The 500-commit table** of bench/expire.py (500 commits of 1,000 rows over 4 partitions, partition 0 dropped
   after commit 250; nothing expired, so the history is 501 snapshots):
   * ``figures``: ``table_report`` (storage over time from every snapshot's delta manifests, every rule's dry run,
     ``inspect.partitions()``, keep-up);
   * ``figures + HTML``: the same and ``render_html`` (matplotlib SVG charts);
   * ``the commands``: what an operator runs for the same numbers: ``inspect.snapshots(sizes=True)`` (bytes each
     commit added and deleted), ``inspect.partitions()``, ``inspect.describe(sizes=True)`` and each configured
     rule's dry run.
2. **A 1,000-table warehouse** (bench/maintain.py's: 3 snapshots per table, 10 databases): ``warehouse_report``
   (2 tables at a time, as ``tablefmt report`` runs by default) with and without the HTML page, against one loop
   over the tables running ``describe(sizes=True)`` and each configured rule's dry run.

Every timing is the median of ``--repeat`` rounds (default 3), the contenders' order alternating per round.

Usage: ``python bench/report.py [--commits 500] [--tables 1000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from expire import build_ours
from maintain import build_warehouse

from tableformat.cleanup.kernel import run_operation
from tableformat.cleanup.maintainer import MaintainSettings, discover_all
from tableformat.cleanup.registry import OPERATIONS
from tableformat.context import TableContext
from tableformat.inspect import TableInspector
from tableformat.report import render_html, table_report, warehouse_report


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def rounds(contenders: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for r in range(repeat):
        for name in names if r % 2 == 0 else names[::-1]:
            times[name].append(timed(contenders[name]))
    return times


def lines(times: dict[str, list[float]]) -> list[str]:
    medians = {k: statistics.median(v) for k, v in times.items()}
    last = list(times)[-1]
    out = []
    for name, value in medians.items():
        per_round = ", ".join(f"{t:.2f}" for t in times[name])
        ratios = ", ".join(f"{t / p:.2f}x" for t, p in zip(times[name], times[last]))
        vs = "" if name == last else f"  = {value / medians[last]:.2f}x the commands (per round {ratios})"
        out.append(f"  {name:34s} {value:7.2f} s  rounds [{per_round}]{vs}")
    return out


def commands(ctx: TableContext, history: bool = True) -> None:
    """The separate commands an operator would run for the report's figures."""
    inspector = TableInspector(ctx)
    if history:
        inspector.snapshots(sizes=True)
        inspector.partitions()
    inspector.describe(sizes=True)
    for op in OPERATIONS:
        if op.wanted(ctx):
            run_operation(op, ctx, {}, dry_run=True)


def one_table(tmp: Path, commits: int, repeat: int) -> None:
    path = tmp / "t500"
    build_ours(path, commits, commits // 2, 1000)
    ctx = TableContext.load(str(path))
    report = table_report(ctx)
    print(f"table of {commits} commits: {len(report.storage.points)} snapshots, "
          f"{report.storage.manifests_read} manifests read once, {len(report.partitions)} partitions, "
          f"page {len(render_html(report)) / 1e6:.2f} MB")
    times = rounds(
        {
            "figures (table.report())": lambda: table_report(TableContext.load(str(path))),
            "figures + HTML": lambda: render_html(table_report(TableContext.load(str(path)))),
            "the commands": lambda: commands(TableContext.load(str(path))),
        },
        repeat,
    )
    print("\n".join(lines(times)))


def warehouse(tmp: Path, tables: int, repeat: int) -> None:
    root = tmp / "wh"
    build_warehouse(root, tables, 3, {"write-only": "true"})
    settings = MaintainSettings()

    def loop() -> None:
        for target in discover_all([str(root)]):
            commands(TableContext.load(target.location), history=False)

    report = warehouse_report([str(root)], settings)
    print(f"warehouse of {len(report.tables)} tables: page {len(render_html(report)) / 1e6:.2f} MB "
          "(charts for 37 tables: the top 25 by reclaimable bytes and 12 more by growth)")
    times = rounds(
        {
            "warehouse_report (2 at a time)": lambda: warehouse_report([str(root)], settings),
            "warehouse_report + HTML": lambda: render_html(warehouse_report([str(root)], settings)),
            "the commands": loop,
        },
        repeat,
    )
    print("\n".join(lines(times)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        print(f"python {sys.version.split()[0]}; 2 cores shared with other work")
        one_table(tmp, args.commits, args.repeat)
        warehouse(tmp, args.tables, args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
