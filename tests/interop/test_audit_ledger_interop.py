"""A table with an audit ledger stays a Paimon table: after tablefmt's expiration, compaction, orphan cleanup and
tag deletion have written ``.tablefmt/audit/`` records, pypaimon 2.1.0 reads every snapshot, tag and the latest
state, and appends; tablefmt reads what pypaimon wrote, and the ledger lists the runs."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.tables import DAY_S, age_files

from interop.helpers import Model, Paimon, check_history
from tableformat import Table
from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance


def compact(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).compact(**kwargs)


def remove_orphan_files(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).remove_orphan_files(**kwargs)


def expire_snapshots(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).expire_snapshots(**kwargs)


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string())])


def test_pypaimon_reads_and_writes_a_table_with_a_ledger(pp: Paimon) -> None:
    pp.create_table("x", SCHEMA, ["dt"], {"compaction.min.file-num": "2"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=SCHEMA))
    for snapshot_id in range(1, 7):
        rows = model.new_rows(["a", "b"], lambda i, part: {"id": i, "dt": part})
        pp.append("x", pa.Table.from_pylist(rows, schema=SCHEMA))
        model.append(rows)
        model.commit(snapshot_id)
    pp.create_tag("x", "keep5", 5)
    model.tag("keep5", 5)
    pp.create_tag("x", "gone", 2)
    pp.uncommitted_write("x", pa.Table.from_pylist([{"id": 999, "dt": "a"}], schema=SCHEMA))
    root = pp.path("x")
    table = Table.open(root)
    table.delete_tag("gone")
    result = expire_snapshots(table.context, retain_min=2, time_retained=0, now_ms=int(time.time() * 1000))
    for snapshot_id in result.expired_snapshot_ids:
        model.by_snapshot.pop(snapshot_id)
    compacted = compact(table.context)
    assert compacted.snapshot_ids
    model.commit(compacted.snapshot_ids[-1])
    age_files(root, 2 * DAY_S)
    remove_orphan_files(table.context, older_than=dt.timedelta(days=1))
    assert {s.run.operation for s in table.audit()} == {"tag delete", "expire", "compact", "remove-orphans"}
    assert list((Path(root) / ".tablefmt" / "audit").glob("*.parquet"))
    check_history(pp, "x", model)
    rows = model.new_rows(["c"], lambda i, part: {"id": i, "dt": part})
    pp.append("x", pa.Table.from_pylist(rows, schema=SCHEMA))
    model.append(rows)
    model.commit(max(model.by_snapshot) + 1)
    check_history(pp, "x", model)
