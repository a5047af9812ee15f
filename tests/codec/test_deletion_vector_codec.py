"""RoaringBitmaps, deletion vectors and hash index files: decoded from bytes built by hand from the formats' specs
(RoaringFormatSpec; Paimon's BitmapDeletionVector, Bitmap64DeletionVector, DeletionFileWriter, IntFileUtils), and
encoded to the same bytes."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tableformat.codec import deletion_vector_codec as dv
from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.model.index import DeletionVectorMeta

NO_RUN, RUN = 12346, 12347


def u16(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}H", *values)


def u32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def bitmap_body(values: list[int]) -> bytes:
    """An 8 KiB bitmap container: bit v of little-endian 64-bit words."""
    words = [0] * 1024
    for v in values:
        words[v // 64] |= 1 << (v % 64)
    return struct.pack("<1024Q", *words)


ARRAY_ONLY = u32(NO_RUN, 1) + u16(0, 2) + u32(16) + u16(1, 5, 9)
EVENS = list(range(0, 10000, 2))  # 5,000 values: a bitmap container (an array holds at most 4,096)
ARRAY_AND_BITMAP = u32(NO_RUN, 2) + u16(0, 0) + u16(1, len(EVENS) - 1) + u32(24, 26) + u16(7) + bitmap_body(EVENS)
# run cookie, two containers (fewer than 4: no offset header), the first a run container [10, 19], the second an array
RUN_AND_ARRAY = u32(RUN | (2 - 1) << 16) + bytes([0b01]) + u16(0, 9) + u16(2, 0) + u16(1, 10, 9) + u16(3)
# run cookie with 4 containers: the offset header is present; containers 0 and 3 are runs
FOUR_WITH_RUNS_HEADER = u32(RUN | (4 - 1) << 16) + bytes([0b1001]) + u16(0, 99, 1, 0, 2, 1, 3, 65535)
FOUR_WITH_RUNS_BODIES = [u16(1, 0, 99), u16(5), u16(1, 2), u16(1, 0, 65535)]


def with_offsets(header: bytes, bodies: list[bytes]) -> bytes:
    offsets, at = [], len(header) + 4 * len(bodies)
    for body in bodies:
        offsets.append(at)
        at += len(body)
    return header + u32(*offsets) + b"".join(bodies)


FOUR_WITH_RUNS = with_offsets(FOUR_WITH_RUNS_HEADER, FOUR_WITH_RUNS_BODIES)
FOUR_WITH_RUNS_VALUES = [*range(100), 65536 + 5, 2 * 65536 + 1, 2 * 65536 + 2, *range(3 * 65536, 4 * 65536)]

HAND_BUILT = [
    (u32(NO_RUN, 0), []),
    (ARRAY_ONLY, [1, 5, 9]),
    (ARRAY_AND_BITMAP, [7] + [65536 + v for v in EVENS]),
    (RUN_AND_ARRAY, [*range(10, 20), 2 * 65536 + 3]),
    (FOUR_WITH_RUNS, FOUR_WITH_RUNS_VALUES),
]


@pytest.mark.parametrize(("data", "values"), HAND_BUILT, ids=["empty", "array", "bitmap", "runs", "runs+offsets"])
def test_roaring32_decodes_and_encodes_hand_built_bitmaps(data: bytes, values: list[int]) -> None:
    assert dv.roaring32_from_bytes(data).tolist() == values
    assert dv.roaring32_to_bytes(values) == data  # run-optimized exactly as the hand-built bytes choose containers


def test_roaring32_reads_the_offset_header_variant_of_a_run_free_bitmap_with_many_containers() -> None:
    values = [k * 65536 + k for k in range(6)]
    bodies = [u16(k) for k in range(6)]
    header = u32(NO_RUN, 6) + b"".join(u16(k, 0) for k in range(6))
    data = with_offsets(header, bodies)
    assert dv.roaring32_from_bytes(data).tolist() == values
    assert dv.roaring32_to_bytes(values) == data


@pytest.mark.parametrize(
    "data",
    [
        b"",
        u32(99, 0),  # no cookie
        u32(NO_RUN, 1) + u16(0, 2) + u32(16) + u16(1, 5),  # fewer values than the header says
        u32(NO_RUN, 2) + u16(3, 0, 1, 0) + u32(24, 26) + u16(1, 1),  # keys not ascending
    ],
    ids=["empty", "cookie", "truncated", "keys"],
)
def test_malformed_roaring32_is_a_value_error(data: bytes) -> None:
    with pytest.raises(ValueError):
        dv.roaring32_from_bytes(data)


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 2**32 - 1), max_size=300) | st.sets(st.integers(0, 300_000), max_size=9000))
def test_roaring32_round_trips(values: set[int]) -> None:
    assert dv.roaring32_from_bytes(dv.roaring32_to_bytes(values)).tolist() == sorted(values)


def test_roaring64_is_a_count_then_keyed_32_bit_bitmaps() -> None:
    # dense keys 0..2 as Paimon writes them, key 1 empty
    data = struct.pack("<q", 3) + struct.pack("<i", 0) + ARRAY_ONLY
    data += struct.pack("<i", 1) + u32(NO_RUN, 0) + struct.pack("<i", 2) + RUN_AND_ARRAY
    expected = [1, 5, 9] + [(2 << 32) + v for v in [*range(10, 20), 2 * 65536 + 3]]
    assert dv.roaring64_from_bytes(data).tolist() == expected
    assert dv.roaring64_to_bytes(expected) == data
    sparse = struct.pack("<q", 1) + struct.pack("<i", 5) + ARRAY_ONLY  # CRoaring and Iceberg skip empty keys
    assert dv.roaring64_from_bytes(sparse).tolist() == [(5 << 32) + v for v in (1, 5, 9)]


def v1_vector(bitmap: bytes) -> bytes:
    body = struct.pack(">i", dv.BITMAP32_MAGIC) + bitmap
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def v2_vector(bitmap64: bytes) -> bytes:
    body = struct.pack("<i", dv.BITMAP64_MAGIC) + bitmap64
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_a_32_bit_deletion_vector_records_the_magic_and_bitmap_length() -> None:
    blob = v1_vector(ARRAY_ONLY)
    assert dv.deletion_vector_to_bytes([9, 1, 5, 5]) == (blob, 4 + len(ARRAY_ONLY))
    assert dv.deletion_vector_from_bytes(blob + b"next", 4 + len(ARRAY_ONLY), "f").tolist() == [1, 5, 9]
    assert dv.deletion_vector_from_bytes(blob, None, "f").tolist() == [1, 5, 9]


def test_a_64_bit_deletion_vector_records_its_whole_length() -> None:
    bitmap = struct.pack("<q", 1) + struct.pack("<i", 0) + ARRAY_ONLY
    blob = v2_vector(bitmap)
    assert dv.deletion_vector_to_bytes([1, 5, 9], bitmap64=True) == (blob, len(blob))
    assert dv.deletion_vector_from_bytes(blob, len(blob), "f").tolist() == [1, 5, 9]
    big = [3, (7 << 32) + 1]
    blob, length = dv.deletion_vector_to_bytes(big, bitmap64=True)
    assert dv.deletion_vector_from_bytes(blob, length, "f").tolist() == big


def test_a_32_bit_vector_refuses_positions_past_int_max() -> None:
    with pytest.raises(ValueError):
        dv.deletion_vector_to_bytes([2**31])


@pytest.mark.parametrize(
    ("blob", "length", "reason"),
    [
        (v1_vector(ARRAY_ONLY), 3 + len(ARRAY_ONLY), "records"),
        (v1_vector(ARRAY_ONLY)[:-1] + b"\x00", None, "CRC"),
        (v1_vector(ARRAY_ONLY)[:-3], None, "truncated"),
        (struct.pack(">ii", 8, 1234) + b"\x00" * 12, None, "magic"),
    ],
    ids=["length", "crc", "truncated", "magic"],
)
def test_a_bad_deletion_vector_is_corrupt_metadata(blob: bytes, length: int | None, reason: str) -> None:
    with pytest.raises(CorruptMetadataError, match=reason) as raised:
        dv.deletion_vector_from_bytes(blob, length, "index/index-x-0")
    assert "index/index-x-0" in str(raised.value)


def test_a_deletion_vector_file_is_a_version_byte_then_the_vectors_in_order() -> None:
    data, ranges = dv.deletion_vector_file_to_bytes({"data-b.parquet": [9, 1, 5], "data-a.parquet": range(10, 20)})
    first, second = v1_vector(ARRAY_ONLY), v1_vector(u32(RUN) + bytes([1]) + u16(0, 9) + u16(1, 10, 9))
    assert data == b"\x01" + first + second
    assert ranges == (
        DeletionVectorMeta(data_file_name="data-b.parquet", offset=1, length=len(first) - 8, cardinality=3),
        DeletionVectorMeta(
            data_file_name="data-a.parquet", offset=1 + len(first), length=len(second) - 8, cardinality=10
        ),
    )
    decoded = dv.deletion_vectors_from_file_bytes(data, ranges, "f")
    assert {name: positions.tolist() for name, positions in decoded.items()} == {
        "data-b.parquet": [1, 5, 9],
        "data-a.parquet": list(range(10, 20)),
    }
    with pytest.raises(UnsupportedFormatError, match="version 2"):
        dv.deletion_vectors_from_file_bytes(b"\x02" + data[1:], ranges, "f")


def test_a_hash_index_is_big_endian_int32s() -> None:
    assert dv.hash_index_to_bytes([1, -2, 2**31 - 1]) == bytes.fromhex("00000001fffffffe7fffffff")
    assert dv.hash_index_from_bytes(bytes.fromhex("00000001fffffffe"), "f") == [1, -2]
    with pytest.raises(CorruptMetadataError, match="int32"):
        dv.hash_index_from_bytes(b"\x00\x00\x01", "f")


def test_64_bit_positions_reach_paimons_max_value_and_no_further() -> None:
    top = dv.MAX_POSITION_64  # OptimizedRoaringBitmap64.MAX_VALUE: key 2^31 - 2, low bits 2^31
    assert top == ((2**31 - 2) << 32) | 2**31
    # Paimon writes a dense key array (2^31 - 1 bitmaps here); readers take sparse keys, so decode only
    sparse = struct.pack("<q", 1) + struct.pack("<i", 2**31 - 2) + u32(NO_RUN, 1) + u16(2**15, 0) + u32(16) + u16(0)
    assert dv.roaring64_from_bytes(sparse).tolist() == [top]
    with pytest.raises(ValueError):
        dv.deletion_vector_to_bytes([top + 1], bitmap64=True)
    with pytest.raises(ValueError, match="out of order or range"):
        dv.roaring64_from_bytes(struct.pack("<q", 1) + struct.pack("<i", 2**31 - 1) + ARRAY_ONLY)
