"""Sizes and counts for people: the one formatter every text output uses (CLI, summaries, report page, charts).

JSON keeps raw integers (``*_bytes``); text shows ``0 B``, ``512 B``, ``1.5 KiB``, ``12.3 MiB``, ``1.02 GiB``.
"""

from __future__ import annotations

import datetime as dt
import math

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def dollars(amount: float) -> str:
    """US dollars for text: ``$0``, ``$12.35``, ``$1,234.50``; under a cent three significant digits (``$0.00412``,
    ``$0.000000293``), never an exponent."""
    if amount == 0:
        return "$0"
    if abs(amount) >= 0.01:
        return f"${amount:,.2f}"
    digits = 2 - math.floor(math.log10(abs(amount)))
    return f"${amount:.{digits}f}".rstrip("0")


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


def iso_from_ms(millis: int | None) -> str | None:
    """Epoch milliseconds as the ISO-8601 time ``--json`` shows next to every ``*_ms``: local zone, offset given
    (``2026-11-24T10:15:02+01:00``, to the second); None stays None."""
    if millis is None:
        return None
    return dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def instant_ms(text: str, naive_zone: dt.tzinfo | None) -> int:
    """Epoch milliseconds of ``text``: an ISO-8601 date-time (``Z`` allowed; one without an offset is in
    ``naive_zone``, None: this machine's zone) or epoch milliseconds. ValueError for anything else (the caller says
    it in its own words)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=naive_zone) if naive_zone is not None else moment.astimezone()
    return int(moment.timestamp() * 1000)


def time_pair(name: str, millis: int | None) -> dict[str, str | int | None]:
    """``{name: ISO time, name_ms: epoch ms}``: how every time appears in ``--json`` output."""
    return {name: iso_from_ms(millis), f"{name}_ms": millis}
