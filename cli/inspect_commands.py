"""``tablefmt snapshots``, ``files``, ``partitions``, ``describe``: the table seen as Paimon's system tables show it
(``table.inspect``), for people (aligned columns at 80 columns, KiB/MiB/GiB, ISO times with the local zone) and for
machines (``--json``). Registered on the group in cli/main.py."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import click

from tableformat.cli.common import (
    OneLineErrorCommand,
    echo_json,
    handle_errors,
    open_table,
    progress,
    storage_option_flag,
)
from tableformat.cli.render import (
    echo_pairs,
    human_bytes,
    human_count,
    iso_local,
    iso_time,
    print_table,
)
from tableformat.inspect import (
    RAW_ROWS_NOTE,
    ROW_COUNT_EXACT,
    ROW_COUNT_METADATA_KEY,
    ROW_COUNT_RAW,
    TableDescription,
)
from tableformat.lazy_module import lazy_module
from tableformat.units import time_pair

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

_snapshot_flag = click.option(
    "--snapshot", "snapshot_id", type=int, default=None, help="Snapshot id (default: latest)."
)
_tag_flag = click.option("--tag", default=None, help="A tag's snapshot instead of the latest.")
_json_flag = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def _ms(value: Any) -> int | None:
    """A pyarrow timestamp value (datetime) as epoch milliseconds."""
    if value is None:
        return None
    return int(value.timestamp() * 1000)


_UTC = ZoneInfo("UTC")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as pyarrow's ``to_pylist`` gives them. Columns of UTC milliseconds are converted here, to the same
    datetimes: pyarrow's own conversion of a zoned timestamp imports pandas (start-up: docs/benchmarks.md)."""
    utc_ms = pa.timestamp("ms", tz="UTC")
    zoned = [field.name for field in table.schema if field.type == utc_ms]
    rows: list[dict[str, Any]] = table.drop_columns(zoned).to_pylist() if zoned else table.to_pylist()
    for name in zoned:
        millis = table.column(name).cast(pa.int64()).to_pylist()
        for row, value in zip(rows, millis):
            row[name] = None if value is None else _EPOCH + dt.timedelta(milliseconds=value)
    if zoned:  # the columns in the table's order, as to_pylist has them
        rows = [{name: row[name] for name in table.column_names} for row in rows]
    return rows


def _count_kind(table: pa.Table) -> str:
    """What the record counts of an inspection table are: "exact" (append table) or "raw" (primary-key table)."""
    kind = (table.schema.metadata or {}).get(ROW_COUNT_METADATA_KEY, ROW_COUNT_EXACT.encode())
    return bytes(kind).decode()


def _records_header(kind: str) -> str:
    """The column header of record counts: "records" on append tables (unchanged), "raw rows" on primary-key ones."""
    return "raw rows" if kind == ROW_COUNT_RAW else "records"


@click.command("snapshots", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--no-sizes", is_flag=True, help="Skip the added/removed bytes (they read each commit's manifests).")
@_json_flag
@storage_option_flag
@handle_errors
def snapshots(table: str, no_sizes: bool, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """List the snapshots of TABLE, oldest first: kind, commit time, records, bytes added and removed."""
    with progress("reading snapshots") as current:
        found = open_table(table, storage_options, current).inspect.snapshots(sizes=not no_sizes)
    items, kind = _rows(found), _count_kind(found)
    if as_json:
        echo_json([{**_snapshot_json(s), "row_count_kind": kind} for s in items])
        return
    rows = [
        [
            s["snapshot_id"],
            s["commit_kind"],
            iso_time(_ms(s["commit_time"])),
            human_count(s["total_record_count"]),
            human_bytes(s.get("added_bytes")),
            human_bytes(s.get("deleted_bytes")),
        ]
        for s in items
    ]
    records = _records_header(kind)
    print_table(
        ["id", "kind", "committed", records, "added", "removed"], rows, right=["id", records, "added", "removed"]
    )


def _snapshot_json(s: dict[str, Any]) -> dict[str, Any]:
    document = {
        "snapshot_id": s["snapshot_id"],
        "schema_id": s["schema_id"],
        "commit_kind": s["commit_kind"],
        **time_pair("commit_time", _ms(s["commit_time"])),
        "total_record_count": s["total_record_count"],
        "delta_record_count": s["delta_record_count"],
        "changelog_record_count": s["changelog_record_count"],
        "commit_user": s["commit_user"],
        "commit_identifier": s["commit_identifier"],
    }
    for key in ("added_files", "added_bytes", "deleted_files", "deleted_bytes"):
        if key in s:
            document[key] = s[key]
    return document


@click.command("partitions", cls=OneLineErrorCommand)
@click.argument("table")
@_snapshot_flag
@_tag_flag
@_json_flag
@storage_option_flag
@handle_errors
def partitions(
    table: str, snapshot_id: int | None, tag: str | None, as_json: bool, storage_options: tuple[str, ...]
) -> None:
    """List the partitions of a snapshot of TABLE (latest by default) as Paimon's $partitions: values as users
    write them (dates as yyyy-MM-dd), records, files, bytes, last update."""
    with progress("reading partitions") as current:
        inspector = open_table(table, storage_options, current).inspect
        found = inspector.partitions(snapshot_id, tag)
    items, kind = _rows(found), _count_kind(found)
    if as_json:
        echo_json(
            [
                {
                    "partition": inspector.partition_values_text(p["values"]),
                    "record_count": p["record_count"],
                    "file_count": p["file_count"],
                    "file_size_in_bytes": p["file_size_in_bytes"],
                    **time_pair("last_update_time", _local_ms(p["last_update_time"])),
                    "row_count_kind": kind,
                }
                for p in items
            ]
        )
        return
    rows = [
        [
            p["partition"],
            human_count(p["record_count"]),
            human_count(p["file_count"]),
            human_bytes(p["file_size_in_bytes"]),
            iso_local(p["last_update_time"]),
        ]
        for p in items
    ]
    records = _records_header(kind)
    print_table(
        ["partition", records, "files", "size", "last update"],
        rows,
        right=[records, "files", "size"],
        fold=["partition"],
    )
    _total(
        len(items),
        sum(p["file_count"] for p in items),
        sum(p["record_count"] for p in items),
        sum(p["file_size_in_bytes"] for p in items),
        kind,
    )


def _total(partition_count: int, files: int, records: int, size: int, kind: str) -> None:
    """The closing line; on a primary-key table its rows are "raw rows", explained on a line of their own."""
    rows = f"{human_count(records)} raw rows" if kind == ROW_COUNT_RAW else f"{human_count(records)} records"
    counts = f"{human_count(partition_count)} partition(s), {human_count(files)} file(s)"
    click.echo(f"{counts}, {rows}, {human_bytes(size)}")
    if kind == ROW_COUNT_RAW:
        click.echo("raw rows count every stored version of a key; merged rows need a read")


@click.command("files", cls=OneLineErrorCommand)
@click.argument("table")
@_snapshot_flag
@_tag_flag
@click.option("--list", "full", is_flag=True, help="List every file instead of a summary per partition.")
@_json_flag
@storage_option_flag
@handle_errors
def files(
    table: str, snapshot_id: int | None, tag: str | None, full: bool, as_json: bool, storage_options: tuple[str, ...]
) -> None:
    """Summarise the live data files of a snapshot of TABLE per partition (every file with --list; --json always
    lists every file)."""
    with progress("reading files") as current:
        target = open_table(table, storage_options, current)
        found = target.inspect.files(snapshot_id, tag)
    items, kind = _rows(found), _count_kind(found)
    if as_json:
        echo_json([{**_file_json(target, f), "row_count_kind": kind} for f in items])
        return
    records = _records_header(kind)
    if full:
        _list_files(items, records)
    else:
        groups: dict[str, list[dict[str, Any]]] = {}
        for f in items:
            groups.setdefault(f["partition"], []).append(f)
        rows = []
        for name, group in groups.items():
            sizes = [f["file_size_in_bytes"] for f in group]
            rows.append(
                [
                    name,
                    human_count(len(group)),
                    human_count(sum(f["record_count"] for f in group)),
                    human_bytes(sum(sizes)),
                    human_bytes(min(sizes)),
                    human_bytes(max(sizes)),
                ]
            )
        print_table(
            ["partition", "files", records, "size", "smallest", "largest"],
            rows,
            right=["files", records, "size", "smallest", "largest"],
            fold=["partition"],
        )
    _total(
        len({f["partition"] for f in items}),
        len(items),
        sum(f["record_count"] for f in items),
        sum(f["file_size_in_bytes"] for f in items),
        kind,
    )


def _list_files(items: list[dict[str, Any]], records: str) -> None:
    """Every file under a line per partition (and bucket): name, records, size; names stay whole at 80 columns."""
    rows: list[list[str]] = []
    current = None
    for f in items:
        head = f"{f['partition'] or '(unpartitioned)'}  bucket-{f['bucket']}"
        if head != current:
            current = head
            rows.append([head, "", ""])
        rows.append(
            [
                "  " + f["file_path"].rpartition("/")[2],
                human_count(f["record_count"]),
                human_bytes(f["file_size_in_bytes"]),
            ]
        )
    print_table(["file", records, "size"], rows, right=[records, "size"])


def _file_json(target: Any, f: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": f["file_path"],
        "partition": target.inspect.partition_values_text(f["values"]),
        "bucket": f["bucket"],
        "record_count": f["record_count"],
        "file_size_in_bytes": f["file_size_in_bytes"],
        "schema_id": f["schema_id"],
        **time_pair("creation_time", _local_ms(f["creation_time"])),
    }


def _local_ms(value: dt.datetime | None) -> int | None:
    """A naive local wall-clock time (a file's creation time) as epoch milliseconds."""
    return None if value is None else int(value.astimezone().timestamp() * 1000)


def _live_data(found: TableDescription) -> tuple[str, str]:
    """The "live data" line: bytes, files, records (append tables) and partitions; a primary-key table's raw row
    count gets a line of its own ("rows")."""
    files = f"{human_bytes(found.live_bytes)} in {human_count(found.live_files)} file(s)"
    partitions = f"{human_count(found.partitions)} partition(s)"
    if found.row_count_kind == ROW_COUNT_RAW:
        return "live data", f"{files}, {partitions}"
    return "live data", f"{files}, {human_count(found.live_records)} records, {partitions}"


@click.command("describe", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--no-sizes", is_flag=True, help="Skip stored and reclaimable bytes (they list every file, as check).")
@_json_flag
@storage_option_flag
@handle_errors
def describe(table: str, no_sizes: bool, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Describe TABLE: schema, partition keys, options (effective values and where they come from), snapshots,
    tags, branches, and the bytes that are live, stored and reclaimable."""
    with progress("describing") as current:
        found = open_table(table, storage_options, current).inspect.describe(sizes=not no_sizes)
    if as_json:
        echo_json(found.to_json())
        return
    latest = "-" if found.latest_snapshot is None else f"{found.latest_snapshot} ({iso_time(found.latest_time_ms)})"
    pairs: list[tuple[str, Any]] = [
        ("table", found.location),
        ("schema", f"schema-{found.schema_id}, {len(found.columns)} column(s)"),
        ("partitioned by", ", ".join(found.partition_keys) or "-"),
        *([("primary key", ", ".join(found.primary_keys))] if found.primary_keys else []),
        ("snapshots", f"{found.snapshots}, earliest {found.earliest_snapshot or '-'}, latest {latest}"),
        ("tags", found.tags),
        ("branches", ", ".join(found.branches) or "-"),
        ("consumers", found.consumers),
        _live_data(found),
    ]
    if found.row_count_kind == ROW_COUNT_RAW:
        pairs.append(("rows", f"{human_count(found.live_records)} ({RAW_ROWS_NOTE})"))
    if found.sizes is not None:
        sizes = found.sizes
        held = f", held by the undo window {human_bytes(sizes['held_bytes'])}" if sizes["held_bytes"] else ""
        pairs += [
            ("stored", f"{human_bytes(sizes['total_bytes'])} (orphans {human_bytes(sizes['orphan_bytes'])}{held})"),
            ("reclaimable", f"{human_bytes(sizes['reclaimable_bytes'])}: {sizes['reclaimable_note']}"),
        ]
    echo_pairs(pairs)
    click.echo("")
    print_table(["column", "type", "id"], [list(c) for c in found.columns], right=["id"])
    click.echo("")
    chosen = [o for o in found.options if o.source != "default"]
    print_table(["option", "value", "source"], [[o.key, o.value, o.source] for o in chosen], fold=["value"])
    rest = len(found.options) - len(chosen)
    click.echo(f"{rest} other option(s) at their defaults (`tablefmt options TABLE --all`)")
