"""Why an expiration stops where it does, in words a dry run can print: "10 of 296 expirable snapshots:
snapshot.expire.limit=10", "0 expired: the newest 10 snapshots are kept (snapshot.num-retained.min=10)", "0
expired: snapshot 4 is kept, the snapshot after it committed less than snapshot.time-retained=1 h ago".

The planner's range rule (plan.py ``_select_end``) is the truth; this only names the bound that decided it. When
the per-run limit decides, the number of snapshots expirable without it is found by a binary search over the
listed ids (commit times grow with ids; a skewed clock only makes the count approximate, never the plan); only
then is ``snapshot/`` listed (issue 14: otherwise the cost of a run follows what expires, not the history).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tableformat.durations import format_duration_ms
from tableformat.model.snapshot import Snapshot

from .config import ExpireConfig


def _young_from(
    ids: Sequence[int], start: int, bound: int, threshold: int, read: Callable[[int], Snapshot | None]
) -> int:
    """The first listed id >= ``start`` and < ``bound`` whose successor committed at or after ``threshold`` (the
    snapshot the time rule keeps), or ``bound`` when there is none."""
    lo = bisect.bisect_left(ids, start)
    hi = bisect.bisect_left(ids, bound)
    while lo < hi:  # ids[lo:hi] are candidates; find the first whose successor is young
        mid = (lo + hi) // 2
        successor = read(ids[mid + 1]) if mid + 1 < len(ids) else None
        if successor is not None and successor.time_millis >= threshold:
            hi = mid
        else:
            lo = mid + 1
    return ids[lo] if lo < len(ids) and ids[lo] < bound else bound


class StopReason(NamedTuple):
    """Why the range ends where it does, and how many expirable snapshots the per-run limit left (0 unless it
    decided): the backlog the scheduler follows."""

    text: str
    left: int = 0


def stop_reason(
    config: ExpireConfig,
    *,
    ids: Callable[[], Sequence[int]],
    expired: int,
    earliest: int,
    latest: int,
    end: int,
    consumer_next: int | None,
    limit: int,
    now_ms: int,
    read: Callable[[int], Snapshot | None],
) -> StopReason:
    """One sentence naming what ended the expired range [earliest, end) of ``expired`` snapshots, and the limit's
    backlog (``ids`` lists every snapshot id: called only for it)."""
    retain_bound = latest - config.retain_min + 1
    bound = retain_bound if consumer_next is None else min(retain_bound, consumer_next)
    retained = format_duration_ms(config.time_retained_ms)
    if limit <= 0:
        return StopReason("0 expired: this run's snapshot.expire.limit was used up finishing interrupted expirations")
    if end >= bound:
        if consumer_next is not None and consumer_next < retain_bound:
            return StopReason(f"{expired} expired: a consumer still has to read snapshot {consumer_next}")
        return StopReason(
            f"{expired} expired: the newest {config.retain_min} snapshot(s) are kept "
            f"(snapshot.num-retained.min={config.retain_min})"
        )
    if end >= earliest + limit:
        low = max(latest - config.retain_max + 1, earliest)
        listed = ids()
        expirable_end = _young_from(listed, max(low, end), bound, now_ms - config.time_retained_ms, read)
        expirable = bisect.bisect_left(listed, expirable_end) - bisect.bisect_left(listed, earliest)
        text = f"{expired} of {expirable} expirable snapshots: snapshot.expire.limit={config.limit}"
        return StopReason(text, max(0, expirable - expired))
    return StopReason(
        f"{expired} expired: snapshot {end} is kept because the snapshot after it committed less than "
        f"snapshot.time-retained={retained} ago"
    )
