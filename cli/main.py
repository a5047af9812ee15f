"""The ``tablefmt`` click group, its table commands (create, write, snapshots, files, drop-partition, tag) and main.

A thin layer over the Python API; expire, remove-orphans, check and demo live in the ``*_command.py`` modules and
are registered on the group here.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click
import pyarrow.parquet as pq

from tableformat.cli.common import (
    OneLineErrorGroup,
    echo_json,
    handle_errors,
    open_table,
    parse_storage_options,
    storage_option_flag,
)
from tableformat.cli.demo_command import demo
from tableformat.cli.expire_command import expire
from tableformat.cli.maintain_command import maintain
from tableformat.cli.operation_commands import add_operation_commands
from tableformat.cli.orphans_command import check, remove_orphans
from tableformat.errors import UnknownOptionError, ValidationError
from tableformat.model.partition import parse_spec_text
from tableformat.model.snapshot import Snapshot
from tableformat.options import TableOptions, check_option_keys
from tableformat.table import Table


@click.group(cls=OneLineErrorGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tablefmt")
@click.option("-v", "--verbose", count=True, help="Log more (-v: info, -vv: debug).")
def cli(verbose: int) -> None:
    """tablefmt: Apache Paimon append tables with safe retention (expire, remove-orphans, check)."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def snapshot_json(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "id": snapshot.id,
        "schema_id": snapshot.schema_id,
        "commit_kind": snapshot.commit_kind.value,
        "time_millis": snapshot.time_millis,
        "total_record_count": snapshot.total_record_count,
        "delta_record_count": snapshot.delta_record_count,
        "commit_user": snapshot.commit_user,
        "commit_identifier": snapshot.commit_identifier,
    }


def table_options(pairs: tuple[str, ...], allow_unknown: bool) -> dict[str, str]:
    """``--option k=v`` flags as a dict, names and values checked as Table.create will (a usage error if not)."""
    opts: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="'--option'")
        key, value = pair.split("=", 1)
        if key in opts:
            raise click.BadParameter(f"{key} is given twice", param_hint="'--option'")
        opts[key] = value
    try:
        check_option_keys(opts, allow_unknown=allow_unknown)
        TableOptions(opts).validate()
    except UnknownOptionError as exc:
        hint = "to store options tablefmt does not know, pass --allow-unknown-options"
        raise click.UsageError(exc.describe(hint)) from None
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'--option'") from None
    return opts


@cli.command()
@click.argument("table")
@click.option(
    "--schema-from",
    "schema_from",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A Parquet file whose schema the new table takes.",
)
@click.option("--partition-keys", default="", help="Comma-separated partition columns.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Table option (repeatable): a tablefmt or Paimon option, see docs/options.md.",
)
@click.option(
    "--allow-unknown-options",
    is_flag=True,
    help="Store --option names neither tablefmt nor Paimon knows (otherwise refused as likely typos).",
)
@storage_option_flag
@handle_errors
def create(
    table: str,
    schema_from: str,
    partition_keys: str,
    options: tuple[str, ...],
    allow_unknown_options: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Create an empty table at TABLE with the schema of a Parquet file."""
    opts = table_options(options, allow_unknown_options)
    schema = pq.read_schema(schema_from).remove_metadata()
    keys = [k.strip() for k in partition_keys.split(",") if k.strip()]
    created = Table.create(
        table, schema, keys, opts, parse_storage_options(storage_options), allow_unknown_options=allow_unknown_options
    )
    click.echo(f"created {created.location} with columns {list(schema.names)} partitioned by {keys}")


@cli.command()
@click.argument("table")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--overwrite", is_flag=True, help="Replace the whole table (or --partition) instead of appending.")
@click.option("--partition", default=None, metavar="K=V[,K=V]", help="With --overwrite: the partition to replace.")
@click.option("--dynamic", is_flag=True, help="With --overwrite: replace exactly the partitions present in FILE.")
@click.option(
    "--fill-missing-columns",
    is_flag=True,
    help="Write nulls for nullable table columns FILE lacks (without it a missing column is an error; a missing "
    "partition key or NOT NULL column always is).",
)
@storage_option_flag
@handle_errors
def write(
    table: str,
    file: str,
    overwrite: bool,
    partition: str | None,
    dynamic: bool,
    fill_missing_columns: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Append a Parquet FILE to TABLE (one snapshot), or overwrite with --overwrite."""
    if (partition or dynamic) and not overwrite:
        raise click.UsageError("--partition and --dynamic need --overwrite")
    data = pq.read_table(file)
    target = open_table(table, storage_options)
    if overwrite:
        spec = parse_spec_text(partition) if partition else None
        snapshot = target.overwrite(data, spec, dynamic=dynamic or None, fill_missing_columns=fill_missing_columns)
    else:
        snapshot = target.append(data, fill_missing_columns=fill_missing_columns)
    if snapshot is None:
        click.echo("nothing to commit (no rows); no snapshot written")
    else:
        click.echo(f"committed snapshot {snapshot.id} ({snapshot.commit_kind.value}, {data.num_rows} rows)")


@cli.command()
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@storage_option_flag
@handle_errors
def snapshots(table: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """List the snapshots of TABLE, oldest first."""
    items = open_table(table, storage_options).snapshots()
    if as_json:
        echo_json([snapshot_json(s) for s in items])
        return
    for s in items:
        click.echo(
            f"{s.id:>6}  {s.commit_kind.value:<9}  rows={s.total_record_count}  delta={s.delta_record_count}  "
            f"time_ms={s.time_millis}"
        )


@cli.command()
@click.argument("table")
@click.option("--snapshot", "snapshot_id", type=int, default=None, help="Snapshot id (default: latest).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@storage_option_flag
@handle_errors
def files(table: str, snapshot_id: int | None, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """List the live data files of a snapshot of TABLE."""
    items = open_table(table, storage_options).files(snapshot_id)
    if as_json:
        echo_json(
            [
                {
                    "path": f.path,
                    "partition": f.partition,
                    "bucket": f.bucket,
                    "row_count": f.row_count,
                    "file_size": f.file_size,
                }
                for f in items
            ]
        )
        return
    for f in items:
        click.echo(f"{f.path}  rows={f.row_count}  bytes={f.file_size}")


@cli.command("drop-partition")
@click.argument("table")
@click.argument("partitions", nargs=-1, required=True, metavar="K=V[,K=V] ...")
@storage_option_flag
@handle_errors
def drop_partition(table: str, partitions: tuple[str, ...], storage_options: tuple[str, ...]) -> None:
    """Mark-delete partitions of TABLE in one snapshot (bytes are freed by `tablefmt expire`)."""
    specs = [parse_spec_text(p) for p in partitions]
    snapshot = open_table(table, storage_options).drop_partitions(specs)
    if snapshot is None:
        click.echo("no data in those partitions; no snapshot written")
    else:
        click.echo(f"committed snapshot {snapshot.id} (OVERWRITE, {-(snapshot.delta_record_count or 0)} rows dropped)")


@cli.group()
def tag() -> None:
    """Create, delete and list tags (tags protect a snapshot's files from expiration)."""


@tag.command("create")
@click.argument("table")
@click.argument("name")
@click.option("--snapshot", "snapshot_id", type=int, default=None, help="Snapshot id (default: latest).")
@storage_option_flag
@handle_errors
def tag_create(table: str, name: str, snapshot_id: int | None, storage_options: tuple[str, ...]) -> None:
    """Create tag NAME on a snapshot of TABLE."""
    created = open_table(table, storage_options).create_tag(name, snapshot_id)
    click.echo(f"tag {created.name} -> snapshot {created.snapshot.id}")


@tag.command("delete")
@click.argument("table")
@click.argument("name")
@storage_option_flag
@handle_errors
def tag_delete(table: str, name: str, storage_options: tuple[str, ...]) -> None:
    """Delete tag NAME of TABLE."""
    open_table(table, storage_options).delete_tag(name)
    click.echo(f"deleted tag {name}")


@tag.command("list")
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@storage_option_flag
@handle_errors
def tag_list(table: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """List the tags of TABLE."""
    items = open_table(table, storage_options).tags()
    if as_json:
        echo_json(
            [
                {"name": t.name, "snapshot_id": t.snapshot.id, "time_retained_seconds": t.time_retained_seconds}
                for t in items
            ]
        )
        return
    for t in items:
        click.echo(f"{t.name}  -> snapshot {t.snapshot.id}")


cli.add_command(demo)
cli.add_command(expire)
cli.add_command(remove_orphans)
cli.add_command(check)
cli.add_command(maintain)
add_operation_commands(cli)  # every other registered maintenance operation


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="tablefmt")


if __name__ == "__main__":
    main()
