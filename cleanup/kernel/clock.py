"""The one clock of maintenance: epoch milliseconds, replaceable by a fixed value in tests (``now_ms=``)."""

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
