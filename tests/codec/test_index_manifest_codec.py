"""Index manifests (Avro) and statistics files (JSON): exact round trips, Java's schema variant, refusals."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from tableformat.codec import index_manifest_codec, json_codec
from tableformat.errors import CorruptMetadataError, UnsupportedFormatError
from tableformat.model.index import (
    DeletionVectorMeta,
    GlobalIndexMeta,
    IndexFileMeta,
    IndexManifestEntry,
    Statistics,
    live_index_entries,
)
from tableformat.model.manifest import EMPTY_ROW, FileKind

PARTITION = bytes.fromhex("00000001" + "00" * 8 + "0a00000010000000" + "323032342d30312d3031" + "00" * 6)
SYNC = bytes(range(16))


def dv_entry(name: str, *ranges: DeletionVectorMeta, kind: FileKind = FileKind.ADD) -> IndexManifestEntry:
    return IndexManifestEntry(
        kind=kind,
        partition=PARTITION,
        bucket=3,
        index_file=IndexFileMeta(
            index_type="DELETION_VECTORS", file_name=name, file_size=77, row_count=len(ranges), dv_ranges=ranges
        ),
    )


ENTRIES = [
    dv_entry(
        "index-u-0",
        DeletionVectorMeta(data_file_name="data-b.parquet", offset=1, length=22, cardinality=3),
        DeletionVectorMeta(data_file_name="data-a.parquet", offset=31, length=18, cardinality=None),
    ),
    dv_entry("index-u-1"),  # an empty map is not null
    IndexManifestEntry(
        kind=FileKind.ADD,
        partition=EMPTY_ROW,
        bucket=0,
        index_file=IndexFileMeta(index_type="HASH", file_name="index-u-2", file_size=12, row_count=3),
    ),
    IndexManifestEntry(
        kind=FileKind.DELETE,
        partition=EMPTY_ROW,
        bucket=0,
        index_file=IndexFileMeta(
            index_type="BTREE",
            file_name="index-u-3",
            file_size=5,
            row_count=9,
            external_path="s3://bucket/global/index-u-3",
            global_index=GlobalIndexMeta(
                row_range_start=0,
                row_range_end=99,
                index_field_id=4,
                extra_field_ids=(5, 6),
                index_meta=b"\x01\x02",
                source_meta=None,
            ),
        ),
    ),
]


def test_index_manifest_round_trips_exactly() -> None:
    data = index_manifest_codec.write_index_manifest(ENTRIES, sync_marker=SYNC)
    decoded = index_manifest_codec.read_index_manifest(data, "m")
    assert decoded == ENTRIES
    assert decoded[1].index_file.dv_ranges == () and decoded[2].index_file.dv_ranges is None
    assert index_manifest_codec.write_index_manifest(decoded, sync_marker=SYNC) == data


def test_index_manifest_is_zstd_avro_with_paimons_fields() -> None:
    data = index_manifest_codec.write_index_manifest(ENTRIES[:1], sync_marker=SYNC)
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.codec == "zstandard"
    schema = json.loads(reader.metadata["avro.schema"])
    assert [f["name"] for f in schema["fields"]] == [
        "_VERSION",
        "_KIND",
        "_PARTITION",
        "_BUCKET",
        "_INDEX_TYPE",
        "_FILE_NAME",
        "_FILE_SIZE",
        "_ROW_COUNT",
        "_DELETIONS_VECTORS_RANGES",
        "_EXTERNAL_PATH",
        "_GLOBAL_INDEX",
    ]
    (record,) = list(reader)
    assert record["_VERSION"] == 1 and record["_KIND"] == 0
    assert record["_DELETIONS_VECTORS_RANGES"][0] == {"f0": "data-b.parquet", "f1": 1, "f2": 22, "_CARDINALITY": 3}


def java_schema() -> dict[str, Any]:
    """The schema Java Paimon's AvroSchemaConverter makes of IndexManifestEntry.MANIFEST_ROW_TYPE: its record names,
    nullable array items, and (as in a file of Paimon 0.9) no _EXTERNAL_PATH or _GLOBAL_INDEX."""
    dv_meta = {
        "type": "record",
        "name": "record__DELETIONS_VECTORS_RANGES",
        "fields": [
            {"name": "f0", "type": "string"},
            {"name": "f1", "type": "int"},
            {"name": "f2", "type": "int"},
            {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
        ],
    }
    fields = list(index_manifest_codec.INDEX_MANIFEST_ENTRY_SCHEMA["fields"][:8])
    fields.append(
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            "type": ["null", {"type": "array", "items": ["null", dv_meta]}],
            "default": None,
        }
    )
    return {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": fields}


def test_a_java_written_index_manifest_reads() -> None:
    record = index_manifest_codec.index_entry_to_record(ENTRIES[0])
    del record["_EXTERNAL_PATH"], record["_GLOBAL_INDEX"]
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(java_schema()), [record], codec="zstandard")
    assert index_manifest_codec.read_index_manifest(buffer.getvalue(), "m") == ENTRIES[:1]


def test_another_format_identifier_is_refused_and_garbage_is_corrupt() -> None:
    record = index_manifest_codec.index_entry_to_record(ENTRIES[0]) | {"_VERSION": 2}
    buffer = io.BytesIO()
    fastavro.writer(buffer, index_manifest_codec.INDEX_MANIFEST_ENTRY_SCHEMA, [record], codec="zstandard")
    with pytest.raises(UnsupportedFormatError, match="m: index manifest entry version 2"):
        index_manifest_codec.read_index_manifest(buffer.getvalue(), "m")
    with pytest.raises(CorruptMetadataError, match="m"):
        index_manifest_codec.read_index_manifest(b"not avro", "m")


def test_live_index_entries_drop_deleted_files() -> None:
    deleted = dv_entry("index-u-0", kind=FileKind.DELETE)
    assert live_index_entries([*ENTRIES[:3], deleted]) == ENTRIES[1:3]
    assert live_index_entries(ENTRIES) == ENTRIES[:3]  # the DELETE of index-u-3 is no live file


JAVA_STATISTICS = """{
  "snapshotId" : 4,
  "schemaId" : 0,
  "mergedRecordCount" : 12,
  "colStats" : {
    "id" : {
      "colId" : 0,
      "distinctCount" : 12,
      "min" : "0",
      "max" : "11",
      "nullCount" : 0,
      "avgLen" : 8,
      "maxLen" : 8
    }
  },
  "futureField" : true
}"""


def test_statistics_json_reads_paimons_file_and_round_trips() -> None:
    stats = json_codec.statistics_from_json(JAVA_STATISTICS.encode(), "statistics/stat-u-0")
    assert stats == Statistics(
        snapshot_id=4,
        schema_id=0,
        merged_record_count=12,
        merged_record_size=None,
        col_stats={
            "id": {"colId": 0, "distinctCount": 12, "min": "0", "max": "11", "nullCount": 0, "avgLen": 8, "maxLen": 8}
        },
    )
    written = json_codec.statistics_to_json(stats)
    assert json.loads(written) == {k: v for k, v in json.loads(JAVA_STATISTICS).items() if k != "futureField"}
    assert json_codec.statistics_from_json(written, "s") == stats
    with pytest.raises(CorruptMetadataError, match="statistics/stat-u-0"):
        json_codec.statistics_from_json(b'{"schemaId": 0}', "statistics/stat-u-0")
