"""The fast projected Avro readers return exactly what the full decoder returns for their fields (or raise alike).

``read_manifest_refs`` = ``[entry_ref(e) for e in read_manifest(...)]``, ``read_manifest_list_fast`` and
``ManifestListReader.read`` = ``read_manifest_list(...)``: on our files, pypaimon's files, foreign writer schemas
(Java-style fewer fields, other union orders, namespaces, unknown fields of every Avro type), every codec, and
corrupt or truncated data.
"""

from __future__ import annotations

import copy
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import pytest

from tableformat.codec import avro_codec, avro_projection
from tableformat.codec.binary_row import encode_row
from tableformat.errors import CorruptMetadataError
from tableformat.model import DataFileMeta, DataType, FileKind, ManifestEntry, ManifestFileMeta, SimpleStats

STRING = DataType("STRING")
INT = DataType("INT")
SAMPLES = Path(__file__).resolve().parents[1] / "resources" / "pypaimon_manifests"
"""Manifests pypaimon 2.1.0 wrote (made by make_samples.py there, committed)."""


def _entry(i: int, **file: Any) -> ManifestEntry:
    meta = {
        "file_name": f"data-{i:05d}-0.parquet",
        "file_size": 1000 + i * 37,
        "row_count": i,
        "min_key": encode_row([i], [INT]),
        "key_stats": SimpleStats(null_counts=(0,)),
        "value_stats": SimpleStats(
            min_values=encode_row([i, "a" * (i % 9)], [INT, STRING]),
            max_values=encode_row([i + 9, "z"], [INT, STRING]),
            null_counts=(0, None),
        ),
        "min_sequence_number": i * 3,
        "max_sequence_number": i * 3 + 2,
        "creation_time_ms": 1_700_000_000_000 + i,
        "level": i % 3,
        **file,
    }
    return ManifestEntry(
        kind=FileKind.DELETE if i % 4 == 3 else FileKind.ADD,
        partition=encode_row([f"2024-01-{i % 28 + 1:02d}"], [STRING]),
        bucket=i % 5 - 1,
        total_buckets=4,
        file=DataFileMeta(**meta),
    )


ENTRIES = [
    _entry(0),
    _entry(1, extra_files=("data-00001-0.parquet.index",), embedded_index=b"\x00\x01idx"),
    _entry(2, external_path="s3://elsewhere/data-00002-0.parquet", value_stats_cols=("id",), write_cols=("id",)),
    _entry(3, creation_time_ms=None, delete_row_count=None, file_source=None, first_row_id=7),
    _entry(4, file_name="dätä-ünïcode-0.parquet", extra_files=("a", "b", "c")),
    _entry(5, file_size=2**62, level=2**31 - 1),
    _entry(6, embedded_index=b""),
]


def _meta(i: int) -> ManifestFileMeta:
    return ManifestFileMeta(
        file_name=f"manifest-{i:05d}-0",
        file_size=2000 + i,
        num_added_files=i,
        num_deleted_files=i % 3,
        partition_stats=SimpleStats(
            min_values=encode_row([str(i)], [STRING]), max_values=encode_row([str(i + 1)], [STRING]), null_counts=(0,)
        ),
        schema_id=i % 2,
        min_bucket=0 if i % 2 else None,
        max_bucket=3 if i % 2 else None,
        min_level=0,
        max_level=i % 5,
        min_row_id=i if i % 3 == 0 else None,
        max_row_id=i + 10 if i % 3 == 0 else None,
    )


def _full_refs(data: bytes) -> list[avro_projection.EntryRef]:
    return [avro_projection.entry_ref(e) for e in avro_codec.read_manifest(data, "manifest/m")]


def _outcome(read: Callable[[bytes, str], Any], data: bytes) -> tuple[str, Any]:
    try:
        return "ok", read(data, "manifest/m")
    except CorruptMetadataError as exc:
        return "corrupt", str(exc)


# --- our own files ---------------------------------------------------------------------------------------------
def test_entry_refs_match_the_full_decoder_and_take_the_fast_path() -> None:
    data = avro_codec.write_manifest(ENTRIES)
    assert avro_projection._fast_read(data, "entry") is not None
    refs = avro_projection.read_manifest_refs(data, "manifest/m")
    assert refs == _full_refs(data)
    assert [type(r.kind) for r in refs] == [FileKind] * len(ENTRIES)
    assert [r.identifier() for r in refs] == [e.identifier() for e in ENTRIES]


def test_many_entries_over_several_blocks() -> None:
    entries = [_entry(i) for i in range(3000)]
    data = avro_codec.write_manifest(entries)
    blocks = avro_projection._blocks(data, "entry")
    assert blocks is not None and len(blocks[1]) > 1
    assert avro_projection.read_manifest_refs(data, "manifest/m") == [avro_projection.entry_ref(e) for e in entries]


def test_manifest_lists_match_the_full_decoder() -> None:
    for metas in ([], [_meta(0)], [_meta(i) for i in range(500)]):
        data = avro_codec.write_manifest_list(metas)
        assert avro_projection._fast_read(data, "list") is not None
        assert avro_projection.read_manifest_list_fast(data, "manifest/l") == avro_codec.read_manifest_list(data, "l")
        assert avro_projection.read_manifest_list_fast(data, "manifest/l") == metas
        assert avro_projection.ManifestListReader().read(data, "manifest/l") == metas


def test_list_reader_reuses_prefix_rows_exactly() -> None:
    """Base lists extend each other: rows of a known prefix are reused, and results still equal the full decoder's."""
    reader = avro_projection.ManifestListReader(keep=4)
    lists = [[_meta(i) for i in range(n)] for n in (1, 2, 3, 5, 8, 8, 13, 600, 601)]
    lists.append([_meta(7), *lists[4]])  # same rows, not a prefix
    lists.append([*lists[4][:-1], _meta(99)])  # a prefix minus one row
    results = []
    for metas in lists:
        data = avro_codec.write_manifest_list(metas)
        result = reader.read(data, "manifest/l")
        assert result == avro_codec.read_manifest_list(data, "l") == metas
        results.append(result)
    assert results[1][0] is results[0][0]  # reused, not decoded again
    assert results[3][:3] == results[2] and results[3][2] is results[2][2]
    shuffled = random.Random(3).sample(lists, len(lists))
    for metas in shuffled:
        assert reader.read(avro_codec.write_manifest_list(metas), "manifest/l") == metas


def test_creation_time_outside_datetime_range_fails_like_the_full_decoder() -> None:
    for millis in (253_402_300_800_000, -62_135_596_800_001, 2**62, 253_402_300_799_999, -62_135_596_800_000):
        data = avro_codec.write_manifest([_entry(0, creation_time_ms=millis)])
        assert _outcome(avro_projection.read_manifest_refs, data) == _outcome(lambda d, p: _full_refs(d), data)


# --- foreign writer schemas ------------------------------------------------------------------------------------
def _records(entries: list[ManifestEntry]) -> list[dict[str, Any]]:
    return [avro_codec.entry_to_record(e) for e in entries]


def _write(schema: dict[str, Any], records: list[dict[str, Any]], codec: str = "zstandard") -> bytes:
    buffer = io.BytesIO()
    fastavro.writer(buffer, schema, records, codec=codec, sync_interval=2000)
    return buffer.getvalue()


def _file_fields(schema: dict[str, Any]) -> list[dict[str, Any]]:
    fields: list[dict[str, Any]] = schema["fields"][-1]["type"]["fields"]
    return fields


def _java_style() -> dict[str, Any]:
    """Java Paimon 0.9-style: fewer trailing DataFileMeta fields (no external path, row ids, write columns)."""
    schema = copy.deepcopy(avro_codec.MANIFEST_ENTRY_SCHEMA)
    kept = [
        f
        for f in _file_fields(schema)
        if f["name"]
        not in (
            "_EXTERNAL_PATH",
            "_FIRST_ROW_ID",
            "_WRITE_COLS",
            "_WRITE_COLS_SEQUENCES",
            "_VALUE_STATS_COLS",
            "_FILE_SOURCE",
        )
    ]
    schema["fields"][-1]["type"]["fields"] = kept
    return schema


def _swapped_unions() -> dict[str, Any]:
    schema = copy.deepcopy(avro_codec.MANIFEST_ENTRY_SCHEMA)
    for field in _file_fields(schema):
        if isinstance(field["type"], list):
            field["type"] = list(reversed(field["type"]))
            field.pop("default", None)
    return schema


def _namespaced_and_shared_stats() -> dict[str, Any]:
    """A namespace on every record and one stats type referenced twice (by full and by short name)."""
    schema = copy.deepcopy(avro_codec.MANIFEST_ENTRY_SCHEMA)
    schema["namespace"] = "org.apache.paimon.avro.generated"
    fields = _file_fields(schema)
    key_stats = next(f for f in fields if f["name"] == "_KEY_STATS")
    key_stats["type"]["name"] = "record_STATS"
    next(f for f in fields if f["name"] == "_VALUE_STATS")["type"] = "org.apache.paimon.avro.generated.record_STATS"
    schema["fields"][-1]["type"]["namespace"] = "org.apache.paimon.avro.generated"
    fields.append({"name": "_MORE_STATS", "type": ["null", "record_STATS"], "default": None})
    return schema


UNKNOWN_FIELDS: list[tuple[dict[str, Any], Any]] = [
    ({"name": "_B", "type": "boolean"}, True),
    ({"name": "_F", "type": "float"}, 1.5),
    ({"name": "_D", "type": "double"}, -2.25),
    ({"name": "_FX", "type": {"type": "fixed", "name": "fx16", "size": 16}}, b"0123456789abcdef"),
    ({"name": "_E", "type": {"type": "enum", "name": "color", "symbols": ["RED", "GREEN"]}}, "GREEN"),
    ({"name": "_M", "type": {"type": "map", "values": ["null", "long", "string"]}}, {"a": 1, "b": None, "c": "x"}),
    (
        {
            "name": "_AR",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "kv",
                    "fields": [{"name": "k", "type": "string"}, {"name": "v", "type": "bytes"}],
                },
            },
        },
        [{"k": "x", "v": b"1"}, {"k": "ÿ", "v": b""}],
    ),
    ({"name": "_U", "type": ["null", "int", "string", "fx16", "color"]}, "RED"),
    ({"name": "_N", "type": "null"}, None),
    ({"name": "_T", "type": {"type": "long", "logicalType": "timestamp-nanos-unknown"}}, 5),
]


def _with_unknown_fields() -> tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]:
    schema = copy.deepcopy(avro_codec.MANIFEST_ENTRY_SCHEMA)
    fields = [f for f, _ in UNKNOWN_FIELDS]
    schema["fields"].insert(2, {"name": "_BEFORE", "type": {"type": "record", "name": "before", "fields": fields}})
    file_fields = _file_fields(schema)
    file_fields.insert(3, {"name": "_MIDDLE", "type": {"type": "array", "items": "before"}})

    def extend(record: dict[str, Any]) -> dict[str, Any]:
        before = {f["name"]: v for f, v in UNKNOWN_FIELDS}
        record = dict(record, _BEFORE=before)
        record["_FILE"] = dict(record["_FILE"], _MIDDLE=[before, before])
        return record

    return schema, extend


def _projection_cases() -> list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]]:
    unknown, extend = _with_unknown_fields()
    same: Callable[[dict[str, Any]], dict[str, Any]] = dict
    return [
        ("ours", avro_codec.MANIFEST_ENTRY_SCHEMA, same),
        ("java-style", _java_style(), same),
        ("swapped-unions", _swapped_unions(), same),
        ("namespaced", _namespaced_and_shared_stats(), same),
        ("unknown-fields", unknown, extend),
    ]


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("case", [c[0] for c in _projection_cases()])
def test_foreign_schemas_take_the_fast_path_and_match(case: str, codec: str) -> None:
    _, schema, extend = next(c for c in _projection_cases() if c[0] == case)
    records = [extend(r) for r in _records(ENTRIES * 20)]
    data = _write(schema, records, codec)
    assert avro_projection._fast_read(data, "entry") is not None, "this schema should not need the fallback"
    assert avro_projection.read_manifest_refs(data, "manifest/m") == _full_refs(data)


def test_java_style_manifest_list_without_trailing_fields() -> None:
    schema = copy.deepcopy(avro_codec.MANIFEST_FILE_META_SCHEMA)
    schema["fields"] = [
        f
        for f in schema["fields"]
        if f["name"] not in ("_MIN_ROW_ID", "_MAX_ROW_ID", "_TOTAL_BUCKETS", "_EXTRA_FILES", "_MIN_LEVEL", "_MAX_LEVEL")
    ]
    records = [avro_codec.manifest_meta_to_record(_meta(i)) for i in range(50)]
    data = _write(schema, records)
    assert avro_projection._fast_read(data, "list") is not None
    expected = avro_codec.read_manifest_list(data, "l")
    assert expected[3].min_level is None
    assert avro_projection.read_manifest_list_fast(data, "l") == expected
    assert avro_projection.ManifestListReader().read(data, "l") == expected


def _unusual(
    mutate: Callable[[list[dict[str, Any]]], None], record: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    schema = copy.deepcopy(avro_codec.MANIFEST_ENTRY_SCHEMA)
    mutate(_file_fields(schema))
    return schema, [record(r) for r in _records(ENTRIES)]


def _set_type(name: str, avro_type: Any) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(fields: list[dict[str, Any]]) -> None:
        for field in fields:
            if field["name"] == name:
                field["type"] = avro_type
                field.pop("default", None)

    return mutate


def _set_value(name: str, value: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def change(record: dict[str, Any]) -> dict[str, Any]:
        return dict(record, _FILE=dict(record["_FILE"], **{name: value}))

    return change


UNUSUAL = [
    # Shapes the fast readers leave to the full decoder: the outcome must still be the same.
    ("size as string", _set_type("_FILE_SIZE", "string"), _set_value("_FILE_SIZE", "12")),
    ("nullable level", _set_type("_LEVEL", ["null", "int"]), _set_value("_LEVEL", None)),
    ("nullable level set", _set_type("_LEVEL", ["null", "int"]), _set_value("_LEVEL", 3)),
    (
        "uuid file name",
        _set_type("_FILE_NAME", {"type": "string", "logicalType": "uuid"}),
        _set_value("_FILE_NAME", "d1b7a1a2-7d3c-4c56-9a6b-2f7e1c9b0a11"),
    ),
    (
        "date in unknown field",
        lambda f: f.append({"name": "_X", "type": {"type": "int", "logicalType": "date"}}),
        _set_value("_X", 3),
    ),
    ("no row count", lambda f: f.remove(next(x for x in f if x["name"] == "_ROW_COUNT")), dict),
    ("no extra files", lambda f: f.remove(next(x for x in f if x["name"] == "_EXTRA_FILES")), dict),
    ("three-way union", _set_type("_EXTERNAL_PATH", ["null", "string", "long"]), dict),
]


@pytest.mark.parametrize("name", [u[0] for u in UNUSUAL])
def test_unusual_schemas_give_the_full_decoders_outcome(name: str) -> None:
    _, mutate, record = next(u for u in UNUSUAL if u[0] == name)
    schema, records = _unusual(mutate, record)
    data = _write(schema, records)
    assert _outcome(avro_projection.read_manifest_refs, data) == _outcome(lambda d, p: _full_refs(d), data)


# --- corrupt data ----------------------------------------------------------------------------------------------
def test_truncated_and_garbled_files_fail_exactly_like_the_full_decoder() -> None:
    entries_data = avro_codec.write_manifest(ENTRIES[:3])
    list_data = avro_codec.write_manifest_list([_meta(i) for i in range(3)])
    full_list = avro_codec.read_manifest_list
    for data, fast, full in (
        (entries_data, avro_projection.read_manifest_refs, lambda d, p: _full_refs(d)),
        (list_data, avro_projection.read_manifest_list_fast, full_list),
        (list_data, avro_projection.ManifestListReader().read, full_list),
    ):
        for cut in range(len(data)):
            assert _outcome(fast, data[:cut]) == _outcome(full, data[:cut]), cut
        rng = random.Random(7)
        for _ in range(300):
            garbled = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                garbled[rng.randrange(len(garbled))] = rng.randrange(256)
            assert _outcome(fast, bytes(garbled)) == _outcome(full, bytes(garbled))


def test_uncompressed_bit_flips_fail_or_match_like_the_full_decoder() -> None:
    """With no compression, flipped bytes reach the decoders themselves (not just zstd's checks)."""
    records = _records(ENTRIES)
    data = _write(avro_codec.MANIFEST_ENTRY_SCHEMA, records, "null")
    rng = random.Random(11)
    for _ in range(1500):
        garbled = bytearray(data)
        garbled[rng.randrange(len(garbled))] ^= 1 << rng.randrange(8)
        assert _outcome(avro_projection.read_manifest_refs, bytes(garbled)) == _outcome(
            lambda d, p: _full_refs(d), bytes(garbled)
        )


# --- pypaimon's files ------------------------------------------------------------------------------------------
def test_pypaimon_written_manifests_and_lists() -> None:
    reader = avro_projection.ManifestListReader()
    samples = sorted(SAMPLES.glob("*/manifest/manifest-*"))
    assert len(samples) == 27  # make_samples.py: 3 tables
    kinds = set()
    for path in samples:
        data = path.read_bytes()
        kind = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])["name"]
        kinds.add(kind)
        if kind == "ManifestFileMeta":
            expected = avro_codec.read_manifest_list(data, str(path))
            assert avro_projection._fast_read(data, "list") is not None, path
            assert avro_projection.read_manifest_list_fast(data, str(path)) == expected
            assert reader.read(data, str(path)) == expected
        else:
            assert avro_projection._fast_read(data, "entry") is not None, path
            assert avro_projection.read_manifest_refs(data, str(path)) == _full_refs(data)
    assert kinds == {"ManifestFileMeta", "ManifestEntry"}


def test_zstd_blocks_decompress_exactly_like_fastavros_library() -> None:
    import importlib
    import sys

    import zstandard

    zstd = importlib.import_module("compression.zstd" if sys.version_info >= (3, 14) else "backports.zstd")
    plain = json.dumps([{"n": i, "s": "x" * (i % 50)} for i in range(3000)]).encode()
    streamed = zstandard.ZstdCompressor().compressobj()
    no_size = streamed.compress(plain) + streamed.flush()  # no content size in the frame header
    frames = [
        zstd.compress(plain),
        zstd.compress(b""),
        zstd.compress(bytes(4 << 20)),  # 4 MiB of zeros: declares far more than the bound, the reference decodes
        no_size,
        zstd.compress(b"one") + zstd.compress(b"two"),  # two frames
    ]
    for frame in frames:
        assert avro_projection._unzstd(frame) == zstd.decompress(frame)
    for broken in (frames[0][:-3], frames[0] + b"junk", b"\x28\xb5\x2f\xfd" + bytes(20)):
        with pytest.raises(zstd.ZstdError):
            zstd.decompress(broken)
        with pytest.raises(zstd.ZstdError):
            avro_projection._unzstd(broken)
