"""Exact partition sets per strategy and partition type, with a fixed clock: exactly the expected partitions are
dropped, every other partition is untouched, and every earlier snapshot still reads its rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.partition_tables import assert_history_reads, fill, ms, partitioned_table, partitions, rows

from tableformat.cleanup.partitions import COMMIT_USER_PREFIX, LAST_RUN_PROPERTY
from tableformat.commit import data_writer
from tableformat.errors import ValidationError
from tableformat.model.snapshot import CommitKind

NOW = ms(2026, 1, 10, 12)
"""2026-01-10 12:00 (UTC = local here): with 5 days, partitions starting before 2026-01-05 12:00 expire."""


def _expire(table: Any, **kwargs: Any) -> Any:
    dry = table.maintenance.expire_partitions(dry_run=True, now_ms=NOW, **kwargs)
    real = table.maintenance.expire_partitions(now_ms=NOW, **kwargs)
    assert dry.expired_partitions == real.expired_partitions  # the dry run lists exactly what the real run drops
    assert dry.skipped_partitions == real.skipped_partitions
    assert (dry.files, dry.rows, dry.bytes) == (real.files, real.rows, real.bytes)
    assert dry.snapshot_ids == () and dry.dry_run
    return real


def _check(table: Any, values: list[Any], dropped: list[Any], shown: list[dict[str, str]], **kwargs: Any) -> Any:
    history = fill(table, [dict(zip(table.partition_keys, v if isinstance(v, tuple) else (v,))) for v in values])
    before = rows(table)
    result = _expire(table, **kwargs)
    key = [v if isinstance(v, tuple) else (v,) for v in dropped]
    assert [dict(p) for p in result.expired_partitions] == shown
    assert partitions(table) == {v if isinstance(v, tuple) else (v,) for v in values} - set(key)
    width = len(table.partition_keys)
    assert rows(table) == [r for r in before if tuple(r[1 : 1 + width]) not in set(key)]
    assert result.rows == 2 * len(dropped) and result.files == len(dropped)
    assert_history_reads(table, history)
    return result


def test_string_yyyy_mm_dd_with_lenient_default_formatter(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "5 d"})
    values = ["2026-01-06", "2026-01-05", "2026-1-4", "2025-12-31", "2026-01-10", "2026-01-04 13:00:00"]
    dropped = ["2025-12-31", "2026-1-4", "2026-01-04 13:00:00", "2026-01-05"]
    result = _check(table, values, dropped, [{"dt": v} for v in dropped])
    assert len(result.snapshot_ids) == 1
    snapshot = table.snapshot(result.snapshot_ids[0])
    assert snapshot.commit_kind == CommitKind.OVERWRITE and snapshot.commit_user.startswith(COMMIT_USER_PREFIX)
    assert snapshot.properties is not None and snapshot.properties[LAST_RUN_PROPERTY] == str(NOW)
    assert result.skipped_partitions == ()


def test_string_yyyymmdd_with_formatter(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "5d", "partition.timestamp-formatter": "yyyyMMdd"}
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **options)
    result = _check(
        table,
        ["20260106", "20260105", "20260104", "20251231"],
        ["20251231", "20260104", "20260105"],
        [{"dt": "20251231"}, {"dt": "20260104"}, {"dt": "20260105"}],
    )
    assert result.skipped_partitions == ()


def test_date_column_needs_no_formatter(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.date32())], ["dt"], **{"partition.expiration-time": "5d"})
    days = [dt.date(2026, 1, d) for d in (2, 5, 6, 9)] + [dt.date(2025, 12, 1)]
    _check(
        table,
        days,
        [dt.date(2025, 12, 1), dt.date(2026, 1, 2), dt.date(2026, 1, 5)],
        [{"dt": "2025-12-01"}, {"dt": "2026-01-02"}, {"dt": "2026-01-05"}],
    )


def test_timestamp_column_needs_no_formatter(tmp_path: Path) -> None:
    table = partitioned_table(
        tmp_path / "t", [("ts", pa.timestamp("us"))], ["ts"], **{"partition.expiration-time": "1h"}
    )
    stamps = [dt.datetime(2026, 1, 10, h, 30) for h in (9, 10, 11, 12)]
    _check(table, stamps, stamps[:2], [{"ts": "2026-01-10 09:30:00"}, {"ts": "2026-01-10 10:30:00"}])


def test_int_yyyymmdd_sorted_by_time(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "5d", "partition.timestamp-formatter": "yyyyMMdd"}
    table = partitioned_table(tmp_path / "t", [("day", pa.int32())], ["day"], **options)
    _check(
        table,
        [20261123, 20260105, 20260101, 20251231],
        [20251231, 20260101, 20260105],
        [{"day": "20251231"}, {"day": "20260101"}, {"day": "20260105"}],
    )


def test_two_level_partitions_with_a_pattern(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "12h", "partition.timestamp-pattern": "$dt $hour:00:00"}
    table = partitioned_table(tmp_path / "t", [("dt", pa.string()), ("hour", pa.string())], ["dt", "hour"], **options)
    values = [("2026-01-09", "23"), ("2026-01-10", "0"), ("2026-01-09", "5"), ("2026-01-10", "01")]
    _check(
        table,
        values,
        [("2026-01-09", "5"), ("2026-01-09", "23")],
        [{"dt": "2026-01-09", "hour": "5"}, {"dt": "2026-01-09", "hour": "23"}],
    )


def test_longest_key_wins_on_a_shared_prefix(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "1d", "partition.timestamp-pattern": "$dt $dth:00:00"}
    table = partitioned_table(tmp_path / "t", [("dt", pa.string()), ("dth", pa.int32())], ["dt", "dth"], **options)
    _check(table, [("2026-01-09", 11), ("2026-01-09", 13)], [("2026-01-09", 11)], [{"dt": "2026-01-09", "dth": "11"}])


def test_values_with_commas_equals_and_spaces(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "5d", "partition.timestamp-pattern": "$dt"}
    table = partitioned_table(
        tmp_path / "t", [("region", pa.string()), ("dt", pa.string())], ["region", "dt"], **options
    )
    values = [
        ("a,b", "2026-01-01"),
        ("x=y", "2026-01-01"),
        ("with space", "2026-01-09"),
        ("a,b", "2026-01-09"),
        ("dt=2026-01-01,region=x", "2026-01-09"),
    ]
    _check(
        table,
        values,
        [("a,b", "2026-01-01"), ("x=y", "2026-01-01")],
        [{"region": "a,b", "dt": "2026-01-01"}, {"region": "x=y", "dt": "2026-01-01"}],
    )


def test_null_default_and_unparseable_partitions_are_never_dropped_and_always_reported(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "5d"})
    values = ["2026-01-01", None, "__DEFAULT_PARTITION__", "yesterday", "2026-13-01", "", "2026-01-09"]
    result = _check(table, values, ["2026-01-01"], [{"dt": "2026-01-01"}])
    reasons = {p["dt"]: r for p, r in result.skipped_partitions}
    assert set(reasons) == {"__DEFAULT_PARTITION__", "yesterday", "2026-13-01", ""}
    assert reasons["yesterday"] == "no partition time: 'yesterday' does not match yyyy-MM-dd[ HH:mm:ss]"
    assert "not a valid date-time" in reasons["2026-13-01"]
    assert "default partition" in reasons["__DEFAULT_PARTITION__"]
    json_skipped = table.maintenance.expire_partitions(dry_run=True, now_ms=NOW).to_json()["skipped_partitions"]
    assert {s["partition"]["dt"] for s in json_skipped} == set(reasons)


def test_update_time_uses_the_newest_creation_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options = {"partition.expiration-time": "5d", "partition.expiration-strategy": "update-time"}
    table = partitioned_table(tmp_path / "t", [("name", pa.string())], ["name"], **options)
    clock = iter([ms(2026, 1, 1), ms(2026, 1, 2), ms(2026, 1, 9), ms(2026, 1, 3)])
    monkeypatch.setattr(data_writer, "local_wall_clock_ms", lambda: next(clock))
    history = fill(table, [{"name": "a"}, {"name": "b"}, {"name": "b"}, {"name": "c"}])
    result = _expire(table)
    assert [dict(p) for p in result.expired_partitions] == [{"name": "a"}, {"name": "c"}]
    assert partitions(table) == {("b",)}
    assert_history_reads(table, history)


def test_max_num_takes_the_oldest_by_time_and_batch_size_splits_snapshots(tmp_path: Path) -> None:
    options = {
        "partition.expiration-time": "5d",
        "partition.expiration-max-num": "3",
        "partition.expiration-batch-size": "2",
    }
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **options)
    fill(table, [{"dt": v} for v in ["2026-01-03", "2026-1-2", "2025-12-30", "2026-01-01", "2026-01-09"]])
    result = _expire(table)
    assert [p["dt"] for p in result.expired_partitions] == ["2025-12-30", "2026-01-01", "2026-1-2"]
    assert len(result.snapshot_ids) == 2 and result.notes[0].startswith("1 more expired partition(s)")
    assert partitions(table) == {("2026-01-03",), ("2026-01-09",)}
    again = table.maintenance.expire_partitions(now_ms=NOW, max_num=10)
    assert [p["dt"] for p in again.expired_partitions] == ["2026-01-03"]


def test_overrides_beat_table_options(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "100d"})
    fill(table, [{"dt": "2026-01-01"}, {"dt": "20260102"}])
    assert table.maintenance.expire_partitions(now_ms=NOW).expired_partitions == ()
    result = table.maintenance.run(
        "expire-partitions", now_ms=NOW, expiration_time="1 d", timestamp_formatter="yyyyMMdd"
    )
    assert [dict(p) for p in result.expired_partitions] == [{"dt": "20260102"}]  # type: ignore[attr-defined]


def test_misconfiguration_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **{"partition.timestamp-pattern": "$day"})
    fill(table, [{"dt": "2026-01-01"}])
    with pytest.raises(
        ValidationError,
        match=r"^no expiration time: set the table option partition\.expiration-time or pass "
        r"expiration_time=datetime\.timedelta\(days=30\)$",
    ):
        table.maintenance.expire_partitions()
    with pytest.raises(ValidationError, match=r"\$day, which is not a partition column"):
        table.maintenance.expire_partitions(expiration_time="1d")
    with pytest.raises(ValidationError, match="must have a year, a month and a day"):
        table.maintenance.run(
            "expire-partitions", expiration_time="1d", timestamp_pattern="$dt", timestamp_formatter="yyyy-MM"
        )
    with pytest.raises(ValidationError, match="values-time, update-time"):
        table.maintenance.expire_partitions(expiration_time="1d", strategy="by-name")
    assert len(table.snapshots()) == 1


def test_strict_format_refuses_a_write_before_anything_is_written(tmp_path: Path) -> None:
    options = {"partition.timestamp-format.strict": "true", "partition.timestamp-formatter": "yyyyMMdd"}
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"], **options)
    fill(table, [{"dt": "20260101"}])
    files = sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file())
    for bad in ("2026-01-02", None):
        with pytest.raises(ValidationError, match="partition.timestamp-format.strict=true refuses it"):
            table.append(pa.table({"id": [9], "dt": [bad]}, schema=table.arrow_schema))
    assert sorted(p for p in (tmp_path / "t").rglob("*") if p.is_file()) == files


def test_local_time_zone_decides_like_paimon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Shanghai")  # UTC+8: NOW is 2026-01-10 20:00 local
    time.tzset()
    table = partitioned_table(
        tmp_path / "t", [("ts", pa.timestamp("us"))], ["ts"], **{"partition.expiration-time": "1h"}
    )
    fill(table, [{"ts": dt.datetime(2026, 1, 10, 18, 30)}, {"ts": dt.datetime(2026, 1, 10, 19, 30)}])
    result = table.maintenance.expire_partitions(now_ms=NOW)
    assert [dict(p) for p in result.expired_partitions] == [{"ts": "2026-01-10 18:30:00"}]
