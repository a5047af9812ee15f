"""Partition values: typed conversion from user input and Paimon's directory naming (``k=v/...``)."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation

from tableformat.errors import ValidationError
from tableformat.model.schema import DataField
from tableformat.model.types import BINARY_ROOTS, INTEGER_ROOTS, STRING_ROOTS, TIMESTAMP_ROOTS, DataType

EPOCH_DATE = dt.date(1970, 1, 1)

# Hive/Paimon PartitionPathUtils: characters escaped as %XX in partition directory names.
_ESCAPED = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{}[]^"))


def escape_path_name(text: str) -> str:
    """Escape a partition key or value the way Paimon names directories."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def _java_floating_string(value: float, single_precision: bool = False) -> str:
    """Java's Float.toString / Double.toString as pypaimon 2.1.0 reproduces it: the shortest digits (at least 2
    significant) that round-trip at the column's precision; plain for 1e-3 <= |v| < 1e7 with at least one fraction
    digit (100.0), otherwise d.dddE<exp> (1.0E10, 1.2345678E7, 1.0E-5)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    encoding = ">f" if single_precision else ">d"
    bits = struct.pack(encoding, value)
    text = repr(value)
    for precision in range(2, 10 if single_precision else 18):
        candidate = f"{value:.{precision}g}"
        if struct.pack(encoding, float(candidate)) == bits:
            text = candidate
            break
    sign, digit_tuple, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point_exponent = len(digits) - 1 + exponent  # the power of ten of the first digit
    prefix = "-" if sign else ""
    if -3 <= point_exponent < 7:
        if exponent >= 0:
            return f"{prefix}{digits}{'0' * exponent}.0"
        point = len(digits) + exponent
        if point > 0:
            return f"{prefix}{digits[:point]}.{digits[point:]}"
        return f"{prefix}0.{'0' * -point}{digits}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{point_exponent}"


def _java_local_date_time(value: dt.datetime) -> str:
    """Java's LocalDateTime.toString() (Paimon's legacy partition name): minutes always; seconds when the seconds or
    the fraction are non-zero; the fraction as 3 digits for whole milliseconds, else 6. Aware values: UTC fields."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
        if value.microsecond and value.microsecond % 1000 == 0:
            text += f".{value.microsecond // 1000:03d}"
        elif value.microsecond:
            text += f".{value.microsecond:06d}"
    return text


def value_to_path_string(value: object, dtype: DataType, *, legacy_name: bool = True) -> str | None:
    """The string Paimon puts in a partition directory name for a typed value (None for null)."""
    if value is None:
        return None
    root = dtype.root
    if root == "DATE":
        assert isinstance(value, dt.date)
        return str((value - EPOCH_DATE).days) if legacy_name else value.isoformat()
    if root == "BOOLEAN":
        return "true" if value else "false"
    if root in ("FLOAT", "DOUBLE"):
        return _java_floating_string(float(value), single_precision=root == "FLOAT")  # type: ignore[arg-type]
    if root in TIMESTAMP_ROOTS:
        assert isinstance(value, dt.datetime)
        return _java_local_date_time(value)
    if root in BINARY_ROOTS:
        raise ValidationError(f"binary column type {dtype} cannot be a partition key")
    return str(value)


def coerce_value(value: object, field: DataField) -> object:
    """Convert a user-supplied partition value (possibly a string from the CLI) to the column's Python type."""
    if value is None:
        return None
    root = field.type.root
    try:
        if root in STRING_ROOTS:
            return str(value)
        if root in INTEGER_ROOTS:
            if isinstance(value, bool):
                raise ValueError("boolean is not an integer")
            return int(value)  # type: ignore[call-overload]
        if root == "BOOLEAN":
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("true", "false"):
                    raise ValueError("expected true or false")
                return lowered == "true"
            return bool(value)
        if root in ("FLOAT", "DOUBLE"):
            return float(value)  # type: ignore[arg-type]
        if root == "DECIMAL":
            return Decimal(str(value))
        if root == "DATE":
            if isinstance(value, dt.datetime):
                return value.date()
            if isinstance(value, dt.date):
                return value
            if isinstance(value, int):
                return EPOCH_DATE + dt.timedelta(days=value)
            text = str(value)
            if text.lstrip("-").isdigit():
                return EPOCH_DATE + dt.timedelta(days=int(text))
            return dt.date.fromisoformat(text)
        if root in TIMESTAMP_ROOTS:
            if isinstance(value, dt.datetime):
                return value
            return dt.datetime.fromisoformat(str(value))
    except (ValueError, TypeError, InvalidOperation, OverflowError) as exc:
        raise ValidationError(
            f"partition value {value!r} does not fit column {field.name} ({field.type}): {exc}"
        ) from None
    raise ValidationError(f"column {field.name} of type {field.type} cannot be a partition key")


def normalize_spec(
    spec: Mapping[str, object], partition_fields: Sequence[DataField], *, default_name: str, allow_partial: bool
) -> dict[str, object]:
    """Validate a partition spec against the partition keys and convert its values to typed Python values.

    A string equal to the default partition name means null (how a CLI user names the null partition).
    """
    names = [f.name for f in partition_fields]
    if not names:
        raise ValidationError("the table is not partitioned; a partition spec is not allowed")
    unknown = [k for k in spec if k not in names]
    if unknown:
        raise ValidationError(f"unknown partition key(s) {unknown}; partition keys are {names}")
    if not spec:
        raise ValidationError("empty partition spec")
    if not allow_partial and len(spec) != len(names):
        missing = [n for n in names if n not in spec]
        raise ValidationError(f"partition spec must name every partition key; missing {missing}")
    result: dict[str, object] = {}
    for field in partition_fields:
        if field.name in spec:
            raw = spec[field.name]
            result[field.name] = None if raw == default_name else coerce_value(raw, field)
    return result


def parse_spec_text(text: str) -> dict[str, str]:
    """Parse ``k=v[,k=v]`` (the CLI and Spark option form) into a string map."""
    result: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValidationError(f"invalid partition spec {text!r}: expected k=v[,k=v]")
        key, value = part.split("=", 1)
        key = key.strip()
        if not key or key in result:
            raise ValidationError(f"invalid partition spec {text!r}: empty or repeated key {key!r}")
        result[key] = value.strip()
    if not result:
        raise ValidationError(f"invalid partition spec {text!r}: expected k=v[,k=v]")
    return result


def partition_path(
    values: Sequence[object], partition_fields: Sequence[DataField], *, default_name: str, legacy_name: bool
) -> str:
    """Relative directory of a partition: ``k1=v1/k2=v2`` (empty string for an unpartitioned table)."""
    parts = []
    for value, field in zip(values, partition_fields):
        text = value_to_path_string(value, field.type, legacy_name=legacy_name)
        if text is None or text == "" or text.isspace():  # Java: StringUtils.isNullOrWhitespaceOnly
            text = default_name
        parts.append(f"{escape_path_name(field.name)}={escape_path_name(text)}")
    return "/".join(parts)


def display_value(value: object, dtype: DataType, *, default_name: str) -> str:
    """A partition value as users write it (and Paimon's ``$partitions`` shows it): dates as ``yyyy-MM-dd``,
    timestamps as ``yyyy-MM-dd HH:mm:ss[.fraction]``, booleans in lower case, null as the default partition name."""
    if value is None:
        return default_name
    if dtype.root == "DATE" and isinstance(value, dt.date):
        return value.isoformat()
    if dtype.root in TIMESTAMP_ROOTS and isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if dtype.root == "BOOLEAN":
        return "true" if value else "false"
    return str(value)


def spec_values(
    values: Mapping[str, object], partition_fields: Sequence[DataField], *, default_name: str
) -> dict[str, str]:
    """``{key: display value}`` in partition-key order (see display_value): a partition in ``--json`` output."""
    return {
        f.name: display_value(values.get(f.name), f.type, default_name=default_name)
        for f in partition_fields
        if f.name in values
    }


def spec_text(values: Mapping[str, object], partition_fields: Sequence[DataField], *, default_name: str) -> str:
    """``k1=v1/k2=v2`` with display values (see display_value); the form ``tablefmt partitions`` prints."""
    return "/".join(
        f"{f.name}={display_value(values.get(f.name), f.type, default_name=default_name)}"
        for f in partition_fields
        if f.name in values
    )
