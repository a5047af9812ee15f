"""A rollback racing snapshot expiration on S3 (SeaweedFS): claims rest on the store listing a key once its PUT is
answered. At every write and delete of one side the other runs whole; the table then reads exactly the target (the
rollback went through) or exactly its last state (it did not), and `check` is clean."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from support.faults import InterleavingFileIO, faulty_context
from support.operations import expire_snapshots
from support.rollback_race import WRITE_ONLY_RETENTION, attempt, one_row_history
from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS

from tableformat.cleanup.check import check_table
from tableformat.commit.rollback import rollback
from tableformat.context import TableContext
from tableformat.table import Table

pytestmark = pytest.mark.s3

SNAPSHOTS = 6
TARGET = 3


def build(server: SeaweedFS) -> Table:
    url = f"s3://{DEFAULT_BUCKET}/t-{uuid.uuid4().hex[:16]}"
    return one_row_history(url, SNAPSHOTS, WRITE_ONLY_RETENTION, storage_options=server.storage_options())


def expire(ctx: TableContext) -> Any:
    return expire_snapshots(ctx, parallelism=1)


def roll_back(ctx: TableContext) -> Any:
    return rollback(ctx.store, snapshot_id=TARGET)


@pytest.mark.parametrize("rollback_outer", [False, True], ids=["rollback-inside-expire", "expire-inside-rollback"])
@pytest.mark.slow
def test_rollback_and_expiration_interleaved_at_every_change_on_s3(s3_server: SeaweedFS, rollback_outer: bool) -> None:
    outer, inner = (roll_back, expire) if rollback_outer else (expire, roll_back)
    options = s3_server.storage_options()
    counting = build(s3_server).context
    io = InterleavingFileIO(counting.io, None, lambda: None)
    outer(faulty_context(counting, io))
    assert io.changes > 3
    for at in range(1, io.changes + 1):
        table = build(s3_server)
        outcome: dict[str, str] = {}

        def run_inner(table: Table = table, outcome: dict[str, str] = outcome) -> None:
            outcome["inner"] = attempt(inner, Table.open(table.location, options).context)

        ctx = table.context
        outcome["outer"] = attempt(outer, faulty_context(ctx, InterleavingFileIO(ctx.io, at, run_inner)))
        rolled_back = outcome["outer" if rollback_outer else "inner"] == "done"
        reopened = Table.open(table.location, options)
        latest = reopened.latest_snapshot()
        expected = TARGET if rolled_back else SNAPSHOTS
        ids = sorted(reopened.to_arrow().column("id").to_pylist())
        assert (None if latest is None else latest.id, ids) == (expected, list(range(expected))), (at, outcome)
        assert check_table(reopened.context).ok, (at, outcome)
