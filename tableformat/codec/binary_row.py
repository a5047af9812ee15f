"""Paimon BinaryRow: the binary encoding of partition values, statistics rows and keys in manifests.

Serialized form (as stored in Avro ``bytes`` fields): a 4-byte big-endian arity, then the row: a null-bit region
of ``((arity + 63 + 8) // 64) * 8`` bytes whose first byte is the row kind, one 8-byte little-endian slot per
field, then a variable-length tail padded to a multiple of 8 bytes. Strings and bytes of at most 7 bytes are
stored inline in their slot (byte 7 = 0x80 | length); longer ones as ``(offset << 32) | length`` with the offset
counted from the start of the row. Compact decimals (precision <= 18) are unscaled longs; compact timestamps
(precision <= 3) are epoch millis; longer ones use the tail like Java does.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence
from decimal import Context, Decimal

from tableformat.errors import CorruptMetadataError
from tableformat.model.types import BINARY_ROOTS, STRING_ROOTS, DataType

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = EPOCH_DATE.toordinal()

_HEADER_BITS = 8

_EXACT = Context(prec=80)
"""Decimal arithmetic without rounding for every Paimon DECIMAL (precision <= 38): the default context keeps 28
digits, which rounded wider values when they were scaled."""


def null_bits_width(arity: int) -> int:
    """Bytes of the null-bit region (including the row-kind header byte)."""
    return ((arity + 63 + _HEADER_BITS) // 64) * 8


def _round_to_word(size: int) -> int:
    return (size + 7) // 8 * 8


def _timestamp_to_millis_nanos(value: dt.datetime) -> tuple[int, int]:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    delta = value - EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, micro_rest = divmod(micros, 1000)
    return millis, micro_rest * 1000


def _millis_nanos_to_timestamp(millis: int, nanos: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=millis, microseconds=nanos // 1000)


def encode_row(values: Sequence[object], types: Sequence[DataType]) -> bytes:
    """Serialize values (None = null) of the given types into Paimon's BinaryRow bytes with arity prefix."""
    arity = len(types)
    if len(values) != arity:
        raise ValueError(f"{len(values)} values for {arity} fields")
    bits = null_bits_width(arity)
    fixed = bytearray(bits + 8 * arity)
    tail = bytearray()
    for index, (value, dtype) in enumerate(zip(values, types)):
        slot = bits + 8 * index
        if value is None:
            bit = index + _HEADER_BITS
            fixed[bit // 8] |= 1 << (bit % 8)
            continue
        root = dtype.root
        if root == "BOOLEAN":
            fixed[slot] = 1 if value else 0
        elif root == "TINYINT":
            struct.pack_into("<b", fixed, slot, int(value))  # type: ignore[call-overload]
        elif root == "SMALLINT":
            struct.pack_into("<h", fixed, slot, int(value))  # type: ignore[call-overload]
        elif root in ("INT", "TIME"):
            struct.pack_into("<i", fixed, slot, int(value))  # type: ignore[call-overload]
        elif root == "DATE":
            days = (value - EPOCH_DATE).days if isinstance(value, dt.date) else int(value)  # type: ignore[call-overload]
            struct.pack_into("<i", fixed, slot, days)
        elif root == "BIGINT":
            struct.pack_into("<q", fixed, slot, int(value))  # type: ignore[call-overload]
        elif root == "FLOAT":
            struct.pack_into("<f", fixed, slot, float(value))  # type: ignore[arg-type]
        elif root == "DOUBLE":
            struct.pack_into("<d", fixed, slot, float(value))  # type: ignore[arg-type]
        elif root == "DECIMAL":
            unscaled = int(Decimal(str(value)).scaleb(dtype.scale, _EXACT).to_integral_value(context=_EXACT))
            if dtype.precision <= 18:
                struct.pack_into("<q", fixed, slot, unscaled)
            else:
                raw = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
                offset = len(fixed) + len(tail)
                tail.extend(raw.ljust(16, b"\0"))  # Java reserves 16 bytes for a non-compact decimal
                struct.pack_into("<q", fixed, slot, (offset << 32) | len(raw))
        elif root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            assert isinstance(value, dt.datetime)
            millis, nanos = _timestamp_to_millis_nanos(value)
            if dtype.precision <= 3:
                struct.pack_into("<q", fixed, slot, millis)
            else:
                offset = len(fixed) + len(tail)
                tail.extend(struct.pack("<q", millis))
                struct.pack_into("<q", fixed, slot, (offset << 32) | nanos)
        elif root in STRING_ROOTS or root in BINARY_ROOTS:
            raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]
            if len(raw) <= 7:
                fixed[slot : slot + len(raw)] = raw
                fixed[slot + 7] = 0x80 | len(raw)
            else:
                offset = len(fixed) + len(tail)
                tail.extend(raw)
                tail.extend(bytes(_round_to_word(len(raw)) - len(raw)))
                struct.pack_into("<q", fixed, slot, (offset << 32) | len(raw))
        else:
            raise ValueError(f"cannot encode type {dtype} in a binary row")
    return struct.pack(">i", arity) + bytes(fixed) + bytes(tail)


def decode_row(data: bytes, types: Sequence[DataType], *, source: str = "<binary row>") -> list[object]:
    """Decode serialized BinaryRow bytes into Python values; raises CorruptMetadataError naming ``source``."""
    try:
        return _decode(data, types)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError) as exc:
        raise CorruptMetadataError(source, f"bad binary row ({exc})") from exc


def decode_field(data: bytes, types: Sequence[DataType], index: int) -> object:
    """One field of a serialized row: an INT, BIGINT or DATE field without decoding the others (statistics lookups
    of a single column); a field of another type through :func:`decode_row` (which checks the whole row)."""
    try:
        if not isinstance(data, bytes):
            data = bytes(data)
        arity = _ARITY(data, 0)[0]
        if arity != len(types):
            raise ValueError(f"row has {arity} fields, expected {len(types)}")
        bit = index + _HEADER_BITS
        if data[4 + bit // 8] & (1 << (bit % 8)):
            return None
        dtype = types[index]
        if dtype.root in ("INT", "BIGINT", "DATE"):
            return _field(data, 4 + null_bits_width(arity) + 8 * index, dtype)
    except (ValueError, IndexError, struct.error) as exc:
        raise CorruptMetadataError("<binary row>", f"invalid binary row ({exc})") from None
    return decode_row(data, types)[index]


def row_arity(data: bytes) -> int:
    """The arity stored in a serialized row."""
    return int(struct.unpack_from(">i", data, 0)[0])


_LONG = struct.Struct("<q").unpack_from
_INT = struct.Struct("<i").unpack_from
_ARITY = struct.Struct(">i").unpack_from


def _decode(data: bytes, types: Sequence[DataType]) -> list[object]:
    if not isinstance(data, bytes):
        data = bytes(data)
    arity = _ARITY(data, 0)[0]
    if arity != len(types):
        raise ValueError(f"row has {arity} fields, expected {len(types)}")
    bits = null_bits_width(arity)
    if len(data) - 4 < bits + 8 * arity:
        raise ValueError("row shorter than its fixed part")
    result: list[object] = []
    for index, dtype in enumerate(types):
        bit = index + _HEADER_BITS
        if data[4 + bit // 8] & (1 << (bit % 8)):
            result.append(None)
        else:
            result.append(_field(data, 4 + bits + 8 * index, dtype))
    return result


def _field(data: bytes, slot: int, dtype: DataType) -> object:
    """The non-null field whose 8-byte slot starts at ``slot`` of ``data`` (a serialized row: the row starts after the
    4-byte arity, and offsets in it count from there)."""
    root = dtype.root
    if root in STRING_ROOTS or root in BINARY_ROOTS:  # the usual partition column first
        marker = data[slot + 7]
        if marker & 0x80:
            raw = data[slot : slot + (marker & 0x7F)]
        else:
            packed = _LONG(data, slot)[0]
            offset, length = packed >> 32, packed & 0xFFFFFFFF
            if offset + length > len(data) - 4:
                raise ValueError("variable-length field points past the row")
            raw = data[4 + offset : 4 + offset + length]
        return raw.decode("utf-8") if root in STRING_ROOTS else raw
    if root == "DATE":
        return dt.date.fromordinal(_EPOCH_ORDINAL + _INT(data, slot)[0])  # = EPOCH_DATE + timedelta(days), faster
    if root in ("INT", "TIME"):
        return _INT(data, slot)[0]
    if root == "BIGINT":
        return _LONG(data, slot)[0]
    return _decode_other(data, slot, dtype)


def _decode_other(data: bytes, slot: int, dtype: DataType) -> object:
    """A field of any other type, at ``slot`` of ``data`` (a serialized row: offsets count from ``data[4]``)."""
    root = dtype.root
    if root == "BOOLEAN":
        return data[slot] != 0
    if root == "TINYINT":
        return struct.unpack_from("<b", data, slot)[0]
    if root == "SMALLINT":
        return struct.unpack_from("<h", data, slot)[0]
    if root == "FLOAT":
        return struct.unpack_from("<f", data, slot)[0]
    if root == "DOUBLE":
        return struct.unpack_from("<d", data, slot)[0]
    if root == "DECIMAL":
        if dtype.precision <= 18:
            unscaled = _LONG(data, slot)[0]
        else:
            packed = _LONG(data, slot)[0]
            offset, length = packed >> 32, packed & 0xFFFFFFFF
            unscaled = int.from_bytes(data[4 + offset : 4 + offset + length], "big", signed=True)
        return Decimal(unscaled).scaleb(-dtype.scale, _EXACT)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        packed = _LONG(data, slot)[0]
        if dtype.precision <= 3:
            return _millis_nanos_to_timestamp(packed, 0)
        offset, nanos = packed >> 32, packed & 0xFFFFFFFF
        return _millis_nanos_to_timestamp(_LONG(data, 4 + offset)[0], nanos)
    raise ValueError(f"cannot decode type {dtype}")
