"""The undo window on a real S3 server (SeaweedFS): an expiration keeps the files it takes, an undo puts its
snapshots back, and once the window has passed a purge deletes what a later expiration held, with the run's undo
directory (objects only: no directories on S3)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from support.operations import check, expire_snapshots
from support.tables import FAR_FUTURE_MS, rows_of

from tableformat import Table

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])


def _rows(start: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + 4)), "part": [0, 1, 0, 1]}, schema=SCHEMA)


def _present(table: Table, paths: tuple[str, ...]) -> list[str]:
    io, layout = table.context.io, table.context.layout
    return [path for path in paths if io.exists(layout.join(path))]


def _undo_objects(table: Table) -> list[str]:
    io, layout = table.context.io, table.context.layout
    return sorted(layout.relative(info.path) for info in io.list_subtree(layout.undo_dir) if not info.is_dir)


def test_an_expiration_on_s3_is_held_undone_then_purged(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(
        f"{url}/undo/t", SCHEMA, ["part"], {"write-only": "true", "maintenance.undo-window": "1d"}, options
    )
    for i in range(3):
        table.append(_rows(i * 10))
    table.drop_partitions([{"part": 0}])  # snapshot 4: the files of partition 0 leave the table
    table.append(_rows(100))
    rows = {s.id: rows_of(table.to_arrow(snapshot_id=s.id)) for s in table.snapshots()}
    now = max(s.time_millis for s in table.snapshots()) + 3_600_000

    done = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=now)
    assert done.deleted_paths == tuple(f"snapshot/snapshot-{i}" for i in range(1, 5))
    held_data = [p for p in done.deferred_paths if p.startswith("part=0/")]
    assert len(held_data) == 3 and done.undo_until_ms == now + 86_400_000
    assert _present(table, done.deferred_paths) == list(done.deferred_paths)  # held, not deleted
    assert [s.id for s in table.snapshots()] == [5]
    window = _undo_objects(table)
    assert [p.rsplit("/", 1)[-1] for p in window if "/saved/" not in p] == ["held-2", "pending-1"]

    undone = table.maintenance.undo(done.run_id, now_ms=now + 60_000)
    assert undone.restored_snapshots == (1, 2, 3, 4) and sorted(undone.restored_files) == sorted(done.deferred_paths)
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5]
    for snapshot_id, expected in rows.items():
        assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == expected, snapshot_id
    assert _undo_objects(table) == []

    again = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=now + 120_000)
    assert sorted(again.deferred_paths) == sorted(done.deferred_paths)
    assert _present(table, again.deferred_paths) == list(again.deferred_paths)
    purging = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=FAR_FUTURE_MS)
    assert purging.deleted_paths == () and any("whose undo window ended" in note for note in purging.notes)
    assert _present(table, again.deferred_paths) == []
    assert _undo_objects(table) == []
    [purge] = [s.run for s in table.audit() if s.run.operation == "purge-held"]
    assert purge.outcome == "completed"
    assert {f.path for f in table.audit_files(purge.run_id)} == set(again.deferred_paths)
    assert rows_of(table.to_arrow()) == rows[5]
    assert check(table.context).ok
