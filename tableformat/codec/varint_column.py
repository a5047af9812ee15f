"""Avro longs (zigzag varints) of manifest entries: one (``varint_value``), or a whole column at once.

The manifest decoder matches many entries of one layout and then has, per numeric field, a list of the varints'
bytes. Decoding them one call each costs more than matching the entries; when they all have the same width (a
table's files are mostly of one magnitude: sizes and row counts of a column share their byte count) the whole
column is decoded with a few whole-column integer operations instead:

* the varints are laid side by side in 8-byte slots of one big integer (little-endian, slot ``i`` holds varint
  ``i``'s bytes, the rest zeros);
* in every slot the 7 payload bits of byte ``k`` move down ``k`` bits (one mask and one shift per byte position,
  over all slots at once), which leaves each slot holding its varint's unsigned value;
* zigzag: when no value is odd (none negative), every value is its half, one shift of the whole integer.

Anything else (varints of mixed widths, wider than 8 bytes, or negative values) is decoded one by one
(``varint_value``). Only minimal varints reach here (the layouts' patterns match nothing else), so 8 bytes hold at
most 56 bits.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

_SLOT = 8
_MIN_BULK = 8
"""Below this many values a call per value is as quick."""
_PAYLOAD_OF_FIRST_BYTE = b"\x7f" + bytes(_SLOT - 1)
_HALF_OF_EVEN = bytes(b >> 1 for b in range(256))
_ODD_BYTES = bytes(range(1, 256, 2))

if array("Q").itemsize != _SLOT:  # pragma: no cover - every supported platform has 8-byte unsigned long long
    raise ImportError("array('Q') is not 8 bytes here")


def decode_column(raw: Sequence[bytes]) -> list[int]:
    """The values of the zigzag varints ``raw`` (each minimal), in order: at once when they can be, else one by one
    (``varint_value``)."""
    count = len(raw)
    if count < _MIN_BULK:
        return list(map(varint_value, raw))
    width = len(raw[0])
    joined = b"".join(raw)
    # Each varint has exactly one byte below 0x80, its last: when the joined bytes are count * width long and every
    # width-th byte is such a last byte, those are all the last bytes, so every varint is width bytes long.
    if width > _SLOT or len(joined) != count * width or not joined[width - 1 :: width].isascii():
        return list(map(varint_value, raw))
    if width == 1:
        if joined.translate(None, _ODD_BYTES) != joined:  # a negative value
            return list(map(varint_value, raw))
        return list(joined.translate(_HALF_OF_EVEN))
    slots = bytearray(_SLOT * count)
    for k in range(width):
        slots[k::_SLOT] = joined[k::width]
    packed = int.from_bytes(slots, "little")
    payload = int.from_bytes(_PAYLOAD_OF_FIRST_BYTE * count, "little")  # 0x7F in every slot
    unsigned = packed & payload
    for k in range(1, width):
        unsigned |= (packed & payload << 8 * k) >> k
    if unsigned & payload >> 6:  # a value is odd: a negative value
        return list(map(varint_value, raw))
    values = array("Q", (unsigned >> 1).to_bytes(_SLOT * count, "little"))
    if sys.byteorder == "big":  # pragma: no cover - the slots are little-endian
        values.byteswap()
    return values.tolist()


def varint_value(raw: bytes) -> int:
    """The long of one zigzag varint (minimal, at most 64 bits: what the manifest layouts match)."""
    size = len(raw)
    if size == 1:
        result = raw[0]
    elif size == 2:
        result = raw[0] & 0x7F | raw[1] << 7
    elif size <= 4:  # sizes and counts up to 2**28
        whole = int.from_bytes(raw, "little")
        result = whole & 0x7F | whole >> 1 & 0x3F80 | whole >> 2 & 0x1FC000 | whole >> 3 & 0xFE00000
    elif size == 6:  # epoch milliseconds of this era
        whole = int.from_bytes(raw, "little")
        result = (
            whole & 0x7F
            | whole >> 1 & 0x3F80
            | whole >> 2 & 0x1FC000
            | whole >> 3 & 0xFE00000
            | whole >> 4 & 0x7F0000000
            | whole >> 5 & 0x3F800000000
        )
    else:
        result = shift = 0
        for b in raw:
            result |= (b & 0x7F) << shift
            shift += 7
    return (result >> 1) ^ -(result & 1)
