"""The Table API on a real S3-compatible server (SeaweedFS on 127.0.0.1)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tableformat import Table
from tableformat.errors import StorageError
from tableformat.io.s3 import S3FileIO

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.mark.s3
def test_table_round_trip_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(url, SCHEMA, partition_keys=["dt"], storage_options=options)
    table.append(pa.table({"id": [1, 2], "dt": ["a", "b"]}, schema=SCHEMA))
    table.overwrite(pa.table({"id": [3], "dt": ["a"]}, schema=SCHEMA), partition={"dt": "a"})
    table.drop_partitions([{"dt": "b"}])
    reopened = Table.open(url.replace("s3://", "s3a://"), storage_options=options)
    assert [s.id for s in reopened.snapshots()] == [1, 2, 3]
    assert reopened.to_arrow().to_pylist() == [{"id": 3, "dt": "a"}]
    assert sorted(reopened.to_arrow(snapshot_id=1).column("id").to_pylist()) == [1, 2]


@pytest.mark.s3
def test_store_without_conditional_writes_is_refused(
    s3_root: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, options = s3_root
    table = Table.create(url, SCHEMA, storage_options=options)
    monkeypatch.setattr(S3FileIO, "probe_conditional_writes", lambda self, root: False)
    with pytest.raises(StorageError, match="does not honour atomic create-if-absent"):
        table.append(pa.table({"id": [1], "dt": ["a"]}, schema=SCHEMA))
    assert table.snapshots() == []
