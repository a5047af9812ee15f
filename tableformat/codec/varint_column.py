"""A column of Avro longs (zigzag varints) decoded at once, for the entries of a manifest block.

The manifest decoder matches many entries of one layout and then has, per numeric field, a list of the varints'
bytes. Decoding them one call each costs more than matching the entries; when they all have the same width (a
table's files are mostly of one magnitude: sizes and row counts of a column share their byte count) the whole
column is decoded with a few whole-column integer operations instead:

* the varints are laid side by side in 8-byte slots of one big integer (little-endian, slot ``i`` holds varint
  ``i``'s bytes, the rest zeros);
* in every slot the 7 payload bits of byte ``k`` move down ``k`` bits (one mask and one shift per byte position,
  over all slots at once), which leaves each slot holding its varint's unsigned value;
* zigzag: when no value is odd (none negative), every value is its half, one shift of the whole integer.

Anything else (varints of mixed widths, wider than 8 bytes, or negative values) is decoded one by one by the caller's
decoder. Only minimal varints reach here (the layouts' patterns match nothing else), so 8 bytes hold at most 56 bits.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Sequence

_SLOT = 8
_MIN_BULK = 8
"""Below this many values a call per value is as quick."""
_PAYLOAD_OF_FIRST_BYTE = b"\x7f" + bytes(_SLOT - 1)
_HALF_OF_EVEN = bytes(b >> 1 for b in range(256))
_ODD_BYTES = bytes(range(1, 256, 2))

if array("Q").itemsize != _SLOT:  # pragma: no cover - every supported platform has 8-byte unsigned long long
    raise ImportError("array('Q') is not 8 bytes here")


def decode_column(raw: Sequence[bytes], one: Callable[[bytes], int]) -> list[int]:
    """The values of the zigzag varints ``raw`` (each minimal), in order; ``one`` decodes a single varint and is
    used whenever the column cannot be decoded at once."""
    count = len(raw)
    if count < _MIN_BULK:
        return list(map(one, raw))
    width = len(raw[0])
    joined = b"".join(raw)
    # Each varint has exactly one byte below 0x80, its last: when the joined bytes are count * width long and every
    # width-th byte is such a last byte, those are all the last bytes, so every varint is width bytes long.
    if width > _SLOT or len(joined) != count * width or not joined[width - 1 :: width].isascii():
        return list(map(one, raw))
    if width == 1:
        if joined.translate(None, _ODD_BYTES) != joined:  # a negative value
            return list(map(one, raw))
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
        return list(map(one, raw))
    values = array("Q", (unsigned >> 1).to_bytes(_SLOT * count, "little"))
    if sys.byteorder == "big":  # pragma: no cover - the slots are little-endian
        values.byteswap()
    return values.tolist()
