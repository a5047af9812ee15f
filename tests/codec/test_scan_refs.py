"""``read_manifest_scan_refs`` (what a read plans with) = ``[scan_ref(e) for e in read_manifest(...)]``: on our
files, pypaimon's, foreign and unusual writer schemas, and corrupt or truncated data (the same outcome, error
included), and a ScanRef identifies and locates its file as the full entry does."""

from __future__ import annotations

import io
import json
import random

import fastavro
import pytest
from test_codec_projection import (
    ENTRIES,
    SAMPLES,
    UNUSUAL,
    _entry,
    _outcome,
    _projection_cases,
    _records,
    _unusual,
    _write,
)

from tableformat.codec import avro_codec, avro_projection
from tableformat.model import FileKind


def _full(data: bytes, path: str = "manifest/m") -> list[avro_projection.ScanRef]:
    return [avro_projection.scan_ref(e) for e in avro_codec.read_manifest(data, path)]


def _same_outcome(data: bytes) -> None:
    assert _outcome(avro_projection.read_manifest_scan_refs, data) == _outcome(lambda d, p: _full(d), data)


def test_scan_refs_match_the_full_decoder_and_take_the_fast_path() -> None:
    data = avro_codec.write_manifest(ENTRIES)
    assert avro_projection._fast_read(data, "scan") is not None
    refs = avro_projection.read_manifest_scan_refs(data, "manifest/m")
    assert refs == _full(data)
    assert [type(r.kind) for r in refs] == [FileKind] * len(ENTRIES)
    assert [r.identifier() for r in refs] == [e.identifier() for e in ENTRIES]
    for ref, entry in zip(refs, ENTRIES):
        for name in ("file_name", "file_size", "row_count", "schema_id", "level", "external_path"):
            assert getattr(ref.file, name) == getattr(entry.file, name), name
        assert (ref.partition, ref.bucket) == (entry.partition, entry.bucket)


def test_schema_ids_and_row_counts_over_several_blocks() -> None:
    entries = [_entry(i, schema_id=i % 7, row_count=i * 1000) for i in range(3000)]
    data = avro_codec.write_manifest(entries)
    blocks = avro_projection._blocks(data, "scan")
    assert blocks is not None and len(blocks[1]) > 1
    refs = avro_projection.read_manifest_scan_refs(data, "manifest/m")
    assert refs == [avro_projection.scan_ref(e) for e in entries]
    assert [r.schema_id for r in refs[:8]] == [0, 1, 2, 3, 4, 5, 6, 0]


@pytest.mark.parametrize("case", [c[0] for c in _projection_cases()])
def test_foreign_schemas_take_the_fast_path_and_match(case: str) -> None:
    _, schema, extend = next(c for c in _projection_cases() if c[0] == case)
    data = _write(schema, [extend(r) for r in _records(ENTRIES * 20)])
    assert avro_projection._fast_read(data, "scan") is not None, "this schema should not need the fallback"
    assert avro_projection.read_manifest_scan_refs(data, "manifest/m") == _full(data)


@pytest.mark.parametrize("name", [u[0] for u in UNUSUAL])
def test_unusual_schemas_give_the_full_decoders_outcome(name: str) -> None:
    _, mutate, record = next(u for u in UNUSUAL if u[0] == name)
    schema, records = _unusual(mutate, record)
    _same_outcome(_write(schema, records))


def test_creation_time_outside_datetime_range_fails_like_the_full_decoder() -> None:
    for millis in (253_402_300_800_000, -62_135_596_800_001, 2**62, 253_402_300_799_999):
        _same_outcome(avro_codec.write_manifest([_entry(0, creation_time_ms=millis)]))


def test_truncated_and_garbled_files_fail_exactly_like_the_full_decoder() -> None:
    data = avro_codec.write_manifest(ENTRIES[:3])
    for cut in range(len(data)):
        _same_outcome(data[:cut])
    rng = random.Random(5)
    for _ in range(300):
        garbled = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            garbled[rng.randrange(len(garbled))] = rng.randrange(256)
        _same_outcome(bytes(garbled))
    plain = _write(avro_codec.MANIFEST_ENTRY_SCHEMA, _records(ENTRIES), "null")
    for _ in range(1000):
        flipped = bytearray(plain)
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        _same_outcome(bytes(flipped))


def test_pypaimon_written_manifests() -> None:
    seen = 0
    for path in sorted(SAMPLES.glob("*/manifest/manifest-*")):
        data = path.read_bytes()
        if json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])["name"] != "ManifestEntry":
            continue
        assert avro_projection._fast_read(data, "scan") is not None, path
        assert avro_projection.read_manifest_scan_refs(data, str(path)) == _full(data, str(path))
        seen += 1
    assert seen > 0
