"""The time of a partition from its typed values, as Paimon's PartitionTimeExtractor computes it, type-aware.

``partition.timestamp-pattern`` (``$dt``, ``$dt $hour:00:00``, ``$year-$month-$day``; default: the first
partition column) is filled with the values' string forms (a DATE as ``yyyy-MM-dd``, a TIMESTAMP as
``yyyy-MM-dd HH:mm:ss[.ffffff]``, a number as its digits) and parsed with ``partition.timestamp-formatter`` (a Java
DateTimeFormatter pattern such as ``yyyyMMdd``; default: ``yyyy-MM-dd[ HH:mm:ss[.fraction]]`` with 1-2 digit
month, day and time fields). A pattern that is exactly one DATE or TIMESTAMP column takes the value itself. The
result is the start of the partition's period as a naive local date-time (Paimon compares with the local clock).

Used by partition expiration and, with ``partition.timestamp-format.strict``, by the write path.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tableformat.errors import ValidationError
from tableformat.model.schema import DataField
from tableformat.model.types import STRING_ROOTS, DataType

_DEFAULT_FORMAT = re.compile(r"([+-]?\d{1,10})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{0,9}))?)?")
_FIELDS = {"y": "year", "u": "year", "M": "month", "d": "day", "H": "hour", "m": "minute", "s": "second", "S": "nano"}


class PartitionTimeError(ValueError):
    """A partition whose values give no time (null, the default partition, a value the formatter does not parse)."""


@dataclass(frozen=True, slots=True)
class _Formatter:
    """A Java DateTimeFormatter pattern compiled to a regular expression with one group per field."""

    regex: re.Pattern[str]
    fields: tuple[str, ...]


def _letter_regex(letter: str, count: int, pattern: str) -> str:
    if letter in "yu":
        return r"(\d{2})" if count == 2 else rf"([+-]?\d{{{max(count, 1)},9}})"
    if letter == "S":
        return rf"(\d{{{count}}})"
    if count > 2:
        raise ValidationError(f"partition.timestamp-formatter {pattern!r}: {letter * count} is not supported")
    return r"(\d{1,2})" if count == 1 else r"(\d{2})"


def compile_formatter(pattern: str) -> _Formatter:
    """Compile the subset of Java DateTimeFormatter patterns partition times use (y/u M d H m s S, quoted and
    punctuation literals); ValidationError for anything else or a pattern without year, month and day."""
    parts: list[str] = []
    fields: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "'":
            end = pattern.find("'", index + 1)
            if end < 0:
                raise ValidationError(f"partition.timestamp-formatter {pattern!r}: unclosed quote")
            parts.append(re.escape(pattern[index + 1 : end] or "'"))
            index = end + 1
        elif char.isalpha():
            count = len(pattern) - index - len(pattern[index:].lstrip(char))
            if char not in _FIELDS:
                raise ValidationError(f"partition.timestamp-formatter {pattern!r}: letter {char!r} is not supported")
            parts.append(_letter_regex(char, count, pattern))
            fields.append("year2" if char in "yu" and count == 2 else _FIELDS[char])
            index += count
        elif char in "[]#{}":
            raise ValidationError(f"partition.timestamp-formatter {pattern!r}: {char!r} is not supported")
        else:
            parts.append(re.escape(char))
            index += 1
    if not {"month", "day"} <= set(fields) or not {"year", "year2"} & set(fields):
        raise ValidationError(f"partition.timestamp-formatter {pattern!r} must have a year, a month and a day")
    return _Formatter(re.compile("".join(parts)), tuple(fields))


def parse_default(text: str) -> dt.datetime:
    """Paimon's default: ``yyyy-M-d`` optionally followed by `` H:m:s[.fraction]``."""
    if len(text) == 10 and text[4] == text[7] == "-" and text.isascii() and text.replace("-", "").isdigit():
        try:  # yyyy-MM-dd, the usual: in this shape fromisoformat is datetime(yyyy, MM, dd), 9x faster
            return dt.datetime.fromisoformat(text)
        except ValueError as exc:
            raise PartitionTimeError(f"{text!r} is not a valid date-time: {exc}") from None
    match = _DEFAULT_FORMAT.fullmatch(text)
    if match is None:
        raise PartitionTimeError(f"{text!r} does not match yyyy-MM-dd[ HH:mm:ss]")
    year, month, day, hour, minute, second, fraction = match.groups()
    micros = int((fraction or "0").ljust(6, "0")[:6])
    return _build(text, int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0), micros)


def _build(text: str, year: int, month: int, day: int, hour: int, minute: int, second: int, micros: int) -> dt.datetime:
    try:
        return dt.datetime(year, month, day, hour, minute, second, micros)
    except (ValueError, OverflowError) as exc:
        raise PartitionTimeError(f"{text!r} is not a valid date-time: {exc}") from None


def parse_with(formatter: _Formatter, text: str, pattern: str) -> dt.datetime:
    """Parse ``text`` with a compiled formatter; midnight when it has no time fields."""
    match = formatter.regex.fullmatch(text)
    if match is None:
        raise PartitionTimeError(f"{text!r} does not match the formatter {pattern!r}")
    got = {"year": 0, "month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0, "nano": 0}
    for name, value in zip(formatter.fields, match.groups()):
        if name == "year2":
            got["year"] = 2000 + int(value)
        elif name == "nano":
            got["nano"] = int(value.ljust(9, "0")[:9])
        else:
            got[name] = int(value)
    return _build(
        text, got["year"], got["month"], got["day"], got["hour"], got["minute"], got["second"], got["nano"] // 1000
    )


def _user_string(value: Any, dtype: DataType) -> str:
    if dtype.root == "DATE":
        return str(value.isoformat())
    if dtype.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return str(_local(value, dtype).isoformat(sep=" "))
    return str(value)


def _local(value: dt.datetime, dtype: DataType) -> dt.datetime:
    """A TIMESTAMP as is; a TIMESTAMP_LTZ (an instant) as the local wall-clock time."""
    if dtype.root != "TIMESTAMP_LTZ":
        return value.replace(tzinfo=None)
    instant = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    return instant.astimezone().replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class PartitionTimeExtractor:
    """Turns a partition's typed values into the start of its period (see the module docstring).

    Everything that depends only on the pattern is worked out once by :meth:`create`: the columns it uses, whether it
    is one whole DATE or TIMESTAMP column, and its literal pieces; :meth:`extract` runs once per partition."""

    fields: tuple[DataField, ...]
    pattern: str
    formatter: str | None
    default_name: str
    _compiled: _Formatter | None
    _used: tuple[str, ...]
    """The columns the pattern names, in order (a column named twice is checked once)."""
    _whole: DataField | None
    """The column, when the pattern is exactly one DATE, TIMESTAMP or TIMESTAMP_LTZ column: its value is the time."""
    _pieces: tuple[tuple[str, DataField | None], ...]
    """The pattern as (literal text, column whose string form follows it or None)."""
    _text_column: str | None
    """The column, when the pattern is exactly one column whose value is its own string form (a string type): the
    text to parse is the value itself."""

    @classmethod
    def create(
        cls, fields: Sequence[DataField], pattern: str | None, formatter: str | None, default_name: str
    ) -> PartitionTimeExtractor:
        """Validate the pattern (every ``$key`` a partition column) and the formatter; ValidationError if not."""
        if not fields:
            raise ValidationError("the table is not partitioned: there are no partitions to expire")
        names = sorted((f.name for f in fields), key=len, reverse=True)  # the longest key wins on a shared prefix
        keys = re.compile(r"\$(" + "|".join(re.escape(n) for n in names) + ")")
        text = pattern if pattern is not None else f"${fields[0].name}"
        unknown = [m.group(0) for m in re.finditer(r"\$\w*", text) if not keys.match(text, m.start())]
        if unknown:
            raise ValidationError(
                f"partition.timestamp-pattern {text!r} names {', '.join(unknown)}, which is not a partition column "
                f"(partition columns: {', '.join(f.name for f in fields)})"
            )
        compiled = compile_formatter(formatter) if formatter is not None else None
        by_name = {f.name: f for f in fields}
        pieces: list[tuple[str, DataField | None]] = []
        last = 0
        for match in keys.finditer(text):
            pieces.append((text[last : match.start()], by_name[match.group(1)]))
            last = match.end()
        pieces.append((text[last:], None))
        used = tuple(dict.fromkeys(field.name for _, field in pieces if field is not None))
        whole = keys.fullmatch(text)
        single = by_name[whole.group(1)] if whole is not None else None
        time_column = single is not None and single.type.root in ("DATE", "TIMESTAMP", "TIMESTAMP_LTZ")
        text_column = single.name if single is not None and single.type.root in STRING_ROOTS else None
        return cls(
            tuple(fields), text, formatter, default_name, compiled, used, single if time_column else None,
            tuple(pieces), text_column,
        )  # fmt: skip

    def extract(self, values: Mapping[str, Any]) -> dt.datetime:
        """The partition's time; PartitionTimeError with the reason when it has none."""
        for name in self._used:
            value = values.get(name)
            if value is None:
                raise PartitionTimeError(f"{name} is null (the default partition)")
            if isinstance(value, str) and value == self.default_name:
                raise PartitionTimeError(f"{name} is the default partition {self.default_name!r}")
        whole = self._whole
        if whole is not None:
            if whole.type.root == "DATE":
                return dt.datetime.combine(values[whole.name], dt.time())
            return _local(values[whole.name], whole.type)
        if self._text_column is not None:
            text = values[self._text_column]  # the usual `$dt` on a string column: its value is the text
        else:
            text = "".join(
                literal if field is None else literal + _user_string(values[field.name], field.type)
                for literal, field in self._pieces
            )
        if self._compiled is None:
            return parse_default(text)
        return parse_with(self._compiled, text, str(self.formatter))
