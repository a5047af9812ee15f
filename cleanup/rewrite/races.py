"""Rewrites that lose a race with snapshot expiration: re-plan on the latest snapshot instead of failing.

A rewrite reads the files of the snapshot it planned on: that snapshot's manifest lists and manifests while it
plans, the planned data files (and, for record expiration, some footers) while it rewrites. With a short retention
(``snapshot.num-retained.min=1``, after-commit expiration) another writer can commit a change that replaces those
files (a compaction, a record expiration, an overwrite) and an expiration can then delete them together with the
snapshot. Expiration deletes a snapshot's file before any file it names (docs/reliability.md, G9), so a file found
missing while the snapshot it was read from no longer exists is such a lost race, never corruption: the rewrite
plans again on the new latest snapshot (what it had committed stays committed, the files of the lost attempt are
removed), at most :data:`REPLANS` times, then stops with SnapshotExpiredWhileReadingError. A file missing while
that snapshot still exists stays the error it is (deleted outside tablefmt).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from tableformat.context import TableContext
from tableformat.errors import MissingDataFileError, MissingMetadataError, SnapshotExpiredWhileReadingError
from tableformat.model.snapshot import Snapshot
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)

P = TypeVar("P")

REPLANS = 4
"""Re-plans after lost races, at most, while planning and again while rewriting (each attempt reads the newest
snapshot, which a commit and an expiration must both overtake again for it to be lost)."""

MISSING_FILE_ERRORS = (MissingMetadataError, MissingDataFileError)
"""A manifest list, a manifest or a data file that is not there."""

REPLAN_ADVICE = "the rewrite plans again on the latest snapshot"
GAVE_UP_ADVICE = (
    f"gave up after {REPLANS} re-plans; run it again, or retain snapshots for longer than a rewrite takes "
    "(snapshot.num-retained.min, snapshot.time-retained)"
)


def expired_snapshot(store: MetadataStore, snapshot_ids: Iterable[int | None]) -> int | None:
    """The newest of ``snapshot_ids`` (the snapshots in which the files read were known to be live) when none of
    them exists any more; None while one still exists (or none is known): then a missing file is a real error."""
    known = sorted({i for i in snapshot_ids if i is not None}, reverse=True)
    if not known or any(store.snapshot_exists(i) for i in known):
        return None
    return known[0]


def raise_if_expired(
    store: MetadataStore, snapshot_ids: Iterable[int | None], exc: BaseException, advice: str = REPLAN_ADVICE
) -> None:
    """Raise SnapshotExpiredWhileReadingError (from ``exc``, a missing file) when every snapshot in which the files
    read were known live is gone; return otherwise (the caller raises ``exc``)."""
    gone = expired_snapshot(store, snapshot_ids)
    if gone is not None:
        raise SnapshotExpiredWhileReadingError(gone, advice) from exc


def plan_on_latest(ctx: TableContext, plan: Callable[[Snapshot | None], P]) -> tuple[P, tuple[int, ...]]:
    """``plan(latest snapshot)``, planned again on the new latest snapshot when the one it read was expired meanwhile
    (at most :data:`REPLANS` times; SnapshotExpiredWhileReadingError after that). Returns the plan and the snapshots
    lost on the way."""
    lost: list[int] = []
    while True:
        latest = ctx.store.latest_snapshot()
        try:
            return plan(latest), tuple(lost)
        except MISSING_FILE_ERRORS as exc:
            gone = expired_snapshot(ctx.store, (None if latest is None else latest.id,))
            if gone is None:
                raise
            if len(lost) >= REPLANS:
                raise SnapshotExpiredWhileReadingError(gone, GAVE_UP_ADVICE) from exc
            lost.append(gone)
            log.info("snapshot %d was expired while a rewrite planned on it; planning again on the latest", gone)


def run_replanning(first: P, replan: Callable[[], P], run: Callable[[P], None]) -> tuple[P, tuple[int, ...]]:
    """``run(first)``; when it lost its snapshot (SnapshotExpiredWhileReadingError from the rewriter), ``replan()``
    and run the new plan, at most :data:`REPLANS` times, then raise. Returns the plan run last and the snapshots
    lost while rewriting."""
    plan = first
    lost: list[int] = []
    while True:
        try:
            run(plan)
            return plan, tuple(lost)
        except SnapshotExpiredWhileReadingError as exc:
            if len(lost) >= REPLANS:
                raise SnapshotExpiredWhileReadingError(exc.snapshot_id, GAVE_UP_ADVICE) from exc
            lost.append(exc.snapshot_id)
            log.info("%s", exc)
        plan = replan()


def replan_notes(lost: Sequence[int]) -> tuple[str, ...]:
    """The result's note on the re-plans a run made (none when it made none)."""
    if not lost:
        return ()
    ids = sorted(lost)
    times = "1 time" if len(ids) == 1 else f"{len(ids)} times"
    which = f"snapshot {ids[0]} was" if len(ids) == 1 else f"snapshots {', '.join(map(str, ids))} were"
    return (
        f"re-planned {times} on the latest snapshot: {which} expired while this run read it (a concurrent commit "
        "had replaced files it planned to rewrite)",
    )
