"""``tablefmt demo``: build a sample table with a realistic history on local disk and show what it holds."""

from __future__ import annotations

import datetime as dt
import os
import random
import tempfile
from typing import TYPE_CHECKING

import click

from tableformat.cli.common import OneLineErrorCommand, handle_errors
from tableformat.clock import seconds_ago
from tableformat.lazy_module import lazy_module
from tableformat.table import Table
from tableformat.units import human_bytes, iso_from_ms

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

def event_schema() -> pa.Schema:
    """The demo table's columns."""
    return pa.schema(
        [
            pa.field("event_id", pa.int64(), nullable=False),
            pa.field("user_id", pa.int32()),
            pa.field("kind", pa.string()),
            pa.field("amount", pa.float64()),
            pa.field("ts", pa.timestamp("us")),
            pa.field("day", pa.date32()),
        ]
    )


def events_for(day: dt.date, count: int, first_id: int, rng: random.Random) -> pa.Table:
    """A day's worth of synthetic click/purchase events."""
    start = dt.datetime(day.year, day.month, day.day)
    return pa.table(
        {
            "event_id": list(range(first_id, first_id + count)),
            "user_id": [rng.randrange(1000) for _ in range(count)],
            "kind": [rng.choice(["view", "click", "purchase"]) for _ in range(count)],
            "amount": [round(rng.random() * 100, 2) for _ in range(count)],
            "ts": [start + dt.timedelta(seconds=rng.randrange(86_400)) for _ in range(count)],
            "day": [day] * count,
        },
        schema=event_schema(),
    )


def build_history(path: str) -> Table:
    """Create the demo table: 7 daily loads, a late-data overwrite, a dropped day and a tag."""
    rng = random.Random(7)
    table = Table.create(
        path,
        event_schema(),
        partition_keys=["day"],
        options={"snapshot.num-retained.min": "3", "snapshot.time-retained": "0 s", "write-only": "true"},
    )
    first = dt.date(2026, 11, 1)
    next_id = 1
    for offset in range(7):
        day = first + dt.timedelta(days=offset)
        table.append(events_for(day, 200, next_id, rng))
        next_id += 200
    table.create_tag("end-of-week")
    late_day = first + dt.timedelta(days=5)
    table.overwrite(events_for(late_day, 260, next_id, rng), partition={"day": late_day})
    table.drop_partitions([{"day": first}])
    return table


def describe(table: Table) -> None:
    """Print what the table holds."""
    snapshots = table.snapshots()
    click.echo(f"\ntable {table.location}")
    click.echo(f"  snapshots: {len(snapshots)} (ids {snapshots[0].id}..{snapshots[-1].id})")
    for s in snapshots:
        click.echo(
            f"    {s.id:>3} {s.commit_kind.value:<9} rows={s.total_record_count:<6} delta={s.delta_record_count}"
        )
    click.echo(f"  tags: {[t.name + '->' + str(t.snapshot.id) for t in table.tags()]}")
    current = table.to_arrow()
    days = sorted({d.isoformat() for d in current.column("day").to_pylist()})
    click.echo(f"  latest: {current.num_rows} rows in {len(table.files())} data files, days {days[0]}..{days[-1]}")
    click.echo(f"  tag end-of-week still reads {table.to_arrow(tag='end-of-week').num_rows} rows")


def count_files(root: str) -> tuple[int, int]:
    """(files, bytes) under a directory."""
    total_files = total_bytes = 0
    for folder, _, names in os.walk(root):
        for name in names:
            total_files += 1
            total_bytes += os.path.getsize(os.path.join(folder, name))
    return total_files, total_bytes


@click.command(cls=OneLineErrorCommand)
@click.argument("directory", required=False, type=click.Path(file_okay=False))
@handle_errors
def demo(directory: str | None) -> None:
    """Build a sample events table in DIRECTORY (default: a new temp dir) and show its history and maintenance."""
    if directory is None:
        directory = tempfile.mkdtemp(prefix="tablefmt-demo-")
    elif os.path.exists(directory) and os.listdir(directory):
        raise click.UsageError(f"{directory} is not empty; give a new or empty directory")
    path = os.path.join(directory, "events")
    click.echo("building a week of daily event loads, a late-data overwrite and a dropped day ...")
    table = build_history(path)
    describe(table)
    files, size = count_files(path)
    click.echo(f"  on disk: {files} files, {human_bytes(size)}")
    run_maintenance_demo(table, path)
    click.echo(f"\nexplore it: tablefmt snapshots {path}   |   tablefmt files {path}   |   tablefmt check {path}")


def show_partition_expiration(table: Table) -> None:
    """Days older than 4 days (judged at the end of the demo week) are dropped as one mark-delete snapshot."""
    click.echo("\npartition expiration: keep 4 days of events (judged at 2026-11-08 00:00, the end of the demo week)")
    week_end_ms = int(dt.datetime(2026, 11, 8).timestamp() * 1000)
    planned = table.maintenance.expire_partitions(expiration_time="4d", dry_run=True, now_ms=week_end_ms)
    days = [p["day"] for p in planned.expired_partitions]
    click.echo(f"  dry run: would drop {days} ({planned.files} files, {planned.rows} rows)")
    done = table.maintenance.expire_partitions(expiration_time="4d", now_ms=week_end_ms)
    click.echo(
        f"  dropped {[p['day'] for p in done.expired_partitions]} in snapshot(s) {list(done.snapshot_ids)}; "
        f"latest reads {table.to_arrow().num_rows} rows; their {human_bytes(done.bytes)} are freed by expiration "
        "once no snapshot or tag holds them (the end-of-week tag still does)"
    )


def run_maintenance_demo(table: Table, path: str) -> None:
    """Show partition expiration, snapshot expiration and orphan cleanup on the demo table."""
    show_partition_expiration(table)
    click.echo("\nexpiration: keep the newest 2 snapshots (time-retained 0 s for the demo)")
    planned = table.maintenance.expire_snapshots(retain_min=2, time_retained="0s", limit=100, dry_run=True)
    click.echo(
        f"  dry run: would expire {planned.expired_snapshots} snapshots and delete {planned.deleted_data_files} data "
        f"files, {planned.deleted_manifests} manifests, {planned.deleted_manifest_lists} manifest lists"
    )
    done = table.maintenance.expire_snapshots(retain_min=2, time_retained="0s", limit=100)
    click.echo(
        f"  expired {done.expired_snapshots} snapshots (earliest is now {done.earliest_snapshot}); deleted "
        f"{done.deleted_data_files} data files, {done.deleted_manifests} manifests, "
        f"{done.deleted_manifest_lists} manifest lists, {human_bytes(done.deleted_bytes)}"
    )
    click.echo(
        f"  the tag still protects its files: end-of-week reads {table.to_arrow(tag='end-of-week').num_rows} rows, "
        f"latest reads {table.to_arrow().num_rows} rows"
    )
    files, size = count_files(path)
    click.echo(f"  on disk: {files} files, {human_bytes(size)}")
    show_crash_leftover_cleanup(table)
    show_undo_window(table)


def show_crash_leftover_cleanup(table: Table) -> None:
    """A job wrote data files and crashed before committing; orphan cleanup finds and removes them."""
    click.echo("\norphan cleanup: a load job wrote its files, then crashed before committing")
    leftovers = table.write_files(events_for(dt.date(2026, 11, 8), 150, 1_000_000, random.Random(8)))
    two_days_ago = seconds_ago(2 * 86_400)
    for leftover in leftovers:  # age them past the 1-day guard, as if the crash happened two days ago
        os.utime(leftover.path, (two_days_ago, two_days_ago))
    report = table.maintenance.check()
    click.echo(f"  check: ok={report.ok}, {report.orphan_files} orphan file(s), {human_bytes(report.orphan_bytes)}")
    planned = table.maintenance.remove_orphan_files(dry_run=True)
    click.echo(f"  dry run would delete: {list(planned.deleted_paths)}")
    done = table.maintenance.remove_orphan_files()
    click.echo(
        f"  deleted {len(done.deleted_paths)} file(s), {human_bytes(done.deleted_bytes)}; "
        f"unknown files left alone: {len(done.skipped_unknown)}"
    )
    after = table.maintenance.check()
    click.echo(
        f"  check: ok={after.ok}, {after.orphan_files} orphan file(s); latest still reads "
        f"{table.to_arrow().num_rows} rows"
    )


def show_undo_window(table: Table) -> None:
    """A retention set too tight by mistake, taken back within the undo window; the audit ledger recorded it all."""
    click.echo("\nundo window: keep what maintenance takes for 1 day; a too tight retention, taken back")
    table.set_options({"maintenance.undo-window": "1 d"})
    done = table.maintenance.expire_snapshots(retain_min=1, time_retained="0s")
    click.echo(
        f"  expired snapshot(s) {list(done.expired_snapshot_ids)}; kept {len(done.deferred_paths)} file(s), "
        f"{human_bytes(done.deferred_bytes)} until {iso_from_ms(done.undo_until_ms)} (run {done.run_id})"
    )
    undone = table.maintenance.undo(done.run_id)
    click.echo(
        f"  undo: restored snapshot(s) {list(undone.restored_snapshots)}; snapshots are now "
        f"{[s.id for s in table.snapshots()]}"
    )
    runs = table.audit()
    click.echo(f"  audit ledger: {len(runs)} run(s): {', '.join(r.run.operation for r in runs)} (tablefmt audit)")
