"""Manifests and manifest lists are written at ``file.compression.zstd-level``, as Paimon's Avro format writes
them (its codec takes the table's zstd level, default 1): each file is exactly the reference encoder's bytes at that
level."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tableformat import Table
from tableformat.codec import avro_codec
from tableformat.context import TableContext

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])


@pytest.mark.parametrize(("options", "level"), [({}, 1), ({"file.compression.zstd-level": "7"}, 7)])
def test_commits_write_metadata_at_the_tables_zstd_level(tmp_path: Path, options: dict[str, str], level: int) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA, ["part"], {"write-only": "true", **options})
    for round_no in range(3):
        ids = list(range(round_no * 500, round_no * 500 + 500))
        table.append(pa.table({"id": ids, "part": [i % 50 for i in range(500)]}, schema=SCHEMA))
    table.overwrite(pa.table({"id": [1], "part": [3]}, schema=SCHEMA), {"part": 3})
    ctx = TableContext.load(str(tmp_path / "t"))
    store = ctx.store
    latest = store.latest_snapshot()
    assert latest is not None
    lists = [latest.base_manifest_list, latest.delta_manifest_list]
    manifests = store.manifests_of(latest)
    assert len(manifests) == 4  # three appends' and the overwrite's (its DELETE entries and its new file)
    for name in lists:
        data = store.io.read_bytes(store.layout.manifest_file(name))
        metas = avro_codec.read_manifest_list(data, name)
        assert data == avro_codec.write_manifest_list(metas, sync_marker=data[-16:], level=level)
    for meta in manifests:
        data = store.io.read_bytes(store.layout.manifest_file(meta.file_name))
        entries = avro_codec.read_manifest(data, meta.file_name)
        assert data == avro_codec.write_manifest(entries, sync_marker=data[-16:], level=level)
        if len(entries) >= 50:  # big enough for levels 1 and 3 to differ
            assert data != avro_codec.write_manifest(entries, sync_marker=data[-16:], level=3 if level != 3 else 1)
