"""entry_codec decodes and encodes manifests exactly as the fastavro reference (avro_codec) does.

Reading: ``read_entries`` = ``avro_codec.read_manifest`` and ``read_entry_records`` = their EntryRecords, outcome
for outcome (values or the same CorruptMetadataError), on our files, pypaimon's, other writer schemas, encodings
fastavro reads but does not write, and corrupt or truncated data. Writing: ``write_entries`` and ``write_copies``
give the reference's bytes, byte for byte, with the same sync marker.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codec_projection import SAMPLES, _entry, _meta, _outcome

from tableformat.codec import avro_codec, avro_projection, entry_codec, entry_decoder
from tableformat.model import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

SYNC = b"0123456789abcdef"


ENTRIES = [
    _entry(0),
    _entry(1, extra_files=("data-00001-0.parquet.index",), embedded_index=b"\x00\x01idx"),
    _entry(2, external_path="s3://elsewhere/data-00002-0.parquet", value_stats_cols=("id",), write_cols=("id",)),
    _entry(3, creation_time_ms=None, delete_row_count=None, file_source=None, first_row_id=7),
    _entry(4, file_name="dätä-ünïcode-0.parquet", extra_files=("a", "b", "c")),
    _entry(5, file_size=2**62, level=2**31 - 1, min_sequence_number=-(2**63), max_sequence_number=2**63 - 1),
    _entry(6, embedded_index=b"", value_stats=SimpleStats(null_counts=None), key_stats=SimpleStats(null_counts=())),
    _entry(7, creation_time_ms=-1, first_row_id=-(2**63), value_stats_cols=()),
]


def _reference_records(data: bytes) -> list[entry_codec.EntryRecord]:
    return [entry_codec.entry_record(e) for e in avro_codec.read_manifest(data, "manifest/m")]


def _assert_reads_like_the_reference(data: bytes) -> None:
    assert _outcome(entry_codec.read_entries, data) == _outcome(avro_codec.read_manifest, data)
    assert _outcome(entry_codec.read_entry_records, data) == _outcome(lambda d, p: _reference_records(d), data)


def _fast(data: bytes) -> bool:
    return entry_codec._fast_decode(data, True) is not None and entry_codec._fast_decode(data, False) is not None


# --- our own files ---------------------------------------------------------------------------------------------
def test_write_entries_is_byte_for_byte_the_reference() -> None:
    for entries in ([], ENTRIES, [_entry(i) for i in range(3000)], ENTRIES * 400):
        data = entry_codec.write_entries(entries, sync_marker=SYNC)
        assert data == avro_codec.write_manifest(entries, sync_marker=SYNC)
        if entries:
            assert len(fastavro.reader(io.BytesIO(data)).metadata) == 2


@pytest.mark.parametrize("level", [1, 3, 9])
def test_each_zstd_level_is_byte_for_byte_the_reference(level: int) -> None:
    entries = [_entry(i) for i in range(3000)]
    data = entry_codec.write_entries(entries, sync_marker=SYNC, level=level)
    assert data == avro_codec.write_manifest(entries, sync_marker=SYNC, level=level)
    records = entry_codec.read_entry_records(data, "manifest/m")
    copies = entry_codec.write_copies(FileKind.DELETE, records, sync_marker=SYNC, level=level)
    assert copies == avro_codec.write_manifest([e.as_kind(FileKind.DELETE) for e in entries], sync_marker=SYNC,
                                               level=level)  # fmt: skip
    metas = [_meta(i) for i in range(500)]
    listed = entry_codec.write_manifest_list(metas, sync_marker=SYNC, level=level)
    assert listed == avro_codec.write_manifest_list(metas, sync_marker=SYNC, level=level)
    assert entry_codec.read_entries(data, "manifest/m") == entries
    assert (data == entry_codec.write_entries(entries, sync_marker=SYNC)) is (level == 3)  # fastavro's default: 3


def test_reading_our_files_takes_the_fast_path_and_matches() -> None:
    for entries in (ENTRIES, [_entry(i) for i in range(3000)], ENTRIES * 50):
        data = entry_codec.write_entries(entries)
        assert _fast(data)
        assert entry_codec.read_entries(data, "manifest/m") == entries == avro_codec.read_manifest(data, "m")
        records = entry_codec.read_entry_records(data, "manifest/m")
        assert records == _reference_records(data)
        assert [r.identifier() for r in records] == [e.identifier() for e in entries]
        assert [type(r.kind) for r in records] == [FileKind] * len(entries)


def _parses(read: Callable[[], Any]) -> int:
    """How many entries ``read()`` parses field by field (the others matched a learnt layout)."""
    parsed = 0
    original = entry_decoder._parse

    def counting(buf: bytes, pos: int) -> Any:
        nonlocal parsed
        parsed += 1
        return original(buf, pos)

    entry_decoder._parse = counting  # type: ignore[assignment]
    try:
        read()
    finally:
        entry_decoder._parse = original
    return parsed


def test_layouts_are_learnt_and_give_the_same_entries() -> None:
    """3,000 entries of a few layouts: most are matched by a learnt layout, not parsed field by field."""
    entries = [_entry(i) for i in range(3000)]
    data = entry_codec.write_entries(entries)
    assert _parses(lambda: entry_codec.read_entries(data, "manifest/m") == entries) < 20
    assert _parses(lambda: entry_codec.read_entry_records(data, "manifest/m") == _reference_records(data)) < 20
    assert entry_codec.read_entries(data, "manifest/m") == entries
    assert entry_codec.read_entry_records(data, "manifest/m") == _reference_records(data)


def test_layouts_of_an_earlier_file_make_room_for_the_next_files() -> None:
    plain = SimpleStats()
    six = [_entry(i, extra_files=(f"x{i % 6}",), value_stats=plain, level=0) for i in range(600)]  # 6 layouts
    other = [_entry(i, file_name=f"other-table-data-{i:06d}.parquet", level=4, value_stats=plain) for i in range(900)]
    for entries in (six, other, six, other):
        data = entry_codec.write_entries(entries)
        assert _parses(lambda d=data: entry_codec.read_entries(d, "m")) <= 12
        assert entry_codec.read_entries(data, "m") == entries


def test_more_layouts_than_a_file_keeps_still_read_exactly() -> None:
    entries = [_entry(i, extra_files=(f"x{i % 12}",)) for i in range(600)]  # 24 layouts, taken in turn
    data = entry_codec.write_entries(entries)
    assert entry_codec.read_entries(data, "m") == entries
    assert entry_codec.read_entry_records(data, "m") == _reference_records(data)


def test_a_file_of_unrepeated_layouts_gives_layouts_up() -> None:
    entries = [_entry(i, file_name="f" * (i + 1)) for i in range(400)]  # a file name of another length each
    data = entry_codec.write_entries(entries)
    learner = entry_decoder.Learner(False)
    found = avro_projection.container_blocks(data, lambda text: True)
    assert found is not None
    out: list[Any] = []
    for count, block in found[1]:
        assert entry_decoder.decode_block(block, count, out, learner) == len(block)
    assert learner.known == [] and learner.matched == 0
    assert out == _reference_records(data)
    assert entry_codec.read_entries(data, "m") == entries


def test_copies_are_the_reference_bytes_of_the_entries_under_the_other_kind() -> None:
    for entries in (ENTRIES, [_entry(i) for i in range(2000)]):
        data = entry_codec.write_entries(entries)
        records = entry_codec.read_entry_records(data, "manifest/m")
        for kind in FileKind:
            expected = avro_codec.write_manifest([e.as_kind(kind) for e in entries], sync_marker=SYNC)
            assert entry_codec.write_copies(kind, records, sync_marker=SYNC) == expected
        assert entry_codec.write_copies(FileKind.DELETE, [], sync_marker=SYNC) == avro_codec.write_manifest(
            [], sync_marker=SYNC
        )


def test_a_body_is_the_entry_encoded_after_version_and_kind() -> None:
    parsed = fastavro.parse_schema(avro_codec.MANIFEST_ENTRY_SCHEMA)
    for entry in ENTRIES:
        encoded = io.BytesIO()
        fastavro.schemaless_writer(encoded, parsed, avro_codec.entry_to_record(entry))
        assert entry_codec.entry_record(entry).body == encoded.getvalue()[2:]


# --- any entry -------------------------------------------------------------------------------------------------
_INT64 = st.integers(-(2**63), 2**63 - 1)
_SMALL = st.integers(-200, 70_000)
_LONG = st.one_of(_SMALL, _INT64)
_TEXT = st.text(max_size=12)
_STRINGS = st.lists(_TEXT, max_size=3).map(tuple)
_COUNTS = st.one_of(st.none(), st.lists(st.one_of(st.none(), _LONG), max_size=3).map(tuple))
_ROWS = st.binary(max_size=24)
_STATS = st.builds(SimpleStats, min_values=_ROWS, max_values=_ROWS, null_counts=_COUNTS)
_FILES = st.builds(
    DataFileMeta,
    file_name=_TEXT,
    file_size=_LONG,
    row_count=_LONG,
    min_key=st.binary(max_size=20),
    max_key=st.binary(max_size=20),
    key_stats=_STATS,
    value_stats=_STATS,
    min_sequence_number=_LONG,
    max_sequence_number=_LONG,
    schema_id=_SMALL,
    level=_SMALL,
    extra_files=_STRINGS,
    creation_time_ms=st.one_of(st.none(), _LONG),
    delete_row_count=st.one_of(st.none(), _LONG),
    embedded_index=st.one_of(st.none(), st.binary(max_size=10)),
    file_source=st.one_of(st.none(), _SMALL),
    value_stats_cols=st.one_of(st.none(), _STRINGS),
    external_path=st.one_of(st.none(), _TEXT),
    first_row_id=st.one_of(st.none(), _LONG),
    write_cols=st.one_of(st.none(), _STRINGS),
)
_ENTRIES = st.builds(
    ManifestEntry, kind=st.sampled_from(FileKind), partition=st.binary(max_size=40), bucket=_SMALL,
    total_buckets=_SMALL, file=_FILES,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_ENTRIES, min_size=1, max_size=6), st.integers(1, 4))
@pytest.mark.slow
def test_any_entries_round_trip_exactly(entries: list[ManifestEntry], repeat: int) -> None:
    entries = entries * repeat  # repeated layouts: learnt and matched
    data = entry_codec.write_entries(entries, sync_marker=SYNC)
    assert data == avro_codec.write_manifest(entries, sync_marker=SYNC)
    _assert_reads_like_the_reference(data)
    if _outcome(avro_codec.read_manifest, data)[0] == "ok":  # (creation times beyond datetime's range are not)
        records = entry_codec.read_entry_records(data, "manifest/m")
        for kind in FileKind:
            copies = entry_codec.write_copies(kind, records, sync_marker=SYNC)
            assert copies == avro_codec.write_manifest([e.as_kind(kind) for e in entries], sync_marker=SYNC)


@settings(max_examples=60, deadline=None)
@given(_ENTRIES, st.lists(st.tuples(_TEXT, _LONG, _LONG, st.binary(max_size=30)), min_size=1, max_size=40))
def test_entries_that_differ_in_varying_fields_only(base: ManifestEntry, changes: list[tuple[Any, ...]]) -> None:
    """Same layout or nearly: names, sizes, sequence numbers and statistics rows vary (what layouts capture)."""
    entries = [
        dataclasses.replace(
            base,
            file=dataclasses.replace(
                base.file, file_name=name, file_size=size, max_sequence_number=seq,
                value_stats=dataclasses.replace(base.file.value_stats, min_values=row),
            ),
        )
        for name, size, seq, row in changes
    ]  # fmt: skip
    data = entry_codec.write_entries(entries, sync_marker=SYNC)
    assert data == avro_codec.write_manifest(entries, sync_marker=SYNC)
    _assert_reads_like_the_reference(data)


def test_values_the_fast_encoder_leaves_to_the_reference_fail_alike() -> None:
    for bad in (
        dataclasses.replace(ENTRIES[0], bucket=2**63),
        dataclasses.replace(ENTRIES[0], partition="not bytes"),  # type: ignore[arg-type]
        dataclasses.replace(ENTRIES[0], file=dataclasses.replace(ENTRIES[0].file, file_name="\ud800")),
        dataclasses.replace(ENTRIES[0], file=dataclasses.replace(ENTRIES[0].file, row_count=None)),  # type: ignore[arg-type]
    ):
        try:
            expected: Any = avro_codec.write_manifest([bad], sync_marker=SYNC)
        except Exception as exc:  # whatever fastavro raises, the fast path must raise too
            with pytest.raises(type(exc)):
                entry_codec.write_entries([bad], sync_marker=SYNC)
        else:
            assert entry_codec.write_entries([bad], sync_marker=SYNC) == expected


# --- what the fast path leaves to the reference ----------------------------------------------------------------
def _null_container(schema: Any, records: Sequence[bytes]) -> bytes:
    """An uncompressed container of hand-encoded records (one block)."""
    empty = io.BytesIO()
    fastavro.writer(empty, schema, [], codec="null", sync_marker=SYNC)
    block = b"".join(records)
    sizes = entry_decoder.long_bytes(len(records)) + entry_decoder.long_bytes(len(block))
    return empty.getvalue() + sizes + block + SYNC


def _encoded(entry: ManifestEntry) -> bytes:
    return entry_codec._KIND_BYTES[entry.kind] + entry_codec._body(entry)


def _changed(entry: ManifestEntry, old: bytes, new: bytes) -> bytes:
    encoded = _encoded(entry)
    assert encoded.count(old) == 1
    return encoded.replace(old, new)


MARKED = _entry(9, file_name="marker-file", extra_files=("xa", "xb"), file_size=12345, first_row_id=2**63 - 1)
TWO_STRINGS = b"\x04\x04xa\x04xb\x00"
MAX_LONG = b"\xfe" + b"\xff" * 8 + b"\x01"


@pytest.mark.parametrize(
    "encoded",
    [
        pytest.param(_changed(MARKED, TWO_STRINGS, b"\x02\x04xa\x02\x04xb\x00"), id="array-in-two-blocks"),
        pytest.param(_changed(MARKED, TWO_STRINGS, b"\x03\x08\x04xa\x04xb\x00"), id="array-with-byte-size"),
        pytest.param(_changed(MARKED, b"file\xf2\xc0\x01", b"file\xf2\xc0\x81\x00"), id="long-not-minimal"),
        pytest.param(_changed(MARKED, MAX_LONG, MAX_LONG[:-1] + b"\x03"), id="beyond-64-bits"),
        pytest.param(b"\x06" + _encoded(MARKED)[1:], id="version-3"),
        pytest.param(_encoded(MARKED)[:-1] + b"\x02\x02\x0a\x00", id="write-cols-sequences-set"),
    ],
)
def test_encodings_fastavro_does_not_write_go_to_the_reference(encoded: bytes) -> None:
    data = _null_container(avro_codec.MANIFEST_ENTRY_SCHEMA, [_encoded(ENTRIES[0]), encoded, _encoded(ENTRIES[1])])
    assert entry_codec._fast_decode(data, False) is None
    _assert_reads_like_the_reference(data)
    if _outcome(avro_codec.read_manifest, data)[0] == "ok":
        # The records' bodies are the reference's encoding of what it decoded: copies are its bytes.
        entries = avro_codec.read_manifest(data, "m")
        records = entry_codec.read_entry_records(data, "manifest/m")
        expected = avro_codec.write_manifest([e.as_kind(FileKind.DELETE) for e in entries], sync_marker=SYNC)
        assert entry_codec.write_copies(FileKind.DELETE, records, sync_marker=SYNC) == expected


def test_other_writer_schemas_and_codecs_go_to_the_reference() -> None:
    java_style = json.loads(json.dumps(avro_codec.MANIFEST_ENTRY_SCHEMA))
    java_style["fields"][-1]["type"]["fields"] = java_style["fields"][-1]["type"]["fields"][:-4]
    records = [avro_codec.entry_to_record(e) for e in ENTRIES]
    for schema, codec in ((java_style, "zstandard"), (avro_codec.MANIFEST_ENTRY_SCHEMA, "deflate")):
        buffer = io.BytesIO()
        fastavro.writer(buffer, schema, records, codec=codec)
        data = buffer.getvalue()
        assert _fast(data) == (schema is avro_codec.MANIFEST_ENTRY_SCHEMA)  # deflate is decompressed too
        _assert_reads_like_the_reference(data)


def test_creation_times_beyond_datetime_fail_like_the_reference() -> None:
    for millis in (253_402_300_800_000, -62_135_596_800_001, 2**62, 253_402_300_799_999, -62_135_596_800_000):
        data = entry_codec.write_entries([_entry(0, creation_time_ms=millis)] * 3)
        _assert_reads_like_the_reference(data)


def test_creation_times_convert_exactly() -> None:
    """The reference once converted with float seconds and was off by one millisecond for some values."""
    rng = random.Random(5)
    values = [rng.randint(-30_000_000_000_000, 30_000_000_000_000) for _ in range(3000)] + [-8_697_814_928_376]
    entries = [_entry(0, creation_time_ms=v) for v in values]
    data = entry_codec.write_entries(entries)
    assert [e.file.creation_time_ms for e in avro_codec.read_manifest(data, "m")] == values
    assert [e.file.creation_time_ms for e in entry_codec.read_entries(data, "m")] == values


# --- corrupt data ----------------------------------------------------------------------------------------------
def test_truncated_and_garbled_files_fail_exactly_like_the_reference() -> None:
    data = entry_codec.write_entries(ENTRIES[:4] * 3)
    for cut in range(len(data)):
        _assert_reads_like_the_reference(data[:cut])
    rng = random.Random(7)
    for _ in range(300):
        garbled = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            garbled[rng.randrange(len(garbled))] = rng.randrange(256)
        _assert_reads_like_the_reference(bytes(garbled))


@pytest.mark.slow
def test_uncompressed_bit_flips_fail_or_match_like_the_reference() -> None:
    """With no compression, flipped bits reach the decoder itself, layouts included (entries repeat)."""
    data = _null_container(avro_codec.MANIFEST_ENTRY_SCHEMA, [_encoded(e) for e in ENTRIES * 3])
    assert _fast(data)
    rng = random.Random(11)
    for _ in range(2000):
        garbled = bytearray(data)
        garbled[rng.randrange(len(garbled))] ^= 1 << rng.randrange(8)
        _assert_reads_like_the_reference(bytes(garbled))


# --- pypaimon's files ------------------------------------------------------------------------------------------
def test_pypaimon_written_manifests_read_and_copy_exactly() -> None:
    samples = [p for p in sorted(SAMPLES.glob("*/manifest/manifest-*")) if "manifest-list" not in p.name]
    assert len(samples) == 9  # make_samples.py: 3 tables
    for path in samples:
        data = path.read_bytes()
        assert _fast(data), path
        entries = avro_codec.read_manifest(data, str(path))
        assert entry_codec.read_entries(data, str(path)) == entries
        records = entry_codec.read_entry_records(data, str(path))
        assert records == _reference_records(data)
        sync = data[-16:]  # pypaimon wrote it with fastavro: the same bytes again, given its sync marker
        assert entry_codec.write_entries(entries, sync_marker=sync) == data
        assert entry_codec.write_copies(entries[0].kind, records[:1], sync_marker=sync) == avro_codec.write_manifest(
            entries[:1], sync_marker=sync
        )
        deletes = [e.as_kind(FileKind.DELETE) for e in entries]
        assert entry_codec.write_copies(FileKind.DELETE, records, sync_marker=SYNC) == avro_codec.write_manifest(
            deletes, sync_marker=SYNC
        )


# --- manifest lists --------------------------------------------------------------------------------------------
_OPT_INT = st.one_of(st.none(), _SMALL)
_METAS = st.builds(
    ManifestFileMeta, file_name=_TEXT, file_size=_LONG, num_added_files=_LONG, num_deleted_files=_LONG,
    partition_stats=_STATS, schema_id=_LONG, min_bucket=_OPT_INT, max_bucket=_OPT_INT, min_level=_OPT_INT,
    max_level=_OPT_INT, min_row_id=st.one_of(st.none(), _LONG), max_row_id=st.one_of(st.none(), _LONG),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_METAS, max_size=8), st.integers(1, 300))
@pytest.mark.slow
def test_manifest_lists_are_byte_for_byte_the_reference(metas: list[ManifestFileMeta], repeat: int) -> None:
    metas = metas * repeat  # several blocks
    data = entry_codec.write_manifest_list(metas, sync_marker=SYNC)
    assert data == avro_codec.write_manifest_list(metas, sync_marker=SYNC)
    assert avro_codec.read_manifest_list(data, "l") == metas


def test_pypaimon_written_manifest_lists_are_written_as_the_reference_writes_them() -> None:
    """(Not as pypaimon wrote them: it sets _TOTAL_BUCKETS, which the model does not keep.)"""
    samples = sorted(SAMPLES.glob("*/manifest/manifest-list-*"))
    assert len(samples) == 18
    for path in samples:
        data = path.read_bytes()
        metas = avro_codec.read_manifest_list(data, str(path))
        sync = data[-16:]
        assert entry_codec.write_manifest_list(metas, sync_marker=sync) == avro_codec.write_manifest_list(
            metas, sync_marker=sync
        )


def test_list_values_the_fast_encoder_leaves_to_the_reference_fail_alike() -> None:
    good = avro_codec.read_manifest_list(avro_codec.write_manifest_list([]), "l")
    assert good == []
    for bad in (
        ManifestFileMeta(file_name="m", file_size=2**64, num_added_files=0, num_deleted_files=0,
                         partition_stats=SimpleStats(), schema_id=0),
        ManifestFileMeta(file_name=b"m", file_size=1, num_added_files=0, num_deleted_files=0,  # type: ignore[arg-type]
                         partition_stats=SimpleStats(), schema_id=0),
    ):  # fmt: skip
        try:
            expected: Any = avro_codec.write_manifest_list([bad], sync_marker=SYNC)
        except Exception as exc:  # whatever fastavro raises, the fast path must raise too
            with pytest.raises(type(exc)):
                entry_codec.write_manifest_list([bad], sync_marker=SYNC)
        else:
            assert entry_codec.write_manifest_list([bad], sync_marker=SYNC) == expected


@pytest.mark.parametrize("magnitude", [1, 100, 10_000, 5_000_000, 2**40])
def test_many_entries_of_one_layout_and_width_read_exactly(magnitude: int) -> None:
    """Sizes, row counts, buckets and creation times of one byte width across a block (numeric columns decoded at
    once), with a negative bucket and one wider value among them: the records the reference decoder gives."""
    entries = [
        dataclasses.replace(
            _entry(1000 + i % 9000),
            bucket=-1 if i == 150 else 7,
            file=dataclasses.replace(
                _entry(1000 + i).file,
                file_size=magnitude * 3 + i if i != 77 else magnitude * 200,
                row_count=magnitude + i,
                creation_time_ms=1_700_000_000_000 + i * 1000,
                level=0,
            ),
        )
        for i in range(300)
    ]
    data = entry_codec.write_entries(entries, sync_marker=SYNC)
    assert _fast(data)
    _assert_reads_like_the_reference(data)
    records = entry_codec.read_entry_records(data, "manifest/m")
    assert [(r.bucket, r.file_size, r.row_count) for r in records] == [
        (e.bucket, e.file.file_size, e.file.row_count) for e in entries
    ]
