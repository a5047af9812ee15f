"""What every maintenance operation reports: the fields all results share, and their JSON form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tableformat.units import human_bytes, time_pair

SHOWN = 20
"""Paths a text report lists before '... and N more'."""


def shown_paths(paths: Sequence[str], title: str = "") -> tuple[str, ...]:
    """The text lines listing ``paths`` (the first :data:`SHOWN`, indented, under ``title:`` when given); none for
    no paths."""
    if not paths:
        return ()
    lines = [f"{title}:"] if title else []
    lines += [f"  {path}" for path in paths[:SHOWN]]
    if len(paths) > SHOWN:
        lines.append(f"  ... and {len(paths) - SHOWN} more (use --json for all)")
    return tuple(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationResult:
    """The common part of every operation's result. Real runs report only what the store confirmed deleted; a dry
    run reports exactly what the real run would delete (``dry_run`` True, nothing deleted)."""

    dry_run: bool = False
    deleted_paths: tuple[str, ...] = ()
    """Files deleted (or, in a dry run, to be deleted), relative to the table root."""
    deleted_bytes: int = 0
    removed_dirs: tuple[str, ...] = ()
    """Empty partition and bucket directories removed (never recursively), relative to the table root."""
    notes: tuple[str, ...] = ()
    """Why a run did less than it could (a limit, a concurrent change, a tag kept for a branch, ...)."""
    backlog: int = 0
    """Items (snapshots, partitions, ...) that were due but left for a later run by a limit; 0 when none. The
    scheduler brings a table with backlog back soon, and the keep-up report follows it across passes."""
    operation: str = ""
    """The registry name of the operation that produced it (set by ``run_operation``)."""
    run_id: str = ""
    """The run's id in the audit ledger (``tablefmt audit --run``, ``tablefmt undo``); "" for a run that changed
    nothing, and for a dry run."""
    deferred_paths: tuple[str, ...] = ()
    """Files the undo window keeps instead of deleting (``maintenance.undo-window``), relative to the table root."""
    deferred_bytes: int = 0
    undo_until_ms: int | None = None
    """The end of the window of the deferred files: until then ``tablefmt undo <run id>`` can restore them."""
    requests: tuple[tuple[str, int], ...] = ()
    """(kind, count) of the S3 requests the run sends (LIST, GET, HEAD, PUT, DELETE; kernel/cost.py): counted for a
    real run; for a dry run, those it sent planning plus an estimate of what carrying the plan out adds."""
    counted_requests: tuple[tuple[str, int], ...] = ()
    """(kind, count) of the requests this run itself sent, counted (a dry run's: its planning)."""
    requests_usd: float = 0.0
    """What :attr:`requests` cost by the table's price table (``maintenance.cost.*``, docs/cost.md)."""
    freed_usd_per_month: float = 0.0
    """What storing the deleted bytes cost a month by the price table: what the run saves each month."""

    def failures(self) -> tuple[str, ...]:
        """'path: reason' of what the run could not do although it did not raise (e.g. deletes that failed): the
        scheduler retries the operation soon instead of at its interval."""
        return ()

    def summary(self) -> tuple[str, ...]:
        """The text report every front end prints (the CLI's text mode, ``tablefmt maintain``'s log): its first
        line is the :meth:`headline`. Here: what was deleted, the paths, the notes; operations say more."""
        verb = "would delete" if self.dry_run else "deleted"
        deleted = f"{self.operation}: {verb} {len(self.deleted_paths)} file(s), {human_bytes(self.deleted_bytes)}"
        return (deleted, *shown_paths(self.deleted_paths), *(f"note: {note}" for note in self.notes))

    def headline(self) -> str:
        """One line saying what the run did, for logs and the output of the command whose commit ran it (the
        first line of :meth:`summary`), e.g. ``expire-partitions: dropped 2 partition(s): ...``."""
        return self.summary()[0]

    def did_something(self) -> bool:
        """Whether the run changed (or, dry, would change) anything worth telling."""
        return bool(self.deleted_paths or self.removed_dirs or self.deferred_paths)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` object (operations add their own keys to these)."""
        return {
            "dry_run": self.dry_run,
            "deleted_files": len(self.deleted_paths),
            "deleted_paths": list(self.deleted_paths),
            "deleted_bytes": self.deleted_bytes,
            "removed_dirs": list(self.removed_dirs),
            "notes": list(self.notes),
            "backlog": self.backlog,
            **self.window_json(),
            **self.cost_json(),
        }

    def cost_json(self) -> dict[str, Any]:
        """The keys every ``--json`` object has for what the run costs and saves (docs/cost.md)."""
        return {
            "requests": dict(self.requests),
            "counted_requests": dict(self.counted_requests),
            "estimated_cost_usd": self.requests_usd,
            "freed_storage_usd_per_month": self.freed_usd_per_month,
        }

    def window_json(self) -> dict[str, Any]:
        """The keys every ``--json`` object has for the run's id and its undo window (docs/undo.md)."""
        return {
            "run_id": self.run_id or None,
            "deferred_files": len(self.deferred_paths),
            "deferred_bytes": self.deferred_bytes,
            **time_pair("undo_until", self.undo_until_ms),
        }
