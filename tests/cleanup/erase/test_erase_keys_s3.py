"""A keys file on the object store (``--keys-file s3://...``), read with the table's storage options."""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tableformat import Table
from tableformat.errors import ArgumentError

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("user_id", pa.int64()), pa.field("part", pa.int32())])


def test_a_keys_file_on_s3_erases_its_keys(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(f"{url}/erase-keys/t", SCHEMA, ["part"], {"write-only": "true"}, options)
    table.append(pa.table({"user_id": list(range(10)), "part": [i % 2 for i in range(10)]}, schema=SCHEMA))
    keys = io.BytesIO()
    pq.write_table(pa.table({"uid": pa.array([3, 4, 99], pa.int64())}), keys)
    io_, layout = table.context.io, table.context.layout
    io_.write_bytes(layout.root.rsplit("/", 1)[0] + "/keys.parquet", keys.getvalue())
    where = f"{url}/erase-keys/keys.parquet"
    dry = table.maintenance.erase(keys_file=where, key="user_id=uid", dry_run=True)
    assert dry.erased_rows == 2 and len(dry.rewritten_paths) == 2
    done = table.maintenance.erase(keys_file=where, key="user_id=uid")
    assert done.erased_rows == 2
    assert sorted(table.to_arrow()["user_id"].to_pylist()) == [0, 1, 2, 5, 6, 7, 8, 9]
    assert table.maintenance.verify_erasure(keys_file=where, key="user_id=uid").matches == 2  # snapshot 1's files
    with pytest.raises(ArgumentError, match="no such file"):
        table.maintenance.erase(keys_file=f"{url}/erase-keys/missing.parquet", key="user_id=uid")
