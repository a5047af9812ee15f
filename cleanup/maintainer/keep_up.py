"""Does retention keep up with ingest? (seed 000's open question, answered with numbers.)

Ingest comes from the snapshot history: every snapshot committed since the last count (compactions excluded) is read
once, with its delta manifests: rows and bytes added, rows removed (partition drops, overwrites, record expiry).
Reclaimed bytes are what the maintainer deleted. Both are kept per hour in the table's maintain state over the
keep-up window. Backlog is what the operations report left due by their limits; a backlog that grew over the last
three passes, or commits arriving faster than a run's limit can expire them, is "falling behind", with the option
to raise named.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, replace
from typing import Any

from tableformat.context import TableContext
from tableformat.errors import MissingMetadataError, TableFormatError
from tableformat.layout import SNAPSHOT_PREFIX, TableLayout, parse_id
from tableformat.model.maintain import HourStats, MaintainState
from tableformat.model.manifest import FileKind
from tableformat.model.snapshot import CommitKind, Snapshot
from tableformat.options import REGISTRY
from tableformat.parallel import executor
from tableformat.store import MetadataStore

from ..kernel import Operation

HOUR_MS = 3_600_000
MAX_SNAPSHOTS_COUNTED = 1000
"""Snapshots read per pass for the ingest count (newest first); older ones in the window are left uncounted."""
TREND_PASSES = 3


def _hour(ms: int) -> int:
    return ms - ms % HOUR_MS


def _snapshot_stats(store: MetadataStore, snapshot: Snapshot) -> HourStats:
    """An append's rows are its delta record count and its bytes the sizes of its ADD entries (projected reads);
    other commits (overwrites, drops) are read in full for the rows they remove."""
    rows = size = dropped = 0
    metas = store.read_manifest_list_fast(snapshot.delta_manifest_list)
    if snapshot.commit_kind == CommitKind.APPEND and snapshot.delta_record_count is not None:
        rows = max(0, snapshot.delta_record_count)
        size = sum(r.file_size for m in metas for r in store.read_manifest_refs(m.file_name) if r.kind == FileKind.ADD)
    else:
        for meta in metas:
            for entry in store.read_manifest(meta.file_name):
                if entry.kind == FileKind.ADD:
                    rows += entry.file.row_count
                    size += entry.file.file_size
                else:
                    dropped += entry.file.row_count
    return HourStats(
        hour_ms=_hour(snapshot.time_millis), commits=1, ingest_rows=rows, ingest_bytes=size, dropped_rows=dropped
    )


def _add(a: HourStats, b: HourStats) -> HourStats:
    return replace(
        a,
        commits=a.commits + b.commits,
        ingest_rows=a.ingest_rows + b.ingest_rows,
        ingest_bytes=a.ingest_bytes + b.ingest_bytes,
        dropped_rows=a.dropped_rows + b.dropped_rows,
        reclaimed_bytes=a.reclaimed_bytes + b.reclaimed_bytes,
    )


def merge_hours(
    hours: Iterable[HourStats], more: Iterable[HourStats], now_ms: int, window_ms: int
) -> tuple[HourStats, ...]:
    """Hour buckets summed by hour, those older than the window dropped, oldest first."""
    by_hour: dict[int, HourStats] = {}
    for stats in (*hours, *more):
        current = by_hour.get(stats.hour_ms)
        by_hour[stats.hour_ms] = stats if current is None else _add(current, stats)
    start = _hour(now_ms - window_ms)
    return tuple(by_hour[h] for h in sorted(by_hour) if h >= start)


def count_ingest(
    store: MetadataStore,
    counted_id: int,
    latest_id: int | None,
    now_ms: int,
    window_ms: int,
    workers: int = 1,
    progress: CountProgress | None = None,
) -> tuple[list[HourStats], int]:
    """Stats of the snapshots after ``counted_id`` up to ``latest_id`` inside the window (newest first, at most
    MAX_SNAPSHOTS_COUNTED), and the new counted id. Snapshots already expired, or expired while they are read, are
    skipped.

    Every object is read once, ``workers`` at a time: first the snapshot files, newest first in chunks (a chunk that
    meets the end of the window or an expired snapshot is the last), then each counted snapshot's delta manifest
    list and manifests, oldest snapshot first (the ones an expiration running meanwhile may remove; ``progress``
    tells it how far the count is). The results are taken newest first, as read one by one."""
    progress = progress or CountProgress()
    if latest_id is None or latest_id <= counted_id:
        progress.finish()
        return [], counted_id
    ids = range(latest_id, max(counted_id, latest_id - MAX_SNAPSHOTS_COUNTED), -1)
    with executor(workers, "tablefmt-keep-up") as pool:
        try:
            found_snapshots = _snapshots_to_count(
                store, pool, ids, now_ms - window_ms, max(2 * workers, SNAPSHOT_CHUNK)
            )
            oldest_first = [(s.id, pool.submit(_snapshot_stats, store, s)) for s in reversed(found_snapshots)]
            counting = oldest_first[::-1]
            progress.started(counting)
        except BaseException:
            progress.finish()
            raise
        found: list[HourStats] = []
        for snapshot_id, stats in counting:
            try:
                found.append(stats.result())
            except MissingMetadataError:
                if store.snapshot_exists(snapshot_id):
                    raise
                break  # expired while its manifests were read: as if expired before (the older ones are gone too)
        for _, stats in counting:  # after a break: the older snapshots' reads not started yet are not needed
            stats.cancel()
    return found, latest_id


class CountProgress:
    """How far a keep-up count is, for deletes that must wait until it has read what they remove: ``wait_through(n)``
    returns once the snapshot files are read and the lists and manifests of every counted snapshot up to id ``n``
    (``None``: of every one); ``finish()`` ends every wait (the count is over, or failed)."""

    def __init__(self) -> None:
        self._snapshots_read = threading.Event()
        self._stats: list[tuple[int, Future[HourStats]]] = []

    def started(self, counting: list[tuple[int, Future[HourStats]]]) -> None:
        """The snapshot files are read; ``counting`` holds the stats being read of each snapshot counted."""
        self._stats = counting
        self._snapshots_read.set()

    def finish(self) -> None:
        self._snapshots_read.set()

    def wait_snapshots_read(self) -> None:
        self._snapshots_read.wait()

    def wait_through(self, snapshot_id: int | None) -> None:
        self._snapshots_read.wait()
        wait([f for i, f in self._stats if snapshot_id is None or i <= snapshot_id])


class DeleteGate:
    """Holds a maintainer pass's deletes until its keep-up count, running alongside, has read what they could
    remove: a snapshot file once the count has read the snapshot files; a manifest list, manifest or index manifest
    once it has read the lists and manifests of every snapshot up to the newest one the pass deleted (expiration
    deletes the snapshot files first, and removes only lists and manifests no kept snapshot names), or of every
    snapshot when the pass deleted none. Data files and every other file never wait."""

    def __init__(self, progress: CountProgress, layout: TableLayout) -> None:
        self.progress = progress
        self.layout = layout
        self._deleted_through: int | None = None
        self._lock = threading.Lock()

    def __call__(self, paths: Sequence[str]) -> None:
        snapshot_dir = self.layout.snapshot_dir
        ids = [parse_id(name, SNAPSHOT_PREFIX) for folder, _, name in map(_split, paths) if folder == snapshot_dir]
        deleted = [i for i in ids if i is not None]
        if deleted:
            self.progress.wait_snapshots_read()
            with self._lock:
                self._deleted_through = max([*deleted, self._deleted_through or 0])
        if any(self.layout.is_write_once(path) for path in paths):
            with self._lock:
                through = self._deleted_through
            self.progress.wait_through(through)


def _split(path: str) -> tuple[str, str, str]:
    return path.rpartition("/")


KEEP_UP_READERS = 64
"""Most objects the keep-up count reads at once on an object store."""


def keep_up_workers(threads: int, latency_bound: bool) -> int:
    """Readers for the keep-up count: on an object store eight times the table's threads (at most
    :data:`KEEP_UP_READERS`): it only GETs small objects, each waiting on the store's latency, and a first pass reads
    every snapshot in the window with its delta list and manifests; elsewhere the table's threads."""
    return min(KEEP_UP_READERS, 8 * threads) if latency_bound else threads


SNAPSHOT_CHUNK = 16
"""Snapshot files the keep-up count reads at once (at least; twice the workers when there are more)."""


def _snapshots_to_count(store: MetadataStore, pool: Executor, ids: range, start_ms: int, chunk: int) -> list[Snapshot]:
    """The snapshots to count, newest first: up to the first one missing or older than ``start_ms``; compactions
    are passed over."""
    counting: list[Snapshot] = []
    for first in range(0, len(ids), chunk):
        chunk_ids = ids[first : first + chunk]
        for snapshot in pool.map(store.try_read_snapshot, chunk_ids):
            if snapshot is None or snapshot.time_millis < start_ms:
                return counting
            if snapshot.commit_kind != CommitKind.COMPACT:
                counting.append(snapshot)
    return counting


@dataclass(frozen=True, slots=True, kw_only=True)
class KeepUp:
    """One table's keep-up figures (rates per hour over the window actually covered)."""

    window_hours: float
    commits_per_hour: float
    ingest_rows_per_hour: float
    ingest_bytes_per_hour: float
    dropped_rows_per_hour: float
    reclaimed_bytes_per_hour: float
    backlog: Mapping[str, int]
    backlog_trend: tuple[int, ...]
    falling_behind: bool
    advice: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "covered_ms": round(self.window_hours * 3_600_000),
            "commits_per_hour": round(self.commits_per_hour, 3),
            "ingest_records_per_hour": round(self.ingest_rows_per_hour, 3),
            "ingest_bytes_per_hour": round(self.ingest_bytes_per_hour, 3),
            "dropped_records_per_hour": round(self.dropped_rows_per_hour, 3),
            "reclaimed_bytes_per_hour": round(self.reclaimed_bytes_per_hour, 3),
            "backlog": dict(self.backlog),
            "backlog_trend": list(self.backlog_trend),
            "falling_behind": self.falling_behind,
            "advice": list(self.advice),
        }


def assess(
    state: MaintainState,
    now_ms: int,
    window_ms: int,
    limits: Mapping[str, tuple[str, int]],
    retry_ms: int,
) -> KeepUp:
    """The keep-up figures of ``state``. ``limits``: operation -> (limit option, its value) for the operations
    that have one; ``retry_ms``: how soon a table with backlog comes back (bounds runs per hour)."""
    hours = [h for h in state.hours if h.hour_ms >= _hour(now_ms - window_ms)]
    covered = max(1.0, (now_ms - hours[0].hour_ms) / HOUR_MS) if hours else 1.0
    total = HourStats(hour_ms=0)
    for h in hours:
        total = _add(total, h)
    backlog = {name: op.backlog for name, op in state.operations.items() if op.backlog}
    trend = state.backlog_history[-TREND_PASSES:]
    advice = []
    growing = len(trend) == TREND_PASSES and all(a < b for a, b in itertools.pairwise(trend)) and trend[0] > 0
    if growing:
        advice.append(f"backlog grew over the last {TREND_PASSES} passes ({' -> '.join(map(str, trend))})")
    commits_per_hour = total.commits / covered
    runs_per_hour = HOUR_MS / max(retry_ms, 1)
    for name, left in backlog.items():
        option, value = limits.get(name, ("", 0))
        if not option:
            continue
        outpaced = state.operations[name].on_change and commits_per_hour > value * runs_per_hour
        if growing or outpaced:
            advice.append(
                f"{name} left {left} due with {option}={value}: raise {option} (or run maintenance more often)"
            )
    return KeepUp(
        window_hours=covered,
        commits_per_hour=commits_per_hour,
        ingest_rows_per_hour=total.ingest_rows / covered,
        ingest_bytes_per_hour=total.ingest_bytes / covered,
        dropped_rows_per_hour=total.dropped_rows / covered,
        reclaimed_bytes_per_hour=total.reclaimed_bytes / covered,
        backlog=backlog,
        backlog_trend=tuple(trend),
        falling_behind=bool(advice),
        advice=tuple(advice),
    )


def operation_limits(ctx: TableContext, operations: Iterable[Operation[Any, Any, Any]]) -> dict[str, tuple[str, int]]:
    """Operation name -> (its limit option, the table's value), for the keep-up advice (operations without a limit
    option, or whose value does not parse, are left out)."""
    limits = {}
    for op in operations:
        option = REGISTRY.get(op.limit_option) if op.limit_option else None
        if option is None:
            continue
        try:
            value = ctx.options.require(option)
        except TableFormatError:
            continue
        if isinstance(value, int):
            limits[op.name] = (op.limit_option, value)
    return limits
