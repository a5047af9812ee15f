"""The figures of a retention report, as data: exact bytes and rows, each from the code that owns it.

Storage over time comes from the snapshot history (tableformat.report.history); what each rule would free from
the rule's own dry run (the registry's operations); partitions from ``table.inspect.partitions()`` (what
``tablefmt partitions`` prints); keep-up from the maintainer's keep-up functions. Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tableformat.cleanup.kernel import OperationResult
from tableformat.cleanup.maintainer import KeepUp
from tableformat.model.maintain import HourStats
from tableformat.units import time_pair


@dataclass(frozen=True, slots=True, kw_only=True)
class StoragePoint:
    """The table's data files right after one snapshot was committed."""

    snapshot_id: int
    time_ms: int
    commit_kind: str
    live_bytes: int
    """Bytes of the snapshot's live data files (its ADD and DELETE entries merged)."""
    live_files: int
    live_rows: int | None
    """The snapshot's ``totalRecordCount`` (None when its writer did not record it)."""
    older_only_bytes: int
    """Bytes of data files that retained older snapshots or tags reference and this snapshot does not: what
    snapshot expiration frees once the rules let it expire those snapshots and tags."""
    added_bytes: int = 0
    """Bytes the commit added to the live set (its delta's ADD entries)."""
    removed_bytes: int = 0
    """Bytes the commit took out of the live set (its delta's DELETE entries: overwrites, drops, compactions)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageHistory:
    """Storage over time, one point per retained snapshot (oldest first)."""

    points: tuple[StoragePoint, ...] = ()
    earliest_snapshot: int | None = None
    """The oldest retained snapshot: nothing before it can be known (expiration removed it)."""
    tag_only_bytes: int = 0
    """Bytes of files that only tags of already expired snapshots hold (part of every point's older-only bytes)."""
    manifests_read: int = 0
    snapshots_read: int = 0
    notes: tuple[str, ...] = ()
    """What is estimated or left out (said in the report next to the chart)."""

    @property
    def latest(self) -> StoragePoint | None:
        return self.points[-1] if self.points else None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionFigures:
    """One live partition of the latest snapshot, as ``tablefmt partitions`` shows it."""

    partition: str
    """``k=v/...`` (dates as yyyy-MM-dd); empty for an unpartitioned table."""
    values: Mapping[str, Any]
    shown: Mapping[str, str] = field(default_factory=dict)
    """``values`` as users write them (see tableformat.model.partition.display_value): the ``--json`` form."""
    record_count: int
    file_size_in_bytes: int
    file_count: int
    dropped_by: tuple[str, ...] = ()
    """The rules whose dry run drops this whole partition now (``expire-partitions``, ``expire-records``)."""
    trimmed_by: tuple[str, ...] = ()
    """Rules whose dry run removes part of this partition now (record TTL: some files dropped or rewritten)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleFigures:
    """One retention rule (a registered maintenance operation): what its dry run would do now."""

    operation: str
    summary: str
    configured: bool
    """Whether the table's options ask for it (e.g. partition expiration needs ``partition.expiration-time``)."""
    result: OperationResult | None = None
    """The operation's own dry-run result (None when not configured or when it failed)."""
    error: str = ""
    not_applicable: str = ""
    """Why the operation does not apply to this kind of table (a rewrite on a primary-key table): not run, no error."""
    frees_bytes: int = 0
    """Bytes the dry run would delete now (its ``deleted_bytes``)."""
    frees_files: int = 0
    frees_usd_per_month: float = 0.0
    """What storing ``frees_bytes`` costs a month by the table's price table (``maintenance.cost.*``,
    docs/cost.md): what the rule saves each month once it has run."""
    run_cost_usd: float = 0.0
    """What the S3 requests of a run of the rule cost (its dry run's ``estimated_cost_usd``)."""
    marks_bytes: int = 0
    """Bytes it would take out of the latest snapshot without deleting them (partition drops, expired records):
    snapshot expiration frees them later, once no retained snapshot or tag holds them."""
    marks_rows: int = 0
    backlog: int = 0
    next_due_ms: int | None = None
    """When ``tablefmt maintain`` runs it next (from the table's maintain state); None: on the first pass."""
    due_source: str = ""
    """'maintain state', or how the cadence is described when the table was never maintained."""
    interval_ms: int = 0
    on_change: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "configured": self.configured,
            "frees_bytes": self.frees_bytes,
            "frees_files": self.frees_files,
            "frees_storage_usd_per_month": self.frees_usd_per_month,
            "run_cost_usd": self.run_cost_usd,
            "marks_bytes": self.marks_bytes,
            "marks_records": self.marks_rows,
            "backlog": self.backlog,
            **time_pair("next_due", self.next_due_ms),
            "due_source": self.due_source,
            "interval_ms": self.interval_ms,
            "on_change": self.on_change,
            "error": self.error or None,
            "not_applicable": self.not_applicable or None,
            "dry_run": None if self.result is None else self.result.to_json(),
        }

    def outcome(self) -> str:
        """The dry run's headline (its first summary line), without the operation's name."""
        if self.result is None:
            if self.not_applicable:
                return f"not applicable: {self.not_applicable}"
            return self.error or "not configured"
        return self.result.headline().removeprefix(f"{self.operation}: ")


@dataclass(frozen=True, slots=True, kw_only=True)
class KeepUpFigures:
    """Ingest against retention over the window, per hour."""

    keep_up: KeepUp
    hours: tuple[HourStats, ...]
    """Oldest first: commits, rows and bytes ingested, rows dropped, bytes the maintainer reclaimed."""
    source: str
    """'maintain state' (reclaimed bytes recorded by ``tablefmt maintain``) or 'snapshot history' (never
    maintained: ingest counted now, nothing reclaimed is known)."""
    window_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TableRetentionReport:
    """Everything the report shows for one table (``table.report()``)."""

    name: str
    location: str
    now_ms: int
    since_ms: int | None
    """Points before this are left out of the charts (``--since``); None: the whole retained history."""
    storage: StorageHistory
    partitions: tuple[PartitionFigures, ...]
    partition_keys: tuple[str, ...]
    rules: tuple[RuleFigures, ...]
    keep_up: KeepUpFigures | None
    orphan_bytes: int | None
    """From the orphan cleanup dry run (None when it could not run)."""
    orphan_files: int | None
    errors: tuple[str, ...] = ()
    held_bytes: int | None = 0
    """Bytes the undo window holds (docs/undo.md); None when its lists cannot be read."""
    seconds: float = field(default=0.0, compare=False)
    row_count_kind: str = "exact"
    """What the row counts (live rows, partition rows) are: "exact" on an append table, "raw" on a primary-key table
    (every stored version of a key; a read merges them; changelog rows are never counted). See tableformat.inspect."""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (every figure; each rule's dry run as its own ``--json`` prints it)."""
        keep_up = self.keep_up
        return {
            "table": self.name,
            "location": self.location,
            **time_pair("now", self.now_ms),
            **time_pair("since", self.since_ms),
            "live_bytes": self.live_bytes,
            "reclaimable_bytes": self.reclaimable_bytes,
            "reclaimable_storage_usd_per_month": self.reclaimable_usd_per_month,
            "orphan_bytes": self.orphan_bytes,
            "orphan_files": self.orphan_files,
            "held_bytes": self.held_bytes,
            "row_count_kind": self.row_count_kind,
            "growth_bytes_per_day": round(self.growth_bytes_per_day(), 3),
            "storage": {
                "earliest_snapshot_id": self.storage.earliest_snapshot,
                "tag_only_bytes": self.storage.tag_only_bytes,
                "snapshots_read": self.storage.snapshots_read,
                "manifests_read": self.storage.manifests_read,
                "notes": list(self.storage.notes),
                "points": [_point_json(p) for p in self.storage.points],
            },
            "partitions": [_partition_json(p) for p in self.partitions],
            "rules": [r.to_json() for r in self.rules],
            "keep_up": None
            if keep_up is None
            else {
                **keep_up.keep_up.to_json(),
                "source": keep_up.source,
                "window_ms": keep_up.window_ms,
                "hours": [hour_json(h) for h in keep_up.hours],
            },
            "warnings": list(self.warnings),
            "errors": list(self.errors),
            "duration_ms": round(self.seconds * 1000),
        }

    def rule(self, name: str) -> RuleFigures | None:
        return next((r for r in self.rules if r.operation == name), None)

    @property
    def live_bytes(self) -> int:
        latest = self.storage.latest
        return 0 if latest is None else latest.live_bytes

    @property
    def reclaimable_bytes(self) -> int:
        """What the rules' dry runs would delete now (snapshot expiration, orphan cleanup, ...)."""
        return sum(r.frees_bytes for r in self.rules)

    @property
    def reclaimable_usd_per_month(self) -> float:
        """What storing the reclaimable bytes costs a month, by the table's price table (docs/cost.md)."""
        return round(sum(r.frees_usd_per_month for r in self.rules), 8)

    @property
    def warnings(self) -> tuple[str, ...]:
        found = list(self.errors)
        if self.keep_up is not None and self.keep_up.keep_up.falling_behind:
            found += [f"retention is falling behind: {a}" for a in self.keep_up.keep_up.advice]
        return tuple(found)

    def growth_bytes_per_day(self) -> float:
        """Change of the stored data bytes (live + held by older snapshots) per day over the charted points."""
        points = [p for p in self.storage.points if self.since_ms is None or p.time_ms >= self.since_ms]
        if len(points) < 2:
            return 0.0
        first, last = points[0], points[-1]
        days = max((last.time_ms - first.time_ms) / 86_400_000, 1 / 24)
        grown = (last.live_bytes + last.older_only_bytes) - (first.live_bytes + first.older_only_bytes)
        return grown / days


@dataclass(frozen=True, slots=True, kw_only=True)
class WarehouseReport:
    """The report of many tables, ranked."""

    targets: tuple[str, ...]
    now_ms: int
    tables: tuple[TableRetentionReport, ...]
    seconds: float = field(default=0.0, compare=False)

    def by_reclaimable(self) -> list[TableRetentionReport]:
        return sorted(self.tables, key=lambda t: (-t.reclaimable_bytes, t.name))

    def by_growth(self) -> list[TableRetentionReport]:
        return sorted(self.tables, key=lambda t: (-t.growth_bytes_per_day(), t.name))


def _point_json(point: StoragePoint) -> dict[str, Any]:
    return {
        "snapshot_id": point.snapshot_id,
        **time_pair("commit_time", point.time_ms),
        "commit_kind": point.commit_kind,
        "live_bytes": point.live_bytes,
        "live_files": point.live_files,
        "live_records": point.live_rows,
        "older_only_bytes": point.older_only_bytes,
        "added_bytes": point.added_bytes,
        "deleted_bytes": point.removed_bytes,
    }


def _partition_json(figures: PartitionFigures) -> dict[str, Any]:
    return {
        "partition": dict(figures.shown),
        "record_count": figures.record_count,
        "file_size_in_bytes": figures.file_size_in_bytes,
        "file_count": figures.file_count,
        "dropped_by": list(figures.dropped_by),
        "trimmed_by": list(figures.trimmed_by),
    }


def hour_json(hour: HourStats) -> dict[str, Any]:
    """One hour of keep-up figures in ``--json``."""
    return {
        **time_pair("hour", hour.hour_ms),
        "commits": hour.commits,
        "ingest_records": hour.ingest_rows,
        "ingest_bytes": hour.ingest_bytes,
        "dropped_records": hour.dropped_rows,
        "reclaimed_bytes": hour.reclaimed_bytes,
    }
