"""What ``tablefmt maintain`` keeps under a table: the lease that keeps two maintainers apart, and the state that
lets an idle table be checked with a few reads (when each operation is next due, what the last passes saw)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """One generation of a table's maintenance lease (``.tablefmt/lease-<generation>``, created if absent)."""

    generation: int
    owner: str
    """Unique per maintainer run (a UUID), so that a host running two maintainers still tells them apart."""
    host: str
    pid: int
    acquired_ms: int
    expires_ms: int
    """Epoch ms after which others may take the lease over; 0 = released."""

    @property
    def released(self) -> bool:
        return self.expires_ms == 0

    def live(self, now_ms: int) -> bool:
        """Held by its owner at ``now_ms`` (not released, not expired)."""
        return not self.released and now_ms < self.expires_ms


CLAIM_KINDS = ("maintenance", "rollback")
"""A maintenance run (shared: any number at once) or a rollback (exclusive: alone on the table)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One run's claim on a table (``.tablefmt/claim-<kind>-<owner>``): what keeps a rollback and the runs that
    delete or rewrite metadata apart (tableformat/claims.py)."""

    kind: str
    """One of CLAIM_KINDS."""
    owner: str
    """Unique per run (a UUID); part of the file name."""
    operation: str
    """What the run does, for messages: 'expire', 'remove-orphans', 'rollback', 'tag delete'."""
    host: str
    pid: int
    acquired_ms: int
    expires_ms: int
    """Epoch ms after which the claim no longer counts (its holder stops changing the table before then)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationState:
    """When one operation of one table last ran and is next due."""

    last_run_ms: int = 0
    next_due_ms: int = 0
    backlog: int = 0
    """Items the last run left due because of a limit (0: none)."""
    failures: int = 0
    """Consecutive failed runs."""
    last_error: str = ""
    on_change: bool = True
    """Also due when the table changed (the operation's cadence when it last ran)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HourStats:
    """Ingest and retention of one hour (``hour_ms``: its start, epoch ms)."""

    hour_ms: int
    commits: int = 0
    """Snapshots committed (compactions excluded)."""
    ingest_rows: int = 0
    ingest_bytes: int = 0
    dropped_rows: int = 0
    """Rows removed by overwrites, partition drops and record expiry (negative deltas of OVERWRITE snapshots)."""
    reclaimed_bytes: int = 0
    """Bytes the maintainer deleted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintainState:
    """``.tablefmt/maintain-state``: written by the lease holder after each pass that ran something."""

    latest_snapshot_id: int | None = None
    """The table's latest snapshot when the state was written (a change means on-change operations are due)."""
    schema_id: int | None = None
    counted_snapshot_id: int = 0
    """Snapshots up to this id are already in ``hours``."""
    operations: Mapping[str, OperationState] = field(default_factory=dict)
    hours: tuple[HourStats, ...] = ()
    backlog_history: tuple[int, ...] = ()
    """Total backlog after each of the last passes that ran something (oldest first)."""
    last_success_ms: int = 0
