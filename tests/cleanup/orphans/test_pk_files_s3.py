"""Changelog files, sidecars, index files, index manifests and statistics on a real S3 server (SeaweedFS): the
census lists them by recursive listings, referenced ones are kept, planted ones of every kind are found, and
``check`` lists exactly the dry run's orphans."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pyarrow as pa
import pytest
from support.operations import remove_orphan_files
from support.paimon_index import PaimonIndex
from support.pk_files import attach_changelog, attach_statistics

from tableformat import Table
from tableformat.cleanup.check import check_table

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
DAY_MS = 86_400_000


def test_every_file_kind_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    location, options = s3_root
    table = Table.create(
        location, SCHEMA, partition_keys=["part"], options={"write-only": "true"}, storage_options=options
    )
    for i in range(2):
        table.append(pa.table({"id": list(range(i * 10, i * 10 + 4)), "part": [0, 1, 0, 1]}, schema=SCHEMA))
    ctx = table.context
    live = attach_changelog(table, 2, (0,), sidecars=True) | {attach_statistics(table, 2)}
    index = PaimonIndex(table)
    index.delete_rows({table.files()[0].path.rpartition("/")[2]: [0]})
    latest = ctx.store.latest_snapshot()
    assert latest is not None and latest.index_manifest
    live.add(f"manifest/{latest.index_manifest}")
    live |= {f"index/{e.index_file.file_name}" for e in ctx.store.read_index_manifest(latest.index_manifest)}
    u = uuid.uuid4
    planted = {
        f"part=0/bucket-0/changelog-{u()}-0.parquet",
        f"part=1/bucket-0/changelog-{u()}-0.parquet.index",
        f"manifest/manifest-{u()}-changelog-0",
        f"manifest/manifest-list-{u()}-changelog",
        f"manifest/index-manifest-{u()}-0",
        f"index/index-{u()}-0",
        f"index/btree-global-index-{u()}.index",
        f"statistics/stat-{u()}-0",
    }
    for rel in planted:
        ctx.io.write_bytes(ctx.layout.join(rel), b"stray")
    future = int(time.time() * 1000) + 2 * DAY_MS  # every object was uploaded just now

    dry = remove_orphan_files(ctx, dry_run=True, now_ms=future)
    checked = check_table(ctx, now_ms=future)

    assert set(dry.deleted_paths) == planted and dry.skipped_unknown == ()
    assert checked.orphan_paths == dry.deleted_paths and checked.ok
    result = remove_orphan_files(ctx, now_ms=future)
    assert set(result.deleted_paths) == planted
    assert not any(ctx.io.exists(ctx.layout.join(rel)) for rel in planted)
    assert all(ctx.io.exists(ctx.layout.join(rel)) for rel in live)
    assert check_table(Table.open(location, options).context, now_ms=future).orphan_paths == ()
