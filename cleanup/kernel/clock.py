"""Maintenance takes its time from the one clock (tableformat/clock.py): epoch milliseconds, replaceable by a fixed
value in tests (``now_ms=``)."""

from __future__ import annotations

from tableformat.clock import Clock, resolve_now, system_clock

__all__ = ["Clock", "resolve_now", "system_clock"]
