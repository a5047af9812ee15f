"""The one clock: epoch milliseconds for every time tablefmt takes (commits, claims, maintenance, reads' record TTL,
reports), replaceable by a fixed value in tests (``now_ms=`` arguments, or a ``Clock`` given to a component), and
Paimon's local wall-clock time for data files' ``_CREATION_TIME``. Nothing else reads the system time
(tests/test_import_rules.py holds it)."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]
"""Returns the current time in epoch milliseconds."""


def system_clock() -> int:
    """The wall clock, in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def resolve_now(now_ms: int | None, clock: Clock = system_clock) -> int:
    """``now_ms`` when given (a fixed clock), else the clock's time."""
    return clock() if now_ms is None else int(now_ms)


def local_wall_clock_ms() -> int:
    """Paimon's _CREATION_TIME: local wall-clock time stored as if it were UTC (Java LocalDateTime)."""
    now = time.time()
    return int((now + time.localtime(now).tm_gmtoff) * 1000)


def seconds_ago(seconds: float) -> float:
    """The epoch time (seconds, as file modification times are) ``seconds`` before now."""
    return time.time() - seconds
