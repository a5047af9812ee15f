"""Option ranges: absurd duration, size and count values are refused wherever tablefmt takes them (create, set_options,
per-call overrides of maintenance) with one line naming the option and its range, and nothing is written; values
already stored out of range (an older tablefmt, Paimon, pypaimon) never break a read: a record TTL or partition
cutoff beyond what the time type can hold expires nothing.

Ranges: durations 0 ms .. 36500 d (100 years: fits int64 nanoseconds, datetime, timedelta and a thread wait);
counts their minimum .. 2147483647 (Paimon's Java int); sizes 0 b .. 2^63 - 1 bytes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from support.ci import optional
from support.tables import with_stored_options

import tableformat.cleanup.partitions.plan as partition_plan
import tableformat.scan.record_ttl as record_ttl
from tableformat import Table, ValidationError
from tableformat.options import REGISTRY, TableOptions
from tableformat.scan.record_ttl import resolve_record_ttl

HUGE = "99999999999999999d"
DURATION_RANGE = ">= 0 ms and <= 36500 d"
COUNT_RANGE = ">= 1 and <= 2147483647"
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ns")), ("day", pa.date32())])
TIMES = [dt.datetime(1700, 1, 1), dt.datetime(2000, 1, 1), dt.datetime(2024, 1, 1), None]
DAYS = [dt.date(2000, 1, 1), dt.date(2000, 1, 1), dt.date(2099, 1, 1), dt.date(2099, 1, 1)]
ROWS = [(i, t, d) for i, (t, d) in enumerate(zip(TIMES, DAYS, strict=True))]


def make(path: Path, **options: str) -> Table:
    """Two partitions (2000-01-01, 2099-01-01), four rows, a timestamp(ns) time field (one row in 1700, one null)."""
    table = Table.create(
        str(path), SCHEMA, ["day"], options={"record-level.time-field": "ts", "write-only": "true", **options}
    )
    table.append(pa.table({"id": [r[0] for r in ROWS], "ts": TIMES, "day": DAYS}, SCHEMA))
    return table


def rows(data: pa.Table) -> list[tuple[object, ...]]:
    return sorted(((r["id"], r["ts"], r["day"]) for r in data.to_pylist()), key=lambda r: r[0])


def schema_ids(table: Table) -> list[int]:
    return sorted(table.context.store.schema_ids())


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("record-level.expire-time", HUGE, DURATION_RANGE),
        ("record-level.expire-time", "200000d", DURATION_RANGE),
        ("partition.expiration-time", HUGE, DURATION_RANGE),
        ("snapshot.time-retained", "36501 d", DURATION_RANGE),
        ("commit.max-retry-wait", "2 d", ">= 0 ms and <= 1 d"),
        ("snapshot.expire.limit", "2147483648", COUNT_RANGE),
        ("target-file-size", "99999999999999999gb", ">= 1 b and <= 9223372036854775807 b"),
        ("file.compression.zstd-level", "23", ">= 1 and <= 22"),
    ],
)
def test_set_options_refuses_an_out_of_range_value_in_one_line_and_writes_nothing(
    tmp_path: Path, key: str, value: str, allowed: str
) -> None:
    table = make(tmp_path / "t")
    with pytest.raises(ValidationError) as caught:
        table.set_options({key: value})
    assert str(caught.value) == f"option {key} must be {allowed}, got {value!r}"
    assert schema_ids(table) == [0]
    assert rows(table.to_arrow()) == ROWS


def test_the_largest_values_in_range_are_accepted(tmp_path: Path) -> None:
    table = make(tmp_path / "t")
    result = table.set_options(
        {
            "record-level.expire-time": "36500 d",
            "partition.expiration-time": "36500d",
            "snapshot.expire.limit": "2147483647",
            "target-file-size": "8589934591 gb",
        }
    )
    assert result.changed and schema_ids(table) == [0, 1]
    assert rows(table.to_arrow()) == ROWS[1:]  # 100 years back from now is after 1700: that row is expired
    assert table.maintenance.expire_partitions().to_json()["expired_partitions"] == []


def test_create_refuses_an_out_of_range_value_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        Table.create(str(tmp_path / "t"), SCHEMA, ["day"], options={"record-level.expire-time": HUGE})
    assert str(caught.value) == f"option record-level.expire-time must be {DURATION_RANGE}, got {HUGE!r}"
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda t: t.maintenance.expire_partitions(expiration_time=HUGE),
            f"expiration_time (partition.expiration-time) must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            lambda t: t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=36501)),
            f"expiration_time (partition.expiration-time) must be {DURATION_RANGE}, got 36501 d",
        ),
        (
            lambda t: t.maintenance.expire_partitions(expiration_time=30 * 86_400_000, max_num=2**31),
            f"max_num (partition.expiration-max-num) must be {COUNT_RANGE}, got 2147483648",
        ),
        (
            lambda t: t.maintenance.run("expire-records", expire_time=HUGE),
            f"expire_time (record-level.expire-time) must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            lambda t: t.maintenance.run("expire-records", expire_time="1d", max_files=2**31),
            f"max_files (record-level.expire.max-files) must be {COUNT_RANGE}, got 2147483648",
        ),
        (
            lambda t: t.maintenance.run("expire-records", expire_time="1d", max_rewrite_size="99999999999999999gb"),
            "max_rewrite_size (record-level.expire.max-rewrite-size) must be >= 1 b and <= 9223372036854775807 b, "
            "got '99999999999999999gb'",
        ),
        (
            lambda t: t.maintenance.expire_snapshots(time_retained=HUGE),
            f"time_retained (snapshot.time-retained) must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            lambda t: t.maintenance.expire_snapshots(limit=2**31),
            f"limit (snapshot.expire.limit) must be {COUNT_RANGE}, got 2147483648",
        ),
        (
            lambda t: t.maintenance.remove_orphan_files(older_than=dt.timedelta(days=36501)),
            f"older_than (orphan-files.older-than) must be {DURATION_RANGE}, got 36501 d",
        ),
        (
            lambda t: t.create_tag("forever", time_retained=dt.timedelta(days=10**6)),
            f"time_retained must be {DURATION_RANGE}, got 1000000 d",
        ),
    ],
)
def test_per_call_overrides_are_range_checked_before_anything_is_read(
    tmp_path: Path, call: Callable[[Table], object], message: str
) -> None:
    table = make(tmp_path / "t")
    with pytest.raises(ValidationError) as caught:
        call(table)
    assert str(caught.value) == message
    assert [s.id for s in table.snapshots()] == [1] and table.tags() == []
    assert rows(table.to_arrow()) == ROWS


@pytest.mark.parametrize("value", [HUGE, "200000d", "36501d"])
def test_a_stored_out_of_range_record_ttl_expires_nothing_on_every_read_path(tmp_path: Path, value: str) -> None:
    table = with_stored_options(make(tmp_path / "t"), **{"record-level.expire-time": value})
    assert rows(table.to_arrow()) == ROWS
    assert rows(pa.Table.from_batches(list(table.to_batches()))) == ROWS
    assert rows(table.to_pyarrow_dataset().to_table()) == ROWS
    assert len(optional("pandas").DataFrame(table.to_pandas())) == 4
    assert rows(table.to_arrow(filter=pa.compute.field("id") >= 1)) == ROWS[1:]


def test_a_stored_out_of_range_record_ttl_is_one_line_for_expire_records(tmp_path: Path) -> None:
    table = with_stored_options(make(tmp_path / "t"), **{"record-level.expire-time": HUGE})
    with pytest.raises(ValidationError) as caught:
        table.maintenance.run("expire-records")
    assert str(caught.value) == f"option record-level.expire-time must be {DURATION_RANGE}, got {HUGE!r}"
    assert [s.id for s in table.snapshots()] == [1] and rows(table.to_arrow()) == ROWS


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("bucket", "99999999999", ">= -2 and <= 2147483647"),
        ("snapshot.num-retained.max", "2147483648", COUNT_RANGE),
        ("consumer.expiration-time", HUGE, DURATION_RANGE),
        ("manifest.target-file-size", "9223372036854775808", ">= 0 b and <= 9223372036854775807 b"),
    ],
)
def test_every_registered_number_has_a_range(key: str, value: str, allowed: str) -> None:
    with pytest.raises(ValidationError) as caught:
        TableOptions({key: value}).validate()
    assert str(caught.value) == f"option {key} must be {allowed}, got {value!r}"
    assert all(option.bounds is not None for option in REGISTRY.values() if option.type.name != "string"
               and option.type.name != "bool")  # fmt: skip


def test_a_cutoff_before_the_range_of_timestamp_ns_expires_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in 1690 with a 30-year TTL: the cutoff (1660) is before 1677-09-21, where timestamp(ns) begins."""
    table = make(tmp_path / "t", **{"record-level.expire-time": "10950 d"})
    now = int((dt.datetime(1690, 1, 1) - dt.datetime(1970, 1, 1)) / dt.timedelta(milliseconds=1))
    monkeypatch.setattr(record_ttl, "system_now_ms", lambda: now)
    assert rows(table.to_arrow()) == ROWS
    assert rows(table.to_pyarrow_dataset().to_table()) == ROWS
    ttl = resolve_record_ttl(table.schema, now)
    assert ttl is not None and ttl.expires_nothing
    data = table.to_arrow(include_expired=True)
    assert ttl.filter(data).num_rows == 4
    assert ds.dataset(data).to_table(filter=ttl.expression()).num_rows == 4
    assert table.maintenance.run("expire-records", now_ms=now).to_json()["dropped_paths"] == []
    assert rows(table.to_arrow()) == ROWS


def test_a_stored_out_of_range_partition_expiration_time_is_one_line_and_drops_nothing(tmp_path: Path) -> None:
    table = with_stored_options(make(tmp_path / "t"), **{"partition.expiration-time": HUGE, "write-only": "false"})
    with pytest.raises(ValidationError) as caught:
        table.maintenance.expire_partitions()
    assert str(caught.value) == f"option partition.expiration-time must be {DURATION_RANGE}, got {HUGE!r}"
    table.append(pa.table({"id": [4], "ts": [None], "day": [dt.date(2000, 1, 1)]}, SCHEMA))  # hook: no error
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert rows(table.to_arrow()) == [*ROWS, (4, None, dt.date(2000, 1, 1))]
    result = table.maintenance.expire_partitions(expiration_time="30 d")  # an override still works
    assert [p["day"] for p in result.to_json()["expired_partitions"]] == ["2000-01-01"]
    assert rows(table.to_arrow()) == ROWS[2:]


def test_a_partition_cutoff_before_year_1_expires_nothing(tmp_path: Path) -> None:
    table = make(tmp_path / "t")
    year_50 = int((dt.datetime(50, 1, 1) - dt.datetime(1970, 1, 1)) / dt.timedelta(milliseconds=1))
    result = table.maintenance.run("expire-partitions", now_ms=year_50, expiration_time="36500 d")
    assert result.to_json()["expired_partitions"] == [] and rows(table.to_arrow()) == ROWS
    assert partition_plan.partition_cutoff(year_50, 36_500 * 86_400_000) == dt.datetime.min
