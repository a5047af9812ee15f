"""The report's figures against the commands they summarise, on the same table: each rule's dry run, ``tablefmt
partitions`` and ``describe``, and an independent recomputation of storage over time from full live sets."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.events import build_events
from support.operations import planned_json

from tableformat.cleanup.maintainer import MaintainSettings, TableTarget, maintain_table
from tableformat.cleanup.maintainer.keep_up import count_ingest
from tableformat.cli.main import cli
from tableformat.live_set import live_entries
from tableformat.report import table_report
from tableformat.table import Table


def _now() -> int:
    return time.time_ns() // 1_000_000


def test_each_rule_is_its_own_dry_run(events: Table) -> None:
    now = _now()
    report = events.report(now_ms=now)
    assert [r.operation for r in report.rules] == list(events.maintenance.names)
    configured = [r.operation for r in report.rules if r.configured]
    assert configured == ["expire-partitions", "expire", "remove-orphans"]
    assert all(r.result is None and r.frees_bytes == 0 for r in report.rules if not r.configured)
    for rule in (r for r in report.rules if r.configured):
        dry = events.maintenance.run(rule.operation, dry_run=True, now_ms=now)
        assert rule.result is not None
        assert planned_json(rule.result) == planned_json(dry)
        assert (rule.frees_bytes, rule.frees_files) == (dry.deleted_bytes, len(dry.deleted_paths))
    expire, partitions, orphans = (report.rule(n) for n in ("expire", "expire-partitions", "remove-orphans"))
    assert expire is not None and expire.frees_bytes > 0
    assert partitions is not None and partitions.frees_bytes == 0
    assert partitions.marks_bytes == partitions.result.bytes > 0  # type: ignore[union-attr]
    assert partitions.marks_rows == partitions.result.rows > 0  # type: ignore[union-attr]
    assert orphans is not None and report.orphan_files == 1 and report.orphan_bytes == orphans.frees_bytes > 0
    assert report.reclaimable_bytes == expire.frees_bytes + orphans.frees_bytes


def test_partitions_equal_tablefmt_partitions_and_marks_equal_the_partition_dry_run(events: Table) -> None:
    now = _now()
    report = events.report(now_ms=now)
    printed = json.loads(CliRunner().invoke(cli, ["partitions", events.location, "--json"]).stdout)
    assert [(dict(p.shown), p.record_count, p.file_size_in_bytes, p.file_count) for p in report.partitions] == [
        (p["partition"], p["record_count"], p["file_size_in_bytes"], p["file_count"]) for p in printed
    ]
    dry = events.maintenance.run("expire-partitions", dry_run=True, now_ms=now)
    dropped = [p.partition for p in report.partitions if p.dropped_by]
    assert dropped == [f"day={p['day']}" for p in dry.expired_partitions]  # type: ignore[attr-defined]
    assert len(dropped) == 3 and all(p.dropped_by == ("expire-partitions",) for p in report.partitions if p.dropped_by)
    kept = [p for p in report.partitions if not p.dropped_by]
    assert len(kept) == 3 and all(p.trimmed_by == () for p in report.partitions)
    assert sum(p.file_size_in_bytes for p in report.partitions if p.dropped_by) == dry.bytes  # type: ignore[attr-defined]
    assert sum(p.record_count for p in report.partitions if p.dropped_by) == dry.rows  # type: ignore[attr-defined]


def test_latest_point_equals_describe(events: Table) -> None:
    report = events.report()
    described = json.loads(CliRunner().invoke(cli, ["describe", events.location, "--json"]).stdout)
    latest = report.storage.latest
    assert latest is not None
    assert (latest.live_bytes, latest.live_files, latest.live_rows) == (
        described["live_bytes"], described["live_files"], described["live_records"]
    )  # fmt: skip
    assert report.orphan_bytes == described["sizes"]["orphan_bytes"]
    assert report.reclaimable_bytes == described["sizes"]["reclaimable_bytes"]
    assert len(report.partitions) == described["partitions"]


def _held(table: Table, snapshot_id: int, earliest: int) -> tuple[int, int]:
    """(live bytes, bytes held by retained snapshots <= snapshot_id and by tags older than earliest, not live),
    each snapshot's live set read whole through the scan side's live_entries."""
    ctx = table.context
    codec = ctx.partition_codec()

    def files(snapshot: object) -> dict[object, int]:
        return {e.identifier(): e.file.file_size for e in live_entries(ctx.store, snapshot, codec)}  # type: ignore[arg-type]

    live = files(ctx.store.read_snapshot(snapshot_id))
    held: dict[object, int] = {}
    for sid in range(earliest, snapshot_id + 1):
        held.update(files(ctx.store.read_snapshot(sid)))
    for tag in ctx.store.tags():
        if tag.snapshot.id < earliest:
            held.update(files(tag.snapshot))
    return sum(live.values()), sum(size for key, size in held.items() if key not in live)


def test_storage_over_time_equals_whole_live_sets_of_every_snapshot(events: Table) -> None:
    report = events.report()
    store = events.context.store
    ids = store.snapshot_ids()
    assert ids[0] == 3 == report.storage.earliest_snapshot  # the tag's snapshot 2 is older than the earliest
    assert [p.snapshot_id for p in report.storage.points] == ids
    for point in report.storage.points:
        snapshot = store.read_snapshot(point.snapshot_id)
        assert (point.time_ms, point.live_rows, point.commit_kind) == (
            snapshot.time_millis, snapshot.total_record_count, snapshot.commit_kind.value
        )  # fmt: skip
        assert (point.live_bytes, point.older_only_bytes) == _held(events, point.snapshot_id, ids[0])
    assert report.storage.tag_only_bytes > 0
    tag = store.read_tag("early").snapshot
    lists = [store.read_snapshot(ids[0]).base_manifest_list, tag.base_manifest_list, tag.delta_manifest_list]
    lists += [store.read_snapshot(i).delta_manifest_list for i in ids]
    manifests = {m.file_name for name in lists for m in store.read_manifest_list(name)}
    assert report.storage.manifests_read == len(manifests)  # each read once
    kinds = [p.commit_kind for p in report.storage.points]
    assert kinds[-2:] == ["OVERWRITE", "OVERWRITE"] and report.storage.points[-1].removed_bytes > 0


def test_older_only_bytes_are_what_expiring_everything_deletes(tmp_path: Path) -> None:
    table = build_events(tmp_path / "t", orphans=False)
    table.delete_tag("early")
    report = table.report()
    latest = report.storage.latest
    assert latest is not None and latest.older_only_bytes > 0
    dry = table.maintenance.expire_snapshots(retain_min=1, retain_max=1, time_retained="1ms", dry_run=True)
    root = Path(table.context.layout.root)
    data = [p for p in dry.deleted_paths if p.startswith("day=")]
    assert sum((root / p).stat().st_size for p in data) == latest.older_only_bytes


def test_keep_up_from_history_then_from_the_maintain_state(events: Table) -> None:
    now = _now()
    settings = MaintainSettings()
    first = events.report(now_ms=now)
    assert first.keep_up is not None and first.keep_up.source == "snapshot history"
    counted, _ = count_ingest(
        events.context.store, 0, events.context.store.latest_snapshot_id(), now, settings.keep_up_window_ms
    )
    assert sum(h.ingest_bytes for h in first.keep_up.hours) == sum(h.ingest_bytes for h in counted) > 0
    assert sum(h.commits for h in first.keep_up.hours) == len(counted)
    assert all(r.next_due_ms is None for r in first.rules)
    maintained = maintain_table(TableTarget(events.location, events.location), settings, owner="test")
    assert maintained.ok, maintained.errors
    later = events.report()
    assert later.keep_up is not None and later.keep_up.source == "maintain state"
    state = events.context.store.read_maintain_state()
    assert state is not None
    assert {r.operation: r.next_due_ms for r in later.rules if r.next_due_ms is not None} == {
        name: op.next_due_ms for name, op in state.operations.items() if op.next_due_ms < 2**62
    }
    assert [r.operation for r in later.rules if r.next_due_ms is not None] == [
        "expire-partitions",
        "expire",
        "remove-orphans",
    ]
    reclaimed = sum(r.deleted_bytes for _, r in maintained.operations)
    assert sum(h.reclaimed_bytes for h in later.keep_up.hours) == reclaimed > 0
    assert later.rule("expire").frees_bytes == 0  # type: ignore[union-attr]


def test_a_limit_that_falls_behind_is_a_warning(tmp_path: Path) -> None:
    table = build_events(tmp_path / "t", orphans=False)
    table.set_options({"snapshot.expire.limit": "1", "snapshot.num-retained.min": "1"})
    report = table_report(table.context, settings=MaintainSettings(backlog_retry_ms=3_600_000))
    expire = report.rule("expire")
    assert expire is not None and expire.backlog > 0
    assert report.keep_up is not None and report.keep_up.keep_up.falling_behind
    assert any("raise snapshot.expire.limit" in w for w in report.warnings)


def test_since_limits_the_keep_up_window_and_the_growth(events: Table) -> None:
    now = _now()
    report = events.report(now_ms=now, since="1 h")
    assert report.since_ms == now - 3_600_000
    assert report.keep_up is not None and report.keep_up.window_ms == 3_600_000
    with pytest.raises(ValueError, match="positive duration"):
        events.report(since=0)


def test_record_ttl_marks_dropped_and_trimmed_partitions(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32()), pa.field("ts", pa.timestamp("us"))])
    table = Table.create(
        str(tmp_path / "t"), schema, partition_keys=["part"],
        options={"write-only": "true", "record-level.expire-time": "2 d", "record-level.time-field": "ts"},
    )  # fmt: skip
    now = dt.datetime.now()
    old, new = now - dt.timedelta(days=5), now - dt.timedelta(hours=1)
    for part, times in ((0, [old, old]), (1, [old, new]), (2, [new, new])):
        table.append(pa.table({"id": [10 * part, 10 * part + 1], "part": [part, part], "ts": times}, schema=schema))
    stamp = time.time_ns() // 1_000_000
    report = table.report(now_ms=stamp)
    dry = table.maintenance.run("expire-records", dry_run=True, now_ms=stamp)
    rule = report.rule("expire-records")
    assert rule is not None and rule.result is not None and planned_json(rule.result) == planned_json(dry)
    assert (
        (rule.marks_bytes, rule.marks_rows)
        == (dry.bytes_reclaimable, dry.expired_rows)
        == (  # type: ignore[attr-defined]
            rule.marks_bytes,
            3,
        )
    )
    marks = {p.partition: (p.dropped_by, p.trimmed_by) for p in report.partitions}
    assert marks == {
        "part=0": (("expire-records",), ()),
        "part=1": ((), ("expire-records",)),
        "part=2": ((), ()),
    }
