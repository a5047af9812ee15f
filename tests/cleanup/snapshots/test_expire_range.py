"""Which snapshots one expiration run picks: retain min/max, successor-time rule, limit, consumers, gaps, options."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, files_under, reachable_files

from tableformat.cleanup.snapshots import plan_expiration
from tableformat.cleanup.snapshots.config import ExpireConfig
from tableformat.errors import ValidationError
from tableformat.model.snapshot import Consumer
from tableformat.table import Table

T0 = 1_700_000_000_000


def history(kit, count: int, **options: str) -> Table:
    table = kit.table(**options)
    for _ in range(count):
        table.append(kit.rows(2))
    return table


def config(time_retained_ms: int) -> ExpireConfig:
    return ExpireConfig(retain_min=1, retain_max=100, time_retained_ms=time_retained_ms, limit=100)


def ids(table: Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def test_retain_min_keeps_the_newest(kit) -> None:
    table = history(kit, 10)
    result = expire_snapshots(table.context, retain_min=3, time_retained=0, limit=100, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5, 6, 7)
    assert result.expired_snapshots == 7
    assert result.earliest_snapshot == 8
    assert ids(table) == [8, 9, 10]
    assert (kit.root(table) / "snapshot" / "EARLIEST").read_text() == "8"


def test_retain_max_expires_regardless_of_age(kit) -> None:
    table = history(kit, 10)
    kit.set_times(table, {i: T0 + i for i in range(1, 11)})
    result = expire_snapshots(
        table.context, retain_min=1, retain_max=4, time_retained=dt.timedelta(days=1), limit=100, now_ms=T0 + 10
    )
    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5, 6)
    assert ids(table) == [7, 8, 9, 10]


def test_successor_time_rule(kit) -> None:
    """Snapshot s expires only once s+1 is older than the retention: 5's successor (6 000) is too young."""
    table = history(kit, 10)
    kit.set_times(table, {i: T0 + i * 1000 for i in range(1, 11)})
    now = T0 + 20_000
    plan = plan_expiration(table.context, config(14_500), now)
    assert plan.expired_snapshots == (1, 2, 3, 4)
    assert plan.end == 5
    # A successor exactly at the threshold is not older than it: 4 stays too.
    plan = plan_expiration(table.context, config(15_000), now)
    assert plan.expired_snapshots == (1, 2, 3)


def test_limit_caps_each_run(kit) -> None:
    table = history(kit, 10)
    first = expire_snapshots(table.context, retain_min=1, time_retained=0, limit=3, now_ms=FAR_FUTURE_MS)
    second = expire_snapshots(table.context, retain_min=1, time_retained=0, limit=3, now_ms=FAR_FUTURE_MS)
    assert first.expired_snapshot_ids == (1, 2, 3)
    assert second.expired_snapshot_ids == (4, 5, 6)
    assert ids(table) == [7, 8, 9, 10]


def test_table_options_are_the_defaults(kit) -> None:
    table = history(kit, 8, **{"snapshot.num-retained.min": "2", "snapshot.time-retained": "0 ms",
                               "snapshot.expire.limit": "4"})
    result = expire_snapshots(table.context, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    result = expire_snapshots(table.context, limit=50, now_ms=FAR_FUTURE_MS)  # a per-call override
    assert result.expired_snapshot_ids == (5, 6)
    assert ids(table) == [7, 8]


def test_duration_strings_and_timedeltas(kit) -> None:
    table = history(kit, 4)
    kit.set_times(table, {i: T0 + i * 60_000 for i in range(1, 5)})
    now = T0 + 4 * 60_000
    dry = expire_snapshots(table.context, retain_min=1, time_retained="30s", dry_run=True, now_ms=now)
    assert dry.expired_snapshot_ids == (1, 2)  # successors 2 and 3 are older than now - 30 s; 4 is not
    ninety = dt.timedelta(seconds=90)
    dry = expire_snapshots(table.context, retain_min=1, time_retained=ninety, dry_run=True, now_ms=now)
    assert dry.expired_snapshot_ids == (1,)
    dry = expire_snapshots(table.context, retain_min=1, time_retained=30_000, dry_run=True, now_ms=now)  # ms
    assert dry.expired_snapshot_ids == (1, 2)


def test_consumer_clamps_the_range(kit) -> None:
    table = history(kit, 10)
    table.context.store.write_consumer(Consumer(consumer_id="reader", next_snapshot=4))
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, limit=100, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2, 3)
    assert [c.consumer_id for c in table.context.store.consumers()] == ["reader"]


def test_expired_consumer_is_ignored_and_removed(kit) -> None:
    table = history(kit, 6, **{"consumer.expiration-time": "1 h"})
    store = table.context.store
    store.write_consumer(Consumer(consumer_id="dead", next_snapshot=2))
    store.write_consumer(Consumer(consumer_id="alive", next_snapshot=5))
    dead = table.context.layout.consumer_file("dead")
    old = os.stat(dead).st_mtime - 7200
    os.utime(dead, (old, old))
    now = os.stat(table.context.layout.consumer_file("alive")).st_mtime_ns // 1_000_000
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, limit=100, now_ms=now + 1000)
    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    assert result.expired_consumers == ("dead",)
    assert "consumer/consumer-dead" in result.deleted_paths
    assert [c.consumer_id for c in store.consumers()] == ["alive"]


def test_gap_in_ids_never_stalls(kit) -> None:
    table = history(kit, 12)
    gone = table.snapshot(5)
    os.remove(table.context.layout.snapshot_file(5))
    result = expire_snapshots(table.context, retain_min=3, time_retained=0, limit=100, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == (1, 2, 3, 4, 6, 7, 8, 9)
    assert ids(table) == [10, 11, 12]
    # Only the lists of the manually deleted snapshot are left behind (orphan cleanup's job).
    root = kit.root(table)
    assert files_under(root) - reachable_files(table.context) == {
        f"manifest/{gone.base_manifest_list}",
        f"manifest/{gone.delta_manifest_list}",
    }
    assert expire_snapshots(table.context, retain_min=1, time_retained=0, limit=100,
                            now_ms=FAR_FUTURE_MS).expired_snapshot_ids == (10, 11)


def test_wide_gap_with_a_small_limit_moves_on(kit) -> None:
    table = history(kit, 12)
    for i in range(2, 9):
        os.remove(table.context.layout.snapshot_file(i))
    first = expire_snapshots(table.context, retain_min=2, time_retained=0, limit=2, now_ms=FAR_FUTURE_MS)
    assert first.expired_snapshot_ids == (1,)
    assert first.earliest_snapshot == 9
    second = expire_snapshots(table.context, retain_min=2, time_retained=0, limit=2, now_ms=FAR_FUTURE_MS)
    assert second.expired_snapshot_ids == (9, 10)
    assert ids(table) == [11, 12]


def test_nothing_to_expire_writes_a_missing_earliest(kit) -> None:
    table = history(kit, 3)
    earliest = kit.root(table) / "snapshot" / "EARLIEST"
    assert not earliest.exists()
    result = expire_snapshots(table.context, now_ms=FAR_FUTURE_MS)  # retain min 10 by default
    assert result.expired_snapshots == 0
    assert result.earliest_snapshot == 1
    assert earliest.read_text() == "1"


def test_empty_table(kit) -> None:
    table = kit.table()
    result = expire_snapshots(table.context, retain_min=1, time_retained=0)
    assert result.expired_snapshots == 0 and result.earliest_snapshot is None and result.deleted_paths == ()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retain_min": 0},
        {"retain_min": 5, "retain_max": 4},
        {"retain_min": 20},  # above the table's retain max below
        {"time_retained": -1},
        {"time_retained": dt.timedelta(seconds=-1)},
        {"time_retained": "-1h"},
        {"time_retained": "soon"},
        {"limit": 0},
        {"parallelism": 0},
        {"retain_min": True},
    ],
)
def test_invalid_settings_touch_nothing(kit, kwargs) -> None:
    table = history(kit, 4, **{"snapshot.num-retained.max": "15"})
    before = files_under(kit.root(table))
    with pytest.raises(ValidationError):
        expire_snapshots(table.context, **kwargs)
    assert files_under(kit.root(table)) == before
