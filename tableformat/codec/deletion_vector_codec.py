"""Deletion-vector index files, the RoaringBitmap bytes inside them, and hash index files.

A deletion-vector file (Paimon's ``DeletionVectorsIndexFile`` written by ``DeletionFileWriter``) is one version byte
(1) followed by one serialized vector per data file, at the offsets its :class:`DeletionVectorMeta` records. Two
vector layouts exist, told apart by their magic number (``DeletionVector.read``):

* 32-bit (``BitmapDeletionVector``): big-endian int32 ``n``, then ``n`` bytes = big-endian magic 1581511376 and a
  32-bit RoaringBitmap in the portable format, then a big-endian CRC-32 of those ``n`` bytes. Recorded length: ``n``.
* 64-bit (``Bitmap64DeletionVector``, ``deletion-vectors.bitmap64``): big-endian int32 ``n``, then ``n`` bytes =
  little-endian magic 1681511377 and an ``OptimizedRoaringBitmap64`` (little-endian int64 count, then per high
  32-bit key: little-endian int32 key and a portable 32-bit bitmap of the low bits), then the big-endian CRC-32 of
  those ``n`` bytes. Recorded length: ``n + 8``.

The portable RoaringBitmap format (https://github.com/RoaringBitmap/RoaringFormatSpec) is decoded here with numpy
(imported at first use): array, bitmap and run containers, with and without the run cookie. A hash index file
(``HashIndexFile``, ``IntFileUtils``) is a plain sequence of big-endian int32s.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.lazy_module import lazy_module
from tableformat.model.index import DeletionVectorMeta

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

DV_FILE_VERSION = 1
"""``DeletionVectorsIndexFile.VERSION_ID_V1``: the first byte of every deletion-vector file."""
BITMAP32_MAGIC = 1581511376
BITMAP64_MAGIC = 1681511377
_MAGIC32 = struct.pack(">i", BITMAP32_MAGIC)
_MAGIC64 = struct.pack("<i", BITMAP64_MAGIC)

SERIAL_COOKIE_NO_RUN = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
"""With the run cookie, the offset header is written only for this many containers or more."""
MAX_POSITION_64 = 0x7FFFFFFE_80000000
"""``OptimizedRoaringBitmap64.MAX_VALUE``: high key 2^31 - 2, low bits 2^31."""
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192


class _Corrupt(ValueError):
    """A malformed bitmap; reported as CorruptMetadataError naming the file."""


# --- 32-bit RoaringBitmap, portable format --------------------------------------------------------------------
def _container_values(kind: str, body: memoryview, cardinality: int, runs: int) -> Any:
    """The low 16 bits of one container's values, ascending (uint32)."""
    if kind == "array":
        return np.frombuffer(body, dtype="<u2", count=cardinality).astype(np.uint32)
    if kind == "bitmap":
        bits = np.unpackbits(np.frombuffer(body, dtype=np.uint8, count=_BITMAP_BYTES), bitorder="little")
        return np.flatnonzero(bits).astype(np.uint32)
    pairs = np.frombuffer(body, dtype="<u2", count=2 * runs).astype(np.int64)
    starts, counts = pairs[0::2], pairs[1::2] + 1
    total = int(counts.sum())
    first_index = np.cumsum(counts) - counts
    values = np.repeat(starts - first_index, counts) + np.arange(total, dtype=np.int64)
    if total and int(values[-1]) > 0xFFFF:
        raise _Corrupt("run container runs past 65535")
    return values.astype(np.uint32)


def _decode_roaring32(data: memoryview) -> tuple[Any, int]:
    """(the values as ascending uint32, the bytes consumed) of a portable 32-bit RoaringBitmap."""
    try:
        (cookie,) = struct.unpack_from("<I", data, 0)
        pos = 4
        if cookie & 0xFFFF == SERIAL_COOKIE:
            size = (cookie >> 16) + 1
            run_flags = bytes(data[pos : pos + (size + 7) // 8])
            pos += (size + 7) // 8
        elif cookie == SERIAL_COOKIE_NO_RUN:
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            run_flags = b""
        else:
            raise _Corrupt(f"not a RoaringBitmap (cookie {cookie})")
        header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos).astype(np.int64)
        pos += 4 * size
        if not run_flags or size >= NO_OFFSET_THRESHOLD:
            pos += 4 * size  # the offset header: the containers follow it in order, so it is not needed
        parts = []
        previous_key = -1
        for i in range(size):
            key, cardinality = int(header[2 * i]), int(header[2 * i + 1]) + 1
            if key <= previous_key:
                raise _Corrupt("container keys are not ascending")
            previous_key = key
            if run_flags and run_flags[i // 8] >> (i % 8) & 1:
                (runs,) = struct.unpack_from("<H", data, pos)
                values = _container_values("run", data[pos + 2 : pos + 2 + 4 * runs], cardinality, runs)
                pos += 2 + 4 * runs
            elif cardinality <= _ARRAY_MAX:
                values = _container_values("array", data[pos : pos + 2 * cardinality], cardinality, 0)
                pos += 2 * cardinality
            else:
                values = _container_values("bitmap", data[pos : pos + _BITMAP_BYTES], cardinality, 0)
                pos += _BITMAP_BYTES
            if len(values) != cardinality:
                raise _Corrupt(f"container {key} holds {len(values)} values, its header says {cardinality}")
            parts.append(values | np.uint32(key << 16))
    except (struct.error, ValueError) as exc:  # np.frombuffer raises ValueError on short buffers too
        raise _Corrupt(str(exc)) from None
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint32)
    return values, pos


def _runs(low: Any) -> tuple[Any, Any]:
    """(run starts, run lengths - 1) of ascending distinct uint16 values."""
    breaks = np.flatnonzero(np.diff(low) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(low)])) - 1
    return low[starts], low[ends] - low[starts]


def _encode_roaring32(values: Any) -> bytes:
    """The portable serialization of ascending distinct uint32 ``values``, each container in the form RoaringBitmap's
    ``runOptimize`` leaves it (as Paimon serializes): a run container where that is strictly smaller, otherwise an
    array up to 4,096 values and a bitmap above."""
    keys = (values >> 16).astype(np.int64)
    bounds = np.flatnonzero(np.diff(keys)) + 1
    container_keys = [int(keys[i]) for i in np.concatenate(([0], bounds)).astype(np.int64)] if len(values) else []
    descriptive, bodies, run_flags = [], [], []
    for key, low in zip(container_keys, np.split((values & 0xFFFF).astype(np.int64), bounds), strict=False):
        starts, lengths = _runs(low)
        plain_size = 2 * len(low) if len(low) <= _ARRAY_MAX else _BITMAP_BYTES
        run_flags.append(2 + 4 * len(starts) < plain_size)
        if run_flags[-1]:
            pairs = np.empty(2 * len(starts), dtype="<u2")
            pairs[0::2], pairs[1::2] = starts, lengths
            bodies.append(struct.pack("<H", len(starts)) + pairs.tobytes())
        elif len(low) <= _ARRAY_MAX:
            bodies.append(low.astype("<u2").tobytes())
        else:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
        descriptive.append(struct.pack("<HH", key, len(low) - 1))
    size = len(container_keys)
    if any(run_flags):
        flags = bytearray((size + 7) // 8)
        for i, is_run in enumerate(run_flags):
            flags[i // 8] |= is_run << (i % 8)
        start = struct.pack("<I", SERIAL_COOKIE | (size - 1) << 16) + bytes(flags) + b"".join(descriptive)
        with_offsets = size >= NO_OFFSET_THRESHOLD
    else:
        start = struct.pack("<II", SERIAL_COOKIE_NO_RUN, size) + b"".join(descriptive)
        with_offsets = True
    if not with_offsets:
        return start + b"".join(bodies)
    offsets, offset = [], len(start) + 4 * size
    for body in bodies:
        offsets.append(offset)
        offset += len(body)
    return start + struct.pack(f"<{size}I", *offsets) + b"".join(bodies)


def _positions(values: Iterable[int] | Any, limit: int) -> Any:
    """Distinct ascending positions as uint64, each in [0, limit]."""
    array = np.unique(np.asarray(list(values) if not hasattr(values, "dtype") else values, dtype=np.int64))
    if len(array) and (int(array[0]) < 0 or int(array[-1]) > limit):
        raise ValueError(f"row positions must lie in [0, {limit}]")
    return array.astype(np.uint64)


def roaring32_from_bytes(data: bytes | memoryview) -> Any:
    """The values of a portable 32-bit RoaringBitmap, ascending (numpy uint32); ValueError when malformed."""
    values, _ = _decode_roaring32(memoryview(data))
    return values


def roaring32_to_bytes(values: Iterable[int] | Any) -> bytes:
    """The portable serialization of a set of 32-bit unsigned values (run-optimized, as Paimon writes it)."""
    return _encode_roaring32(_positions(values, 0xFFFFFFFF).astype(np.uint32))


def _decode_roaring64(data: memoryview) -> Any:
    try:
        (count,) = struct.unpack_from("<q", data, 0)
        pos, previous_key, parts = 8, -1, []
        if count < 0:
            raise _Corrupt(f"negative bitmap count {count}")
        for _ in range(count):
            (key,) = struct.unpack_from("<i", data, pos)
            if key <= previous_key or key > 0x7FFFFFFE:
                raise _Corrupt(f"64-bit bitmap key {key} out of order or range")
            values, used = _decode_roaring32(data[pos + 4 :])
            parts.append(values.astype(np.uint64) | np.uint64(key << 32))
            previous_key, pos = key, pos + 4 + used
    except struct.error as exc:
        raise _Corrupt(str(exc)) from None
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def roaring64_from_bytes(data: bytes | memoryview) -> Any:
    """The values of an ``OptimizedRoaringBitmap64`` serialization, ascending (numpy uint64)."""
    return _decode_roaring64(memoryview(data))


def roaring64_to_bytes(values: Iterable[int] | Any) -> bytes:
    """``OptimizedRoaringBitmap64.serialize`` of a set of positions in [0, MAX_POSITION_64]: one bitmap per high key
    from 0 to the highest, the empty ones included, as Paimon writes its dense bitmap array (so a position with high
    key k writes k + 1 bitmaps)."""
    positions = _positions(values, MAX_POSITION_64)
    keys = (positions >> np.uint64(32)).astype(np.int64)
    count = int(keys[-1]) + 1 if len(positions) else 0
    parts = [struct.pack("<q", count)]
    for key in range(count):
        low = positions[keys == key] & np.uint64(0xFFFFFFFF)
        parts.append(struct.pack("<i", key) + _encode_roaring32(low.astype(np.uint32)))
    return b"".join(parts)


# --- one deletion vector ------------------------------------------------------------------------------------------
def deletion_vector_span(length: int) -> int:
    """How many bytes from a vector's offset hold it whatever its layout (``length`` as recorded): the 32-bit layout
    takes ``length + 8``, the 64-bit one ``length``."""
    return length + 8


def deletion_vector_from_bytes(data: bytes | memoryview, length: int | None, path: str) -> Any:
    """The deleted row positions (ascending numpy int64) of the vector that starts ``data`` (its length prefix first;
    trailing bytes are ignored). ``length``, the recorded length, is checked when given, and so is the CRC.
    CorruptMetadataError naming ``path`` when the bytes are not a deletion vector."""
    view = memoryview(data)
    try:
        (size,) = struct.unpack_from(">i", view, 0)
        magic = bytes(view[4:8])
        if magic == _MAGIC32:
            expected, decode = size, roaring32_from_bytes
        elif magic == _MAGIC64:
            expected, decode = size + 8, roaring64_from_bytes
        else:
            raise _Corrupt(f"unknown deletion vector magic number {magic.hex()}")
        if length is not None and length != expected:
            raise _Corrupt(f"deletion vector of {expected} bytes where the index manifest records {length}")
        body = view[4 : 4 + size]
        if size < 4 or len(body) != size or len(view) < 8 + size:
            raise _Corrupt("deletion vector is truncated")
        (crc,) = struct.unpack_from(">I", view, 4 + size)
        if zlib.crc32(body) != crc:
            raise _Corrupt("deletion vector CRC mismatch")
        return decode(body[4:]).astype(np.int64)
    except (struct.error, ValueError) as exc:  # _Corrupt is a ValueError
        raise CorruptMetadataError(path, f"invalid deletion vector ({exc})") from None


def deletion_vector_to_bytes(positions: Iterable[int] | Any, *, bitmap64: bool = False) -> tuple[bytes, int]:
    """(the serialized vector, the length Paimon records for it) of a set of deleted row positions: 32-bit
    (``BitmapDeletionVector``, positions up to 2^31 - 1) unless ``bitmap64`` (``Bitmap64DeletionVector``)."""
    if bitmap64:
        body = _MAGIC64 + roaring64_to_bytes(positions)
    else:
        body = _MAGIC32 + _encode_roaring32(_positions(positions, 0x7FFFFFFF).astype(np.uint32))
    blob = struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))
    return blob, len(blob) if bitmap64 else len(body)


# --- deletion-vector and hash index files ---------------------------------------------------------------------
def deletion_vector_file_to_bytes(
    vectors: Mapping[str, Iterable[int] | Any], *, bitmap64: bool = False
) -> tuple[bytes, tuple[DeletionVectorMeta, ...]]:
    """A deletion-vector index file holding ``vectors`` (data file name -> deleted positions) in the mapping's order,
    and their ranges, as ``DeletionFileWriter`` writes and records them (cardinality included)."""
    chunks, ranges, offset = [bytes([DV_FILE_VERSION])], [], 1
    for data_file, positions in vectors.items():
        distinct = _positions(positions, MAX_POSITION_64)
        blob, length = deletion_vector_to_bytes(distinct, bitmap64=bitmap64)
        ranges.append(
            DeletionVectorMeta(data_file_name=data_file, offset=offset, length=length, cardinality=len(distinct))
        )
        chunks.append(blob)
        offset += len(blob)
    return b"".join(chunks), tuple(ranges)


def deletion_vector_file_version(data: bytes, path: str) -> int:
    """The version byte of a deletion-vector file; UnsupportedFormatError for any version but 1."""
    if not data:
        raise CorruptMetadataError(path, "empty deletion vector file")
    if data[0] != DV_FILE_VERSION:
        raise UnsupportedFormatError(f"{path}: deletion vector file version {data[0]} (supported: {DV_FILE_VERSION})")
    return data[0]


def deletion_vectors_from_file_bytes(data: bytes, ranges: Iterable[DeletionVectorMeta], path: str) -> dict[str, Any]:
    """Data file name -> deleted positions (numpy int64) of every range of a whole deletion-vector file."""
    deletion_vector_file_version(data, path)
    view = memoryview(data)
    return {r.data_file_name: deletion_vector_from_bytes(view[r.offset :], r.length, path) for r in ranges}


def hash_index_to_bytes(hashes: Iterable[int]) -> bytes:
    """A hash index file: the ints as big-endian int32 (``IntFileUtils.writeInts``)."""
    values = list(hashes)
    return struct.pack(f">{len(values)}i", *values)


def hash_index_from_bytes(data: bytes, path: str) -> list[int]:
    """The ints of a hash index file."""
    if len(data) % 4:
        raise CorruptMetadataError(path, f"hash index of {len(data)} bytes is not a whole number of int32s")
    return list(struct.unpack(f">{len(data) // 4}i", data))
