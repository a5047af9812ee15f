"""Build the demo table (``tablefmt demo``'s week of events) and write its retention report and a screenshot of it.

The demo's loads are stamped on the days they load (2026-11-01 .. 2026-11-07; the late-data overwrite and the
dropped day minutes after the last load) by giving the committer a clock set to each day, so the charts show a
week; the report is taken at 2026-11-08 18:00 UTC with partition expiration set to 4 days and a crashed load's
files left behind (orphans), so every rule has something to show. Nothing else differs from ``tablefmt demo``.

Usage: ``python examples/report_demo.py [--out docs] [--keep DIR]`` writes ``report-demo.png`` (and, with
``--html``, ``report-demo.html``) into ``--out``. Needs the extra ``report`` (matplotlib) and Chromium
(``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.browser import screenshot  # noqa: E402

import tableformat.commit.committer as committer  # noqa: E402
from tableformat.cli.demo_command import build_history, events_for  # noqa: E402
from tableformat.report import write_html  # noqa: E402
from tableformat.table import Table  # noqa: E402
from tableformat.units import human_bytes  # noqa: E402

UTC = dt.timezone.utc
REPORT_AT = dt.datetime(2026, 11, 8, 18, 0, tzinfo=UTC)


class DayClock:
    """Stands in for the committer's ``time`` module: ``time()`` is the demo's current load time, the rest is real."""

    def __init__(self) -> None:
        self.now = dt.datetime(2026, 11, 1, 6, 0, tzinfo=UTC)

    def time(self) -> float:
        self.now += dt.timedelta(minutes=7)  # commits of one load a few minutes apart
        return self.now.timestamp()

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def build(path: str) -> Table:
    """The demo's history with each commit on its own day."""
    clock = DayClock()
    real_append = Table.append

    def dated_append(self: Table, data: Any, *args: Any, **kwargs: Any) -> Any:
        day = data.column("day")[0].as_py()
        clock.now = dt.datetime(day.year, day.month, day.day, 6, tzinfo=UTC)
        return real_append(self, data, *args, **kwargs)

    with mock.patch.object(committer, "time", clock), mock.patch.object(Table, "append", dated_append):
        table = build_history(path)  # 7 daily loads; then the overwrite and drop follow the last load's clock
    return table


def prepare(path: str) -> Table:
    table = build(path)
    table.set_options({"partition.expiration-time": "4 d", "snapshot.num-retained.min": "2"})
    leftovers = table.write_files(events_for(dt.date(2026, 11, 8), 150, 1_000_000, random.Random(8)))
    crashed = (REPORT_AT - dt.timedelta(days=2)).timestamp()
    for leftover in leftovers:  # a load that crashed before committing, two days before the report
        os.utime(leftover.path, (crashed, crashed))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"))
    parser.add_argument("--html", action="store_true", help="also keep report-demo.html in --out")
    parser.add_argument("--keep", help="build the table in this (new) directory instead of a temporary one")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="tablefmt-report-demo-")
    table = prepare(os.path.join(work, "events"))
    report = table.report(now_ms=int(REPORT_AT.timestamp() * 1000), since="8 d")
    out = Path(args.out)
    html_path = out / "report-demo.html" if args.html else Path(work) / "report-demo.html"
    write_html(report, str(html_path))
    errors = screenshot(html_path, out / "report-demo.png", width=1200)
    live, reclaimable = human_bytes(report.live_bytes), human_bytes(report.reclaimable_bytes)
    print(f"report of {table.location}: {live} live, {reclaimable} reclaimable now")
    print(f"wrote {out / 'report-demo.png'}" + (f" and {html_path}" if args.html else ""))
    if errors:
        raise SystemExit(f"console errors: {errors}")


if __name__ == "__main__":
    main()
