"""Sizes and counts for people: the one formatter every text output uses (CLI, summaries, report page, charts).

JSON keeps raw integers (``*_bytes``); text shows ``0 B``, ``512 B``, ``1.5 KiB``, ``12.3 MiB``, ``1.02 GiB``.
"""

from __future__ import annotations

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(count: float | None) -> str:
    """``0 B``, ``512 B``, ``1.5 KiB``, ``12.3 MiB``, ``1.02 GiB``: three significant digits from KiB up."""
    if count is None:
        return "-"
    value = float(count)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            if unit == "B":
                return f"{value:.0f} B"
            digits = 2 if abs(value) < 10 else 1 if abs(value) < 100 else 0
            return f"{value:.{digits}f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_count(count: int | None) -> str:
    """``1,234,567`` (``-`` when unknown)."""
    return "-" if count is None else f"{count:,}"
