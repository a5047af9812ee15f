"""The audit ledger row by row: each deleting or retiring path records exactly the files it deleted or retired,
with their sizes, reasons and states, and the run's own columns; dry runs record nothing."""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.tables import DAY_S, FAR_FUTURE_MS, age_files, audit_files, files_under

from tableformat.cleanup.check import check_table
from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance
from tableformat.model.snapshot import Consumer
from tableformat.table import Table


def compact(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).compact(**kwargs)


def remove_orphan_files(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).remove_orphan_files(**kwargs)


def expire_partitions(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).expire_partitions(**kwargs)


def expire_records(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).expire_records(**kwargs)


def expire_snapshots(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).expire_snapshots(**kwargs)


EVERYTHING = {"retain_min": 1, "time_retained": 0, "limit": 1000}


def ledger(table: Table) -> pa.Table:
    """The whole ledger as one table, read by pyarrow as a user would (no tablefmt code)."""
    directory = Path(table.context.layout.root) / ".tablefmt" / "audit"
    return pq.read_table([str(p) for p in sorted(directory.glob("*.parquet"))]) if directory.is_dir() else None


def rows(table: Table) -> dict[str, tuple[int, str, str]]:
    """{path: (size, state, reason)} of every file row."""
    data = ledger(table)
    return {
        r["path"]: (r["size"], r["state"], r["reason"])
        for r in data.select(["path", "size", "state", "reason"]).to_pylist()
        if r["path"] is not None
    }


def sizes(root: Path, paths: set[str]) -> dict[str, int]:
    return {p: (root / p).stat().st_size for p in paths}


def test_snapshot_expiration_records_every_deleted_file_once(kit) -> None:
    table = kit.table()
    for _ in range(6):
        table.append(kit.rows(4))
    table.overwrite(kit.rows(2, parts=(0,)), {"part": 0})
    root = kit.root(table)
    before = files_under(root)
    size_of = sizes(root, before)
    result = expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    gone = before - files_under(root)
    assert set(result.deleted_paths) == gone and len(gone) > 8
    found = rows(table)
    assert {p: (s, st) for p, (s, st, _) in found.items()} == {p: (size_of[p], "deleted") for p in gone}
    rule = "snapshot.num-retained.min=1, snapshot.num-retained.max=2147483647, snapshot.time-retained=0 ms"
    for snapshot_id in range(1, 7):
        assert found[f"snapshot/snapshot-{snapshot_id}"][2].startswith(f"snapshot {snapshot_id} expired: {rule}")
    others = {reason for path, (_, _, reason) in found.items() if not path.startswith("snapshot/")}
    assert len(others) == 1 and next(iter(others)).startswith(f"used only by expired snapshot(s) 1-6: {rule}")
    run = ledger(table).to_pylist()[0]
    assert run["operation"] == "expire" and run["outcome"] == "completed"
    assert run["host"] == socket.gethostname() and run["pid"] == os.getpid()
    assert run["started"] == dt.datetime.fromtimestamp(FAR_FUTURE_MS / 1000, dt.timezone.utc)
    assert run["finished"] >= run["started"]
    assert '"retain_min":"1"' in run["overrides"] and '"write-only":"true"' in run["options"]
    assert len(audit_files(root)) == 1
    [summary] = table.audit()
    assert summary.to_json()["deleted_files"] == len(gone)
    assert summary.to_json()["deleted_bytes"] == sum(size_of[p] for p in gone)


def test_tags_and_consumers_name_what_expired(kit) -> None:
    table = kit.table(**{"consumer.expiration-time": "1 d"})
    for _ in range(3):
        table.append(kit.rows(2))
    table.create_tag("old", 1, time_retained=dt.timedelta(hours=1))
    table.context.store.write_consumer(Consumer(consumer_id="reader", next_snapshot=2, modified_ms=1000))
    root = kit.root(table)
    size_of = sizes(root, files_under(root))
    expire_snapshots(table.context, retain_min=3, time_retained=0, now_ms=FAR_FUTURE_MS)
    found = rows(table)
    assert found["tag/tag-old"] == (size_of["tag/tag-old"], "deleted", found["tag/tag-old"][2])
    assert found["tag/tag-old"][2] == "tag old (snapshot 1) expired: its time-retained passed"
    assert found["consumer/consumer-reader"][1] == "deleted"
    assert found["consumer/consumer-reader"][2].startswith(
        "consumer reader expired: not updated within consumer.expiration-time (cutoff "
    )


def test_orphans_are_recorded_with_their_age(kit) -> None:
    table = kit.table()
    table.append(kit.rows(4))
    table.write_files(kit.rows(4))  # written, never committed: orphans
    root = kit.root(table)
    orphans = files_under(root) - {f.path[len(str(root)) + 1 :] for f in table.files()}
    orphans = {p for p in orphans if "bucket-" in p}
    age_files(root, 10 * DAY_S)
    size_of = sizes(root, orphans)
    result = remove_orphan_files(table.context)
    assert set(result.deleted_paths) == orphans
    found = rows(table)
    assert {p: (s, st) for p, (s, st, _) in found.items()} == {p: (size_of[p], "deleted") for p in orphans}
    for _, _, reason in found.values():
        assert reason.startswith("orphan: no snapshot, tag, changelog or branch references it, last modified ")
        assert reason.endswith("(orphan-files.older-than 1 d)") and ", age 10 d" in reason


def test_dry_runs_and_runs_that_change_nothing_record_nothing(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(4))
    expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS, dry_run=True)
    remove_orphan_files(table.context, dry_run=True)
    table.rollback_to(2, dry_run=True)
    expire_snapshots(table.context, retain_min=10, now_ms=FAR_FUTURE_MS)  # nothing to expire
    assert audit_files(kit.root(table)) == set()


def test_the_ledger_can_be_turned_off(kit) -> None:
    table = kit.table(**{"maintenance.audit.enabled": "false"})
    for _ in range(4):
        table.append(kit.rows(4))
    assert expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS).deleted_paths
    assert audit_files(kit.root(table)) == set()


def test_rollback_records_the_snapshots_and_tags_it_removed(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(2))
    table.create_tag("late", 4)
    root = kit.root(table)
    size_of = sizes(root, files_under(root))
    table.rollback_to(2)
    why = "rolled back to snapshot 2"
    assert rows(table) == {
        "snapshot/snapshot-4": (size_of["snapshot/snapshot-4"], "deleted", f"{why}: snapshot 4 is newer"),
        "snapshot/snapshot-3": (size_of["snapshot/snapshot-3"], "deleted", f"{why}: snapshot 3 is newer"),
        "tag/tag-late": (size_of["tag/tag-late"], "deleted", f"{why}: tag late is of snapshot 4"),
    }
    [run] = table.audit()
    assert run.run.operation == "rollback" and run.run.overrides == {"snapshot_id": "2"}


def test_tag_delete_and_drop_partition(kit) -> None:
    table = kit.table()
    table.append(kit.rows(4, parts=(0, 1)))
    table.create_tag("t1", 1)
    root = kit.root(table)
    size_of = sizes(root, files_under(root))
    table.delete_tag("t1")
    part1 = {f.path[len(str(root)) + 1 :]: f.file_size for f in table.files() if f.partition["part"] == 1}
    snapshot = table.drop_partitions([{"part": 1}])
    assert snapshot is not None
    found = rows(table)
    assert found.pop("tag/tag-t1") == (size_of["tag/tag-t1"], "deleted", "tag t1 of snapshot 1 deleted by hand")
    why = f"partition part=1 dropped; replaced in snapshot {snapshot.id}"
    assert found == {p: (size, "retired", why) for p, size in part1.items()}
    assert [r.run.operation for r in table.audit()] == ["tag delete", "drop-partition"]
    assert [s.run.counts.retired_files for s in table.audit()] == [0, len(part1)]


def test_partition_expiration_records_the_partition_and_its_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TZ", "UTC")  # partition times are local wall-clock times
    time.tzset()
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = Table.create(
        str(tmp_path / "t"), schema, ["dt"], {"write-only": "true", "partition.expiration-time": "7 d",
                                             "partition.timestamp-formatter": "yyyy-MM-dd"},
    )  # fmt: skip
    for day in ("2026-01-01", "2026-03-01"):
        table.append(pa.table({"id": [1, 2], "dt": [day, day]}, schema=schema))
    old = {f.path[len(table.location) + 1 :]: f.file_size for f in table.files() if f.partition["dt"] == "2026-01-01"}
    now = int(dt.datetime(2026, 3, 5).timestamp() * 1000)
    result = expire_partitions(table.context, now_ms=now)
    assert [dict(p) for p in result.expired_partitions] == [{"dt": "2026-01-01"}]
    found = rows(table)
    assert {p: (s, st) for p, (s, st, _) in found.items()} == {p: (s, "retired") for p, s in old.items()}
    [reason] = {r for _, _, r in found.values()}
    assert reason.startswith("partition dt=2026-01-01 expired: its time 2026-01-01 00:00:00 is before the cutoff ")
    assert "2026-02-26 00:00:00 (partition.expiration-time=7 d, partition.expiration-strategy=values-time)" in reason


def test_compaction_and_record_expiry_record_the_replaced_files(kit) -> None:
    table = kit.table(**{"compaction.min.file-num": "2"})
    for _ in range(3):
        table.append(kit.rows(2, parts=(0,)))
    live = {f.path[len(table.location) + 1 :]: f.file_size for f in table.files()}
    result = compact(table.context)
    assert set(result.compacted_files) == set(live)
    found = rows(table)
    assert {p: (s, st) for p, (s, st, _) in found.items()} == {p: (s, "retired") for p, s in live.items()}
    assert all(r.startswith("compacted: merged with other small files") for _, _, r in found.values())
    assert [r.run.operation for r in table.audit()] == ["compact"]


def test_record_expiry_names_the_cutoff(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64())])
    options = {"write-only": "true", "record-level.expire-time": "1 d", "record-level.time-field": "ts",
               "record-level.time-field-type": "millis"}  # fmt: skip
    table = Table.create(str(tmp_path / "t"), schema, [], options)
    table.append(pa.table({"id": [1, 2], "ts": [1_000, 2_000]}, schema=schema))  # every row expired
    table.append(pa.table({"id": [3, 4], "ts": [1_000, FAR_FUTURE_MS]}, schema=schema))  # half
    sizes_of = {f.path[len(table.location) + 1 :]: f.file_size for f in table.files()}
    first, second = sorted(sizes_of, key=lambda p: [f.path for f in table.files()].index(table.location + "/" + p))
    result = expire_records(table.context, now_ms=10 * 86_400_000)
    assert set(result.dropped_files) == {first} and set(result.rewritten_files) == {second}
    found = rows(table)
    cutoff = "ts before the cutoff 1970-01-10T00:00:00+00:00 (record-level.expire-time=1 d)"
    assert found == {
        first: (sizes_of[first], "retired", f"record expiry: every row has {cutoff}"),
        second: (sizes_of[second], "retired", f"record expiry: rewritten without its rows that have {cutoff}"),
    }


@pytest.mark.parametrize("retained_days", [30])
def test_expiration_prunes_records_older_than_the_retention(kit, retained_days: int) -> None:
    table = kit.table(**{"maintenance.audit.time-retained": f"{retained_days} d"})
    day = 86_400_000
    start = FAR_FUTURE_MS - 100 * day
    for i in range(3):
        table.append(kit.rows(2))
        table.append(kit.rows(2))
        expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=start + i * 20 * day)
    runs = [r.run.started_ms for r in table.audit()]
    assert runs == [start + 20 * day, start + 40 * day]  # the first (40 d before the third) went
    remove_orphan_files(table.context, older_than=dt.timedelta(days=1), now_ms=FAR_FUTURE_MS + 365 * day)
    assert [r.run.started_ms for r in table.audit()] == runs  # orphan cleanup never prunes it


def test_pruning_waits_until_the_oldest_record_is_a_day_past_the_retention(kit) -> None:
    table = kit.table(**{"maintenance.audit.time-retained": "30 d"})
    day = 86_400_000
    start = FAR_FUTURE_MS - 100 * day
    started = []
    for offset in (0, 30 * day + day // 2, 31 * day + day // 2):
        table.append(kit.rows(2))
        table.append(kit.rows(2))
        expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=start + offset)
        started.append([r.run.started_ms - start for r in table.audit()])
    assert started == [[0], [0, 30 * day + day // 2], [30 * day + day // 2, 31 * day + day // 2]]


def test_maintain_records_each_operation_it_runs(tmp_path: Path) -> None:
    from support.warehouses import FakeClock, table_with_commits

    from tableformat.cleanup.maintainer import Maintainer, MaintainSettings

    root = tmp_path / "wh" / "db.db" / "t"
    table_with_commits(root, 6, **{"compaction.min.file-num": "2"})
    [report] = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=FakeClock()).run_once()
    assert report.ok
    table = Table.open(str(root))
    recorded = {s.run.operation: s.run.counts for s in table.audit()}
    ran = dict(report.operations)
    assert set(recorded) == {"compact", "expire"} <= set(ran)
    assert recorded["compact"].retired_files == len(ran["compact"].compacted_files)
    assert recorded["expire"].deleted_files == len(ran["expire"].deleted_paths)
    for summary in table.audit():
        assert {f.path for f in table.audit_files(summary.run.run_id) if f.state == "deleted"} == set(
            ran[summary.run.operation].deleted_paths
        )


def test_orphan_cleanup_and_check_never_see_the_ledger(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(4))
    expire_snapshots(table.context, **EVERYTHING, now_ms=FAR_FUTURE_MS)
    root = kit.root(table)
    records = audit_files(root)
    assert len(records) == 1
    age_files(root, 100 * DAY_S)
    checked = check_table(table.context, older_than=dt.timedelta(days=1))
    assert checked.skipped_unknown == () and checked.orphan_files == 0 and not checked.missing_files
    result = remove_orphan_files(table.context, older_than=dt.timedelta(days=1))
    assert not [p for p in result.deleted_paths if p.startswith(".tablefmt")]
    assert result.skipped_unknown == ()
    assert audit_files(root) == records  # and the claim's release left the ledger's directory alone
