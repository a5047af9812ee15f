"""Expiration and orphan cleanup on SeaweedFS with one request in ten answered SlowDown (injected at the botocore
call, zero backoff): the same result as without throttling; DeleteObjects entries the store keeps refusing are
reported exactly and stay (orphan cleanup: in its result; expiration: it stops with its journal, which a re-run
finishes)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.s3_tables import appended
from support.s3_throttle import SlowDown, every, keys_always, zero_backoff_pacer

from tableformat import Table
from tableformat.errors import MaintenanceError
from tableformat.io.s3 import S3FileIO

pytestmark = pytest.mark.s3

DAY_MS = 86_400_000
SETTINGS: dict[str, Any] = {"retain_min": 3, "retain_max": 3, "time_retained": 0, "limit": 100}


def throttled(table: Table, rule: Any, **pacing: Any) -> SlowDown:
    io = table.context.io
    assert isinstance(io, S3FileIO)
    io.pacer = zero_backoff_pacer(**pacing)
    return SlowDown(rule).attach(io)


def stray_files(table: Table, count: int) -> list[str]:
    layout = table.context.layout
    strays = [f"part={i % 2}/bucket-0/data-{uuid.uuid4()}-0.parquet" for i in range(count)]
    strays += [f"manifest/manifest-{uuid.uuid4()}-0" for _ in range(3)]
    table.context.io.fsspec_filesystem().pipe({layout.join(rel): b"stray" for rel in strays})
    return sorted(strays)


def listing(table: Table) -> list[str]:
    """The table's files (not its audit ledger's records: docs/audit.md)."""
    root = table.context.layout.root.rstrip("/") + "/"
    found = (info.path[len(root) :] for info in table.context.io.walk_files(root))
    return sorted(path for path in found if not path.startswith(".tablefmt/audit/"))


def test_expiration_with_one_request_in_ten_throttled_expires_the_same(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    plain = appended((f"{url}-plain", options), 12, drop_after=6)
    table = appended(s3_root, 12, drop_after=6)
    expected = expire_snapshots(plain.context, **SETTINGS)
    slowdown = throttled(table, every(10))
    result = expire_snapshots(table.context, **SETTINGS)
    assert slowdown.refused > 0
    assert result.expired_snapshot_ids == expected.expired_snapshot_ids == tuple(range(1, 11))
    assert result.deleted_data_files == expected.deleted_data_files == 6
    assert directories(result.deleted_paths) == directories(expected.deleted_paths) and result.failures() == ()
    assert directories(listing(table)) == directories(listing(plain))  # what is left: the same files by place
    assert table.to_arrow().num_rows == plain.to_arrow().num_rows == 6 * 4 + 6 * 8


def directories(paths: Any) -> Counter[str]:
    """How many files in each directory (file names differ between two tables; their places do not)."""
    return Counter(path.rpartition("/")[0] for path in paths)


def test_orphan_cleanup_with_one_request_in_ten_throttled_deletes_exactly_the_strays(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    table = appended(s3_root, 6)
    strays = stray_files(table, 40)
    before = listing(table)
    slowdown = throttled(table, every(10))
    future = int(time.time() * 1000) + 2 * DAY_MS
    result = remove_orphan_files(table.context, now_ms=future)
    assert slowdown.refused > 0
    assert sorted(result.deleted_paths) == strays and result.failures() == ()
    assert listing(table) == sorted(set(before) - set(strays))


def test_orphan_cleanup_reports_the_files_the_store_keeps_refusing(s3_root: tuple[str, dict[str, Any]]) -> None:
    table = appended(s3_root, 3)
    strays = stray_files(table, 10)
    before = listing(table)
    bucket_root = table.context.layout.root.split("/", 1)[1]
    stuck = strays[:2]
    slowdown = throttled(table, keys_always({f"{bucket_root}/{rel}" for rel in stuck}), max_attempts=3)
    future = int(time.time() * 1000) + 2 * DAY_MS
    result = remove_orphan_files(table.context, now_ms=future)
    assert sorted(result.deleted_paths) == strays[2:]
    root = table.context.layout.root
    assert sorted(result.failures()) == [f"{root}/{rel}: SlowDown: Please reduce your request rate." for rel in stuck]
    assert slowdown.refused_keys == 2 * 3  # each refused in all three requests
    assert listing(table) == sorted(set(before) - set(strays[2:]))


def test_expiration_the_store_keeps_refusing_stops_with_its_journal_and_a_rerun_finishes(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    table = appended(s3_root, 12, drop_after=6)
    dry = expire_snapshots(table.context, dry_run=True, **SETTINGS)
    stuck = sorted(path for path in dry.deleted_paths if path.endswith(".parquet"))[0]
    bucket_root = table.context.layout.root.split("/", 1)[1]
    slowdown = throttled(table, keys_always({f"{bucket_root}/{stuck}"}), max_attempts=3)
    with pytest.raises(MaintenanceError, match=r"could not delete 1 file\(s\), first: .*SlowDown") as raised:
        expire_snapshots(table.context, **SETTINGS)
    assert stuck in str(raised.value) and slowdown.refused_keys == 3
    assert stuck in listing(table)  # still there, and the journal names it: the next run finishes the job
    again = expire_snapshots(Table.open(*s3_root).context, **SETTINGS)  # a new client: no more SlowDown
    assert again.failures() == ()
    assert set(listing(table)).isdisjoint(dry.deleted_paths)
    assert table.to_arrow().num_rows == 6 * 4 + 6 * 8
