"""Orphan cleanup and check on a real S3 server (SeaweedFS): batched deletes, no directory operations."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pyarrow as pa
import pytest
from support.operations import remove_orphan_files

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cleanup.kernel import deleter
from tableformat.io.fileio import FileIO

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
DAY_MS = 86_400_000


def test_remove_orphans_on_s3(s3_root: tuple[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    location, options = s3_root
    table = Table.create(
        location, SCHEMA, partition_keys=["part"], options={"write-only": "true"}, storage_options=options
    )
    for i in range(3):
        table.append(
            pa.table({"id": list(range(i * 10, i * 10 + 8)), "part": [j % 2 for j in range(8)]}, schema=SCHEMA)
        )
    ctx = table.context
    io, layout = ctx.io, ctx.layout
    uncommitted = {
        layout.relative(f.path) for f in table.write_files(pa.table({"id": [1], "part": [5]}, schema=SCHEMA))
    }
    strays = {f"part=1/bucket-0/data-{uuid.uuid4()}-0.parquet" for _ in range(5)}
    strays |= {f"manifest/manifest-{uuid.uuid4()}-0", "part=0/bucket-0/notes.txt"}
    for rel in strays:
        io.write_bytes(layout.join(rel), b"stray")
    expected = (strays - {"part=0/bucket-0/notes.txt"}) | uncommitted
    batch_sizes: list[int] = []
    original = type(io).delete_listed

    def counting(self: FileIO, paths: Any) -> list[str]:
        batch_sizes.append(len(paths))
        return original(self, paths)

    monkeypatch.setattr(type(io), "delete_listed", counting)
    monkeypatch.setattr(deleter, "DELETE_BATCH", 4)  # no effect on S3: the store batches by 1,000 itself
    # Every object was uploaded just now: judge them from two days in the future.
    future = int(time.time() * 1000) + 2 * DAY_MS
    dry = remove_orphan_files(ctx, dry_run=True, now_ms=future)
    assert set(dry.deleted_paths) == expected and dry.removed_dirs == ()
    assert batch_sizes == []

    result = remove_orphan_files(ctx, now_ms=future)
    assert result.deleted_paths == dry.deleted_paths
    assert result.skipped_unknown == ("part=0/bucket-0/notes.txt",)
    assert batch_sizes == [7, 1]  # one call: the census listed them all, S3 sends one DeleteObjects; then the claim
    assert not any(io.exists(layout.join(rel)) for rel in expected)
    assert io.exists(layout.join("part=0/bucket-0/notes.txt"))
    reopened = Table.open(location, options)
    assert reopened.to_arrow().num_rows == 24
    assert check_table(reopened.context).ok
