"""One maintainer pass over a warehouse, with a fake clock: what runs, what is skipped, what an idle table costs,
backlog re-scheduling, per-table overrides, a failing table among good ones, and discovery between passes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from support.warehouses import (
    RETAIN,
    FakeClock,
    append,
    counting_opener,
    make_warehouse,
    snapshot_ids,
    table_with_commits,
)

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings, settings_from_mapping
from tableformat.table import Table

HOUR = 3_600_000
LAYOUT = {"sales": ["orders", "returns"], "web": ["clicks"]}


def _ran(reports: list) -> dict[str, list[str]]:
    return {r.table: [name for name, _ in r.operations] for r in reports}


def test_first_pass_runs_every_configured_operation_then_an_idle_pass_reads_three_files(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=6)
    clock = FakeClock()
    maintainer = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=clock)

    first = maintainer.run_once()
    assert [r.table for r in first] == ["sales.orders", "sales.returns", "web.clicks"]
    # write-only tables are maintained: that is what dedicated maintenance is for. No partition.expiration-time:
    # partition expiration is not configured, so it does not run.
    assert _ran(first) == {name: ["expire", "remove-orphans"] for name in tables}
    for report in first:
        expire = dict(report.operations)["expire"]
        assert report.ok and expire.to_json()["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert {name: snapshot_ids(path) for name, path in tables.items()} == {name: [5, 6] for name in tables}

    log: list[tuple[str, str]] = []
    idle = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=clock, opener=counting_opener(log))
    second = idle.run_once()
    assert [(r.table, r.skipped, r.operations) for r in second] == [(n, "nothing due", ()) for n in tables]
    per_table: dict[str, list[str]] = {}
    for kind, path in log:
        parts = path.split("/wh/")[1].split("/") if "/wh/" in path else []
        key = "/".join(parts[:2]) if len(parts) > 2 else "warehouse and databases"
        per_table.setdefault(key, []).append(kind)
    # discovery lists the target's schema/ (is it a table?), the warehouse, each database, and each table's
    # schema/ (which the pass then uses); the pass reads the maintain state and the LATEST hint: 3 requests per
    # idle table, and 4 per warehouse of any size
    assert per_table == {
        "warehouse and databases": ["list", "list", "list", "list"],
        **{p: ["list", "read", "read"] for p in ("sales.db/orders", "sales.db/returns", "web.db/clicks")},
    }
    assert {p.split("/")[-1] for _, p in log} == {"wh", "sales.db", "web.db", "maintain-state", "LATEST", "schema"}


def test_a_commit_makes_snapshot_expiration_due_on_that_table_only_and_intervals_bring_the_rest(
    tmp_path: Path,
) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=3)
    clock = FakeClock()
    maintainer = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=clock)
    maintainer.run_once()

    append(Table.open(str(tables["web.clicks"])), 2, start=100)
    assert _ran(maintainer.run_once()) == {"sales.orders": [], "sales.returns": [], "web.clicks": ["expire"]}
    assert snapshot_ids(tables["web.clicks"]) == [4, 5]

    clock.advance(HOUR)  # maintenance.check-interval (1 h): snapshot expiration re-checks every table
    assert _ran(maintainer.run_once()) == {name: ["expire"] for name in tables}
    clock.advance(23 * HOUR)  # orphan-files.check-interval (1 d) since the first pass
    assert _ran(maintainer.run_once()) == {name: ["expire", "remove-orphans"] for name in tables}


def test_partition_expiration_runs_first_when_the_table_sets_it(tmp_path: Path) -> None:
    clock = FakeClock()
    today = dt.datetime.fromtimestamp(clock.now / 1000).date()
    days = [(today - dt.timedelta(days=n)).isoformat() for n in (30, 20, 1)]
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = Table.create(str(tmp_path / "t"), schema, ["dt"], {**RETAIN, "partition.expiration-time": "7 d"})
    for i, day in enumerate(days):
        table.append(pa.table({"id": [i], "dt": [day]}, schema=schema))
    report = Maintainer([str(tmp_path / "t")], MaintainSettings(), clock=clock).run_once()[0]
    assert [name for name, _ in report.operations] == ["expire-partitions", "expire", "remove-orphans"]
    assert report.table == str(tmp_path / "t") and report.ok
    dropped = dict(report.operations)["expire-partitions"]
    assert [p["dt"] for p in dropped.to_json()["expired_partitions"]] == days[:2]
    assert Table.open(str(tmp_path / "t")).to_arrow().column("dt").to_pylist() == [days[2]]
    clock.advance(HOUR)  # the next pass counts the drop snapshot in keep-up: the two rows it removed
    keep_up = Maintainer([str(tmp_path / "t")], MaintainSettings(), clock=clock).run_once()[0].keep_up
    assert keep_up is not None
    assert round(keep_up.dropped_rows_per_hour * keep_up.window_hours) == 2
    assert round(keep_up.ingest_rows_per_hour * keep_up.window_hours) == 3


def test_a_table_a_limit_stopped_comes_back_after_the_backlog_retry_until_done(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table_with_commits(root, 9, **{"snapshot.expire.limit": "2", "snapshot.num-retained.min": "1"})
    clock = FakeClock()
    settings = MaintainSettings(backlog_retry_ms=60_000)
    maintainer = Maintainer([str(root)], settings, clock=clock)
    expired, backlogs, next_due = [], [], []
    for _ in range(5):
        report = maintainer.run_once()[0]
        result = dict(report.operations).get("expire")
        expired.append(list(result.to_json()["expired_snapshot_ids"]) if result else None)
        backlogs.append(result.backlog if result else None)
        next_due.append(report.next_due_ms - clock.now if report.next_due_ms else None)
        clock.advance(60_000)
    assert expired == [[1, 2], [3, 4], [5, 6], [7, 8], None]
    assert backlogs == [6, 4, 2, 0, None]
    assert next_due[:3] == [60_000, 60_000, 60_000]
    assert snapshot_ids(root) == [9]
    keep_up = maintainer.run_once()[0].keep_up
    assert keep_up is None  # nothing ran: an idle pass reads nothing to assess


def test_table_overrides_from_the_config_apply_to_matching_tables_only(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=6)
    settings = settings_from_mapping({"tables": {"sales.*": {"snapshot.expire.limit": "1"}}}, "maintain.toml")
    Maintainer([str(tmp_path / "wh")], settings, clock=FakeClock()).run_once()
    assert {name: snapshot_ids(path) for name, path in tables.items()} == {
        "sales.orders": [2, 3, 4, 5, 6],
        "sales.returns": [2, 3, 4, 5, 6],
        "web.clicks": [5, 6],
    }
    assert Table.open(str(tables["sales.orders"])).schema.options["snapshot.expire.limit"] == "100"  # not written


def test_a_failing_table_is_reported_and_the_others_are_still_maintained(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=6)
    (tables["sales.returns"] / "snapshot" / "snapshot-3").write_text("{not json")
    reports = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=FakeClock()).run_once()
    assert [(r.table, r.ok) for r in reports] == [
        ("sales.orders", True),
        ("sales.returns", False),
        ("web.clicks", True),
    ]
    failed = reports[1]
    # expiration reads snapshot-3 and stops; orphan cleanup has no candidate old enough, so it reads no root;
    # the keep-up count reads every snapshot of the window. The table's failure is reported, the rest ran.
    assert [op for op, _ in failed.errors] == ["expire", "keep-up"]
    assert all("snapshot-3: invalid JSON" in message for _, message in failed.errors)
    assert [name for name, _ in failed.operations] == ["remove-orphans"]
    assert snapshot_ids(tables["sales.returns"]) == [1, 2, 3, 4, 5, 6]  # unreadable: nothing deleted
    assert snapshot_ids(tables["sales.orders"]) == snapshot_ids(tables["web.clicks"]) == [5, 6]


def test_discovery_picks_up_a_table_created_and_forgets_one_dropped_between_passes(tmp_path: Path) -> None:
    import shutil

    make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=2)
    clock = FakeClock()
    maintainer = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=clock)
    assert [r.table for r in maintainer.run_once()] == ["sales.orders"]
    table_with_commits(tmp_path / "wh" / "ops.db" / "audit", 4)
    (tmp_path / "wh" / "sales.db" / "scratch").mkdir()  # a directory without schema/ is no table
    second = maintainer.run_once()
    assert [(r.table, [n for n, _ in r.operations]) for r in second] == [
        ("ops.audit", ["expire", "remove-orphans"]),
        ("sales.orders", []),
    ]
    shutil.rmtree(tmp_path / "wh" / "ops.db" / "audit")
    assert [r.table for r in maintainer.run_once()] == ["sales.orders"]


def test_include_and_exclude_globs_choose_the_tables(tmp_path: Path) -> None:
    make_warehouse(tmp_path / "wh", LAYOUT, commits=2)
    settings = MaintainSettings(include=("sales.*",), exclude=("*.returns",))
    assert [r.table for r in Maintainer([str(tmp_path / "wh")], settings, clock=FakeClock()).run_once()] == [
        "sales.orders"
    ]


def test_a_dry_run_reports_what_is_due_and_changes_nothing(tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=6)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    report = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=FakeClock(), dry_run=True).run_once()[0]
    assert dict(report.operations)["expire"].to_json()["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert all(result.dry_run for _, result in report.operations)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert snapshot_ids(tables["sales.orders"]) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("target", ["wh/sales.db/orders/snapshot", "wh/sales.db/orders/snapshot/LATEST"])
def test_a_target_that_is_neither_table_nor_warehouse_is_refused(tmp_path: Path, target: str) -> None:
    from tableformat.errors import TargetNotFoundError, ValidationError

    make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=1)
    with pytest.raises(ValidationError, match="neither a table") as raised:
        Maintainer([str(tmp_path / target)], MaintainSettings()).discover()
    assert not isinstance(raised.value, TargetNotFoundError)


@pytest.mark.parametrize("target", ["wh/typo.db", "wh/sales.db/ordres", "missing", "missing/sales.db"])
def test_a_target_that_does_not_exist_is_refused_by_name(tmp_path: Path, target: str) -> None:
    from tableformat.errors import TargetNotFoundError

    make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=1)
    missing = str(tmp_path / target)
    with pytest.raises(TargetNotFoundError) as raised:
        Maintainer([str(tmp_path / "wh"), missing], MaintainSettings()).discover()
    assert str(raised.value) == f"{missing}: does not exist"
    assert isinstance(raised.value, FileNotFoundError)


def test_an_existing_empty_warehouse_or_database_is_zero_tables(tmp_path: Path) -> None:
    (tmp_path / "wh" / "new.db").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    targets = [str(tmp_path / "wh"), str(tmp_path / "wh" / "new.db"), str(tmp_path / "empty")]
    assert Maintainer(targets, MaintainSettings()).discover() == []
