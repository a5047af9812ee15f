"""Arrow columns of int64 and string built from Python values straight from their buffers.

``pyarrow.array`` asks on its first call whether a value is a pandas object, which imports pandas (about 0.14 s)
wherever pandas is installed. Metadata commands (``tablefmt snapshots``) build their small tables here instead and
never load it (start-up: docs/benchmarks.md). The columns equal what ``pyarrow.array(values, type)`` gives.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_module

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

_LITTLE_ENDIAN = sys.byteorder == "little"
"""Arrow buffers are little-endian; elsewhere the columns are left to pyarrow.array."""


def _validity(values: Sequence[object]) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap of ``values`` (None when no value is None) and the number of nulls."""
    nulls = sum(1 for v in values if v is None)
    if nulls == 0:
        return None, 0
    bits = bytearray((len(values) + 7) // 8)
    for index, value in enumerate(values):
        if value is not None:
            bits[index // 8] |= 1 << (index % 8)
    return pa.py_buffer(bytes(bits)), nulls


def int64_column(values: Sequence[int | None]) -> pa.Array:
    """``values`` as an Arrow int64 array (None as null)."""
    if not _LITTLE_ENDIAN:
        return pa.array(values, pa.int64())
    validity, nulls = _validity(values)
    data = array("q", (0 if v is None else v for v in values))
    return pa.Array.from_buffers(pa.int64(), len(values), [validity, pa.py_buffer(data)], null_count=nulls)


def string_column(values: Sequence[str | None]) -> pa.Array:
    """``values`` as an Arrow string (utf8) array (None as null)."""
    if not _LITTLE_ENDIAN:
        return pa.array(values, pa.string())
    validity, nulls = _validity(values)
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = array("i", [0])
    end = 0
    for item in encoded:
        end += len(item)
        offsets.append(end)
    buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers, null_count=nulls)
