"""The types of table options (int, bool, string, duration, memory size) and :class:`Option`, one option's key,
type, default, documentation and range. The registry of every option is :mod:`tableformat.options`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Generic, TypeVar

from tableformat.durations import (
    MAX_DURATION_MS,
    MAX_SIZE_BYTES,
    duration_arg_ms,
    format_duration_ms,
    format_memory_bytes,
    parse_duration_ms,
    parse_memory_bytes,
)
from tableformat.errors import ValidationError

T = TypeVar("T")

INT32_MAX = 2**31 - 1
"""The largest count: Paimon reads these options as Java ints."""


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise ValidationError(f"invalid boolean {text!r}: expected true or false")


def _parse_int(text: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ValidationError(f"invalid integer {text!r}") from None


def _parse_price(text: str) -> Decimal:
    try:
        value = Decimal(str(text).strip().removeprefix("$"))
    except InvalidOperation:
        raise ValidationError(f"invalid price {text!r}: expected US dollars such as 0.005") from None
    if not value.is_finite():
        raise ValidationError(f"invalid price {text!r}: expected US dollars such as 0.005")
    return value


@dataclass(frozen=True, slots=True)
class OptionType(Generic[T]):
    """How an option's string value is parsed and rendered, and the range of a number type (None: no range)."""

    name: str
    parse: Callable[[str], T]
    render: Callable[[T], str]
    low: int | None = None
    high: int | None = None


INT: OptionType[int] = OptionType("int", _parse_int, str, -(2**31), INT32_MAX)
BOOL: OptionType[bool] = OptionType("bool", _parse_bool, lambda v: "true" if v else "false")
STRING: OptionType[str] = OptionType("string", str, str)
DURATION: OptionType[int] = OptionType("duration", parse_duration_ms, format_duration_ms, 0, MAX_DURATION_MS)
MEMORY: OptionType[int] = OptionType("memory", parse_memory_bytes, format_memory_bytes, 0, MAX_SIZE_BYTES)
PRICE: OptionType[Decimal] = OptionType("price", _parse_price, str, 0, 1_000_000)
"""US dollars, exact (a Decimal): ``0.005``; ``$0.005`` is read the same."""


@dataclass(frozen=True, slots=True)
class Option(Generic[T]):
    """One table option: Paimon key, type, default (None = unset), a one-line doc, and for numbers the range
    (``minimum`` / ``maximum`` narrow the type's: counts -2^31 .. 2^31 - 1, durations 0 ms .. 36500 d, sizes
    0 b .. 2^63 - 1 b)."""

    key: str
    type: OptionType[T]
    default: T | None
    doc: str
    minimum: int | None = None
    maximum: int | None = None

    @property
    def bounds(self) -> tuple[int, int] | None:
        """The smallest and largest value allowed (None for options that are not numbers)."""
        low = self.type.low if self.minimum is None else self.minimum
        high = self.type.high if self.maximum is None else self.maximum
        return None if low is None or high is None else (low, high)

    def range_text(self) -> str:
        """The range as errors and docs state it: ``>= 1 and <= 2147483647``, ``>= 0 ms and <= 36500 d``."""
        bounds = self.bounds
        if bounds is None:
            return "any value"
        render: Callable[[int], str] = self.type.render  # type: ignore[assignment]
        return f">= {render(bounds[0])} and <= {render(bounds[1])}"

    def in_range(self, value: object) -> bool:
        bounds = self.bounds
        return bounds is None or not isinstance(value, (int, Decimal)) or bounds[0] <= value <= bounds[1]

    def parse_unchecked(self, text: str) -> T:
        """Parse a string value without the range check (reading what an older writer stored)."""
        try:
            return self.type.parse(text)
        except ValidationError as exc:
            raise ValidationError(f"option {self.key}: {exc}") from None

    def parse(self, text: str) -> T:
        """Parse a string value, naming the option and its range in any error."""
        value = self.parse_unchecked(text)
        if not self.in_range(value):
            raise ValidationError(f"option {self.key} must be {self.range_text()}, got {text!r}")
        return value

    def argument(self, value: object, name: str) -> T:
        """A per-call override of this option (keyword or flag ``name``): typed and range-checked, the error naming
        the argument, the option and the range. Durations take a timedelta, milliseconds or a string; sizes bytes
        or a string such as ``128 mb``; counts an int."""
        what = f"{name} ({self.key})"
        if self.type is DURATION:
            low, high = self.bounds or (0, MAX_DURATION_MS)
            return duration_arg_ms(value, what, minimum_ms=low, maximum_ms=high)  # type: ignore[arg-type,return-value]
        if self.type is MEMORY and isinstance(value, str):
            parsed: object = self.parse_unchecked(value)
        elif self.type in (INT, MEMORY):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{what} must be an integer, got {value!r}")
            parsed = value
        else:
            return self.parse(str(value))
        if not self.in_range(parsed):
            raise ValidationError(f"{what} must be {self.range_text()}, got {value!r}")
        return parsed  # type: ignore[return-value]

    def render_default(self) -> str:
        """The default as it appears in docs ('(none)' when unset)."""
        return "(none)" if self.default is None else self.type.render(self.default)
