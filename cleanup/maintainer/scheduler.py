"""Passes over many tables: ``run_once`` (cron) and ``watch`` (a daemon with a min-heap of due times; seed 000).

``run_once`` discovers the targets' tables and runs one pass over each, ``parallelism`` tables at a time; every
table is probed (three small reads) and only what is due runs. ``watch`` keeps a heap of (next due time, table):
it sleeps until the earliest, runs that table's pass, and pushes the table back at the time its report gives (soon
after a limit left backlog; at the next poll when an operation is due on any change; otherwise when its next
operation is due), so an idle table is not read again before then. Tables are rediscovered every
``discovery-interval``. Up to ``parallelism`` tables run at once, each on its own thread: a huge table holds one
slot, never the rest. ``stop`` (set by SIGTERM/SIGINT in the CLI) lets the running passes finish, then returns.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace

from tableformat.clock import Clock, system_clock
from tableformat.io.factory import open_location
from tableformat.threads import thread_pool

from .config import MaintainSettings
from .lease import new_owner
from .table_pass import TableReport, maintain_table
from .targets import Opener, SharedOpener, TableTarget, discover_all

log = logging.getLogger(__name__)

ReportSink = Callable[[TableReport], None]


@dataclass(slots=True)
class DueQueue:
    """A min-heap of (due time, table): the order in which the watcher visits tables."""

    _heap: list[tuple[int, int, str]] = field(default_factory=list)
    _tables: dict[str, TableTarget] = field(default_factory=dict)
    _due: dict[str, int] = field(default_factory=dict)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def push(self, table: TableTarget, due_ms: int) -> None:
        """Schedule ``table`` at ``due_ms`` (replacing its earlier entry)."""
        self._tables[table.location] = table
        self._due[table.location] = due_ms
        heapq.heappush(self._heap, (due_ms, next(self._seq), table.location))

    def discard(self, location: str) -> None:
        self._tables.pop(location, None)
        self._due.pop(location, None)

    def __contains__(self, location: str) -> bool:
        return location in self._due

    def _clean(self) -> None:
        while self._heap and self._due.get(self._heap[0][2]) != self._heap[0][0]:
            heapq.heappop(self._heap)

    def next_due(self) -> int | None:
        self._clean()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int) -> TableTarget | None:
        """The table due earliest if it is due at ``now_ms`` (it leaves the queue until pushed back)."""
        self._clean()
        if not self._heap or self._heap[0][0] > now_ms:
            return None
        _, _, location = heapq.heappop(self._heap)
        self._due.pop(location, None)
        return self._tables.pop(location)

    def locations(self) -> set[str]:
        return set(self._due)


def next_visit(report: TableReport, now_ms: int, settings: MaintainSettings) -> int:
    """When the watcher looks at the table again after ``report``."""
    candidates = [now_ms + settings.poll_interval_ms] if report.watch_changes or report.next_due_ms is None else []
    if report.next_due_ms is not None:
        candidates.append(max(report.next_due_ms, now_ms + 1))
    return min(candidates) if candidates else now_ms + settings.poll_interval_ms


class Maintainer:
    """Maintains the tables of ``targets`` (see the module doc)."""

    def __init__(
        self,
        targets: Sequence[str],
        settings: MaintainSettings,
        *,
        clock: Clock = system_clock,
        dry_run: bool = False,
        opener: Opener = open_location,
    ) -> None:
        self.targets = tuple(targets)
        self.settings = settings
        self.clock = clock
        self.dry_run = dry_run
        self.opener = SharedOpener() if opener is open_location else opener  # tests and benches wrap their own
        self.owner = new_owner()

    def discover(self) -> list[TableTarget]:
        """The tables of the targets now (ValidationError for a target that is neither table nor warehouse, or a
        config glob matching no table)."""
        settings = self.settings
        tables = discover_all(self.targets, settings.storage_options, settings.include, settings.exclude, self.opener)
        settings.check_globs(tables)
        return tables

    def maintain(self, table: TableTarget) -> TableReport:
        return maintain_table(
            table, self.settings, owner=self.owner, clock=self.clock, dry_run=self.dry_run, opener=self.opener
        )

    def run_once(
        self, tables: Iterable[TableTarget] | None = None, sink: ReportSink | None = None
    ) -> list[TableReport]:
        """One pass over every table (``tables`` default: discovered now); reports in table order."""
        chosen = list(self.discover() if tables is None else tables)
        reports: list[TableReport] = []
        with thread_pool(min(self.settings.parallelism, len(chosen) or 1), "tablefmt-maintain") as pool:
            for report in pool.map(self.maintain, chosen):
                reports.append(report)
                if sink is not None:
                    sink(report)
        return reports

    def watch(
        self,
        stop: threading.Event,
        sink: ReportSink | None = None,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        """Run until ``stop`` is set (see the module doc). ``sleep(seconds)`` waits (default: ``stop.wait``)."""
        sleep = sleep or stop.wait
        queue = DueQueue()
        next_discovery = 0
        running: dict[Future[TableReport], TableTarget] = {}
        with thread_pool(self.settings.parallelism, "tablefmt-maintain") as pool:
            while not stop.is_set():
                now = self.clock()
                if now >= next_discovery:
                    self._rediscover(queue, running.values(), now, first=next_discovery == 0)
                    next_discovery = now + self.settings.discovery_interval_ms
                while len(running) < self.settings.parallelism:
                    table = queue.pop_due(now)
                    if table is None:
                        break
                    running[pool.submit(self.maintain, table)] = table
                wake = min(t for t in (queue.next_due(), next_discovery) if t is not None)
                timeout = max(0.0, (wake - now) / 1000)
                if running:
                    done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
                    for future in done:
                        table = running.pop(future)
                        report = future.result()
                        if sink is not None:
                            sink(report)
                        queue.push(table, next_visit(report, self.clock(), self.settings))
                elif timeout > 0:
                    sleep(timeout)
            for future in list(running):  # let the running passes finish
                report = future.result()
                if sink is not None:
                    sink(report)

    def _rediscover(self, queue: DueQueue, running: Iterable[TableTarget], now_ms: int, *, first: bool) -> None:
        try:
            current = {t.location: t for t in self.discover()}
        except Exception as exc:
            if first:
                raise
            log.warning("listing the targets failed, keeping the tables known so far: %s", exc)
            return
        busy = {t.location for t in running}
        for location in queue.locations() - set(current):
            queue.discard(location)
        for location, table in current.items():
            if location not in queue and location not in busy:
                queue.push(replace(table, schema_id=None), now_ms)  # visited later: its pass lists schema/ itself
