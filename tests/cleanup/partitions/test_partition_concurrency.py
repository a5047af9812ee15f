"""A commit that lands between planning and committing a drop: the drop deletes only files it planned, and a
partition that received files meanwhile is not dropped this run (reported), so nothing is lost silently."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from support.partition_tables import fill, ms, partitioned_table, partitions, rows

from tableformat.cleanup.kernel import run_operation
from tableformat.cleanup.partitions import PARTITION_EXPIRATION
from tableformat.table import Table

NOW = ms(2026, 1, 10, 12)


def _plan_then_inject(table: Table, inject: object) -> object:
    ctx = table.context
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, NOW)
    inject()  # type: ignore[operator]
    return PARTITION_EXPIRATION.execute(ctx, plan, config, None)


def test_an_append_into_a_partition_being_expired_is_kept(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "5d"})
    fill(table, [{"dt": "2026-01-01"}, {"dt": "2026-01-02"}, {"dt": "2026-01-09"}])
    late = pa.table({"id": [100, 101], "dt": ["2026-01-01", "2026-01-01"]}, schema=table.arrow_schema)
    writer = Table.open(table.location)  # another writer, committing between the plan and the drop
    result = _plan_then_inject(table, lambda: writer.append(late))

    assert [dict(p) for p in result.expired_partitions] == [{"dt": "2026-01-02"}]  # type: ignore[attr-defined]
    skipped = {p["dt"]: r for p, r in result.skipped_partitions}  # type: ignore[attr-defined]
    assert skipped == {"2026-01-01": "files were added after planning; not dropped"}
    assert partitions(table) == {("2026-01-01",), ("2026-01-09",)}
    assert rows(table) == [
        (0, "2026-01-01"),
        (1, "2026-01-01"),
        (100, "2026-01-01"),
        (101, "2026-01-01"),
        (4, "2026-01-09"),
        (5, "2026-01-09"),
    ]
    # The next run drops the partition, new rows included (it plans them now).
    again = run_operation(PARTITION_EXPIRATION, table.context, now_ms=NOW)
    assert [dict(p) for p in again.expired_partitions] == [{"dt": "2026-01-01"}]
    assert again.rows == 4 and partitions(table) == {("2026-01-09",)}


def test_a_concurrent_drop_of_the_same_partitions_commits_nothing_twice(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "5d"})
    fill(table, [{"dt": "2026-01-01"}, {"dt": "2026-01-09"}])
    other = Table.open(table.location)
    result = _plan_then_inject(table, lambda: other.drop_partitions([{"dt": "2026-01-01"}]))
    assert result.expired_partitions == () and result.snapshot_ids == ()  # type: ignore[attr-defined]
    assert [r for _, r in result.skipped_partitions] == [  # type: ignore[attr-defined]
        "its files were removed concurrently; not dropped"
    ]
    assert len(table.snapshots()) == 3 and partitions(table) == {("2026-01-09",)}


def test_an_append_into_another_partition_does_not_stop_the_drop(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "5d"})
    fill(table, [{"dt": "2026-01-01"}, {"dt": "2026-01-09"}])
    more = pa.table({"id": [7], "dt": ["2026-01-09"]}, schema=table.arrow_schema)
    result = _plan_then_inject(table, lambda: Table.open(table.location).append(more))
    assert [dict(p) for p in result.expired_partitions] == [{"dt": "2026-01-01"}]  # type: ignore[attr-defined]
    assert rows(table) == [(2, "2026-01-09"), (3, "2026-01-09"), (7, "2026-01-09")]
