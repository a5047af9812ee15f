"""Parse and format durations ("30s", "15 min", "1 h", "1h30m", "1.5h", "7d") and memory sizes ("8 mb").

This is the one duration parser: table options, expiration arguments, the CLI and the Spark data source all use it.
It also holds the ranges every duration and size must fall in (:data:`MAX_DURATION_MS`, :data:`MAX_SIZE_BYTES`) and
the one conversion of a duration argument (a timedelta, milliseconds or a string) to milliseconds.
"""

from __future__ import annotations

import datetime as dt
import re
from fractions import Fraction

from tableformat.errors import ValidationError

_DURATION_UNITS_MS: dict[str, int] = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}

_MEMORY_UNITS: dict[str, int] = {
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
}

_AMOUNT = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_DURATION = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[a-zA-Z]+\s*)+$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_BARE_MILLIS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*$")
_DURATION_EXAMPLES = "e.g. 30s, 15 min, 1 h, 1h30m, 1.5h, 7d"

MAX_DURATION_MS = 36_500 * 86_400_000
"""The longest duration tablefmt takes anywhere (options, arguments, flags, the maintain config): 36500 d, 100 years.
It still fits int64 nanoseconds (a cutoff on a timestamp(ns) column), ``datetime`` arithmetic back from now,
``timedelta``, and a thread wait (``threading.TIMEOUT_MAX``, about 292 years)."""
MAX_SIZE_BYTES = 2**63 - 1
"""The largest size tablefmt takes (int64, as Paimon's MemorySize and the Parquet and Avro size fields)."""


def parse_duration_ms(text: str) -> int:
    """Parse a duration into milliseconds.

    One or more parts, each a non-negative number (decimals allowed) and a unit, optionally separated by spaces:
    ``30s``, ``15 min``, ``1 h`` (Paimon's form), ``1h30m``, ``1.5h``, ``7d``. A number alone is milliseconds.
    The total must be a whole number of milliseconds.
    """
    raw = str(text)
    bare = _BARE_MILLIS.match(raw)
    if bare:
        parts = [(bare.group(1), "ms")]
    elif _DURATION.match(raw):
        parts = _DURATION_PART.findall(raw)
    else:
        raise ValidationError(
            f"invalid duration {text!r}: expected a non-negative number and a unit, {_DURATION_EXAMPLES}"
        )
    total = Fraction(0)
    for amount, unit in parts:
        size = _DURATION_UNITS_MS.get(unit.lower())
        if size is None:
            raise ValidationError(f"invalid duration {text!r}: unknown unit {unit!r} (use ms, s, m/min, h, d)")
        total += Fraction(amount) * size
    if total.denominator != 1:
        raise ValidationError(f"invalid duration {text!r}: not a whole number of milliseconds")
    return int(total)


def format_duration_ms(ms: int) -> str:
    """Render milliseconds with the largest exact unit: 3600000 -> '1 h'."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def parse_memory_bytes(text: str) -> int:
    """Parse a memory size such as ``8 mb`` or ``128kb`` into bytes (no unit = bytes)."""
    match = _AMOUNT.match(str(text))
    if not match:
        raise ValidationError(f"invalid memory size {text!r}: expected e.g. 8 mb")
    amount, unit = int(match.group(1)), match.group(2).lower() or "b"
    if unit not in _MEMORY_UNITS:
        raise ValidationError(f"invalid memory size {text!r}: unknown unit {unit!r} (use b, kb, mb, gb)")
    return amount * _MEMORY_UNITS[unit]


def format_memory_bytes(size: int) -> str:
    """Render bytes with the largest exact unit: 8388608 -> '8 mb'."""
    for unit, factor in (("gb", 1024**3), ("mb", 1024**2), ("kb", 1024)):
        if size and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} b"


def duration_range(minimum_ms: int = 0, maximum_ms: int = MAX_DURATION_MS) -> str:
    """A duration range as error messages state it: ``>= 0 ms and <= 36500 d``."""
    return f">= {format_duration_ms(minimum_ms)} and <= {format_duration_ms(maximum_ms)}"


def _shown(value: object) -> str:
    if isinstance(value, dt.timedelta):
        return format_duration_ms(value // dt.timedelta(milliseconds=1))
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value} ms"
    return repr(value)


def duration_arg_ms(
    value: dt.timedelta | int | str,
    what: str = "duration",
    *,
    minimum_ms: int = 0,
    maximum_ms: int = MAX_DURATION_MS,
) -> int:
    """Milliseconds of a duration argument (a timedelta, milliseconds or a duration string); ValidationError naming
    ``what`` and the range (default 0 ms to :data:`MAX_DURATION_MS`) when it is outside it."""
    if isinstance(value, bool):
        raise ValidationError(f"invalid duration {value!r}")
    if isinstance(value, dt.timedelta):
        millis = value // dt.timedelta(milliseconds=1)
    elif isinstance(value, int):
        millis = value
    elif isinstance(value, str):
        text = value.strip()
        if text.startswith("-"):
            raise ValidationError(f"{what} must not be negative, got {value!r}")
        millis = parse_duration_ms(text)
    else:
        raise ValidationError(f"invalid duration {value!r}: use a timedelta, milliseconds or a string such as 1h")
    if not minimum_ms <= millis <= maximum_ms:
        raise ValidationError(f"{what} must be {duration_range(minimum_ms, maximum_ms)}, got {_shown(value)}")
    return millis
