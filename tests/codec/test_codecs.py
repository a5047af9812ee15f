"""Binary rows, JSON and Avro codecs: exact bytes and clear errors."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tableformat.codec import avro_codec, json_codec
from tableformat.codec.binary_row import decode_row, encode_row
from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.model import DataFileMeta, DataType, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats
from tableformat.model.snapshot import CommitKind, Snapshot

STRING = DataType("STRING")


def test_partition_row_matches_paimon_sample_bytes() -> None:
    # The worked sample from the Paimon format notes: dt='2024-01-01', 36 bytes, tail padded to 8.
    expected = bytes.fromhex("00000001" + "00" * 8 + "0a00000010000000" + "323032342d30312d3031" + "00" * 6)
    assert encode_row(["2024-01-01"], [STRING]) == expected
    assert decode_row(expected, [STRING]) == ["2024-01-01"]


def test_empty_row_is_twelve_zero_bytes() -> None:
    assert encode_row([], []) == bytes(12)


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (DataType("BOOLEAN"), True),
        (DataType("TINYINT"), -7),
        (DataType("SMALLINT"), 300),
        (DataType("INT"), -100_000),
        (DataType("BIGINT"), 2**40),
        (DataType("FLOAT"), 1.5),
        (DataType("DOUBLE"), -3.25),
        (DataType("DECIMAL", (10, 2)), Decimal("12345.67")),
        (DataType("DECIMAL", (38, 10)), Decimal("1234567890.0123456789")),
        (DataType("DECIMAL", (38, 4)), Decimal("1234567890123456789012345678901234.5678")),  # wider than 28 digits
        (DataType("DECIMAL", (30, 4)), Decimal("10000000000000000000000000.0001")),
        (DataType("STRING"), "short"),
        (DataType("STRING"), "a-string-longer-than-seven-bytes"),
        (DataType("BYTES"), b"\x00\x01\xff"),
        (DataType("DATE"), dt.date(2024, 1, 1)),
        (DataType("TIMESTAMP", (3,)), dt.datetime(2024, 1, 2, 3, 4, 5, 123000)),
        (DataType("TIMESTAMP", (6,)), dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
    ],
)
def test_row_round_trip_every_type(dtype: DataType, value: object) -> None:
    types = [dtype, STRING, dtype]
    row = encode_row([value, None, value], types)
    assert decode_row(row, types) == [value, None, value]
    assert len(row) % 8 == 4  # arity prefix + word-aligned row


_ROW_TYPES: list[tuple[DataType, st.SearchStrategy[object]]] = [
    (DataType("BOOLEAN"), st.booleans()),
    (DataType("TINYINT"), st.integers(-(2**7), 2**7 - 1)),
    (DataType("SMALLINT"), st.integers(-(2**15), 2**15 - 1)),
    (DataType("INT"), st.integers(-(2**31), 2**31 - 1)),
    (DataType("BIGINT"), st.integers(-(2**63), 2**63 - 1)),
    (DataType("DOUBLE"), st.floats(allow_nan=False)),
    (DataType("DECIMAL", (10, 2)), st.decimals(-(10**7), 10**7, places=2)),
    (DataType("DECIMAL", (30, 4)), st.decimals(-(10**25), 10**25, places=4)),
    (DataType("STRING"), st.text(max_size=20)),
    (DataType("BYTES"), st.binary(max_size=20)),
    (DataType("DATE"), st.dates()),
    (DataType("TIMESTAMP", (3,)), st.datetimes().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (DataType("TIMESTAMP", (6,)), st.datetimes()),
]


@st.composite
def _rows(draw: st.DrawFn) -> tuple[list[DataType], list[object]]:
    chosen = draw(st.lists(st.sampled_from(_ROW_TYPES), min_size=1, max_size=5))
    return [t for t, _ in chosen], [draw(st.none() | values) for _, values in chosen]


@settings(max_examples=300, deadline=None)
@given(_rows(), st.data())
def test_rows_of_mixed_types_round_trip_and_corruption_is_one_error(
    row: tuple[list[DataType], list[object]], data: st.DataObject
) -> None:
    types, values = row
    encoded = encode_row(values, types)
    assert decode_row(encoded, types) == values
    damaged = bytearray(encoded)
    for index in data.draw(st.lists(st.integers(0, len(encoded) - 1), min_size=1, max_size=3)):
        damaged[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    for corrupt in (bytes(damaged), encoded[:cut]):
        try:
            decode_row(corrupt, types)
        except CorruptMetadataError:
            pass  # a bad row is one error type, whatever is wrong with it


def test_date_is_days_since_epoch() -> None:
    row = encode_row([dt.date(2024, 1, 1)], [DataType("DATE")])
    assert int.from_bytes(row[12:16], "little") == 19723


def test_truncated_row_names_source() -> None:
    row = encode_row(["a-long-partition-value"], [STRING])
    with pytest.raises(CorruptMetadataError, match="manifest-x"):
        decode_row(row[:20], [STRING], source="manifest-x")


def _snapshot(**changes: object) -> Snapshot:
    base = dict(
        id=5,
        schema_id=0,
        base_manifest_list="manifest-list-a-0",
        delta_manifest_list="manifest-list-a-1",
        total_record_count=4,
        delta_record_count=-3,
        commit_user="u",
        commit_identifier=2**63 - 1,
        commit_kind=CommitKind.OVERWRITE,
        time_millis=1795253213426,
        base_manifest_list_size=1460,
        delta_manifest_list_size=1356,
        uuid="id-1",
        writer_version="tablefmt",
    )
    base.update(changes)
    return Snapshot(**base)  # type: ignore[arg-type]


def test_snapshot_json_key_order_matches_pypaimon() -> None:
    text = json_codec.snapshot_to_json(_snapshot()).decode()
    keys = [line.split('"')[1] for line in text.splitlines() if line.startswith('  "')]
    assert keys == [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "totalRecordCount",
        "deltaRecordCount",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "baseManifestListSize",
        "deltaManifestListSize",
        "uuid",
        "writerVersion",
    ]
    assert json_codec.snapshot_from_json(text.encode(), "s") == _snapshot()


def test_snapshot_unknown_keys_survive_round_trip() -> None:
    raw = json_codec.snapshot_to_json(_snapshot())[:-2] + b',\n  "logOffsets": {}\n}'
    parsed = json_codec.snapshot_from_json(raw, "s")
    assert parsed.extra == {"logOffsets": {}}
    assert b'"logOffsets": {}' in json_codec.snapshot_to_json(parsed)


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"", "empty file"), (b'{"version": 3, "id": 1', "invalid JSON"), (b"[]", "expected a JSON object")],
)
def test_corrupt_snapshot_json_names_the_file(data: bytes, reason: str) -> None:
    with pytest.raises(CorruptMetadataError, match=f"snapshot/snapshot-1: {reason}"):
        json_codec.snapshot_from_json(data, "snapshot/snapshot-1")


def test_snapshot_missing_fields_and_unknown_version() -> None:
    with pytest.raises(CorruptMetadataError, match="missing field"):
        json_codec.snapshot_from_json(b'{"version": 3, "id": 1}', "snapshot-1")
    raw = json_codec.snapshot_to_json(_snapshot()).replace(b'"version": 3', b'"version": 99')
    with pytest.raises(UnsupportedFormatError, match="snapshot version 99"):
        json_codec.snapshot_from_json(raw, "snapshot-5")


def test_hints_are_tolerant() -> None:
    assert json_codec.hint_from_bytes(b"5") == 5
    assert json_codec.hint_from_bytes(b"5\n") == 5
    assert json_codec.hint_from_bytes(b"garbage") is None
    assert json_codec.hint_from_bytes(b"-1") is None
    assert json_codec.hint_to_bytes(12) == b"12"


def _entry(name: str, kind: FileKind = FileKind.ADD) -> ManifestEntry:
    return ManifestEntry(
        kind=kind,
        partition=encode_row(["2024-01-01"], [STRING]),
        bucket=0,
        total_buckets=-1,
        file=DataFileMeta(file_name=name, file_size=10, row_count=2, creation_time_ms=1_700_000_000_000),
    )


def test_manifest_round_trip_and_header_schema() -> None:
    entries = [_entry("data-a-0.parquet"), _entry("data-b-0.parquet", FileKind.DELETE)]
    data = avro_codec.write_manifest(entries)
    assert avro_codec.read_manifest(data, "m") == entries
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.metadata["avro.codec"] == "zstandard"
    header = reader.metadata["avro.schema"]
    assert header.startswith(
        '{"type": "record", "name": "ManifestEntry", "fields": [{"name": "_VERSION", "type": "int"}'
    )
    assert '"name": "DataFileMeta"' in header and '"name": "record_VALUE_STATS"' in header


def test_manifest_list_round_trip() -> None:
    meta = ManifestFileMeta(
        file_name="manifest-x-0",
        file_size=2369,
        num_added_files=2,
        num_deleted_files=0,
        partition_stats=SimpleStats(null_counts=(0,)),
        schema_id=0,
        min_bucket=0,
        max_bucket=0,
        min_level=0,
        max_level=0,
    )
    data = avro_codec.write_manifest_list([meta])
    assert avro_codec.read_manifest_list(data, "l") == [meta]


def test_truncated_avro_names_the_file() -> None:
    data = avro_codec.write_manifest([_entry("data-a-0.parquet")])
    with pytest.raises(CorruptMetadataError, match="manifest/manifest-x-0"):
        avro_codec.read_manifest(data[: len(data) // 2], "manifest/manifest-x-0")
    with pytest.raises(CorruptMetadataError, match="unreadable Avro"):
        avro_codec.read_manifest(b"not avro at all", "manifest/manifest-x-0")
