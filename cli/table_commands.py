"""The table commands: create, write and drop-partition (a thin layer over the Python API)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from tableformat.cli.common import (
    OneLineErrorCommand,
    echo_json,
    handle_errors,
    open_table,
    parse_storage_options,
    say,
    storage_option_flag,
)
from tableformat.cli.render import wrap
from tableformat.errors import UnknownOptionError, ValidationError
from tableformat.inspect import nearby_partitions
from tableformat.lazy_module import lazy_module
from tableformat.model.partition import parse_spec_text
from tableformat.options import TableOptions, check_option_keys
from tableformat.table import Table

if TYPE_CHECKING:
    import pyarrow.parquet as pq
else:
    pq = lazy_module("pyarrow.parquet")


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


@click.command(cls=OneLineErrorCommand)
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
@click.option("--json", "as_json", is_flag=True, help="Print the new table as one JSON object.")
@storage_option_flag
@handle_errors
def create(
    table: str,
    schema_from: str,
    partition_keys: str,
    options: tuple[str, ...],
    allow_unknown_options: bool,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Create an empty table at TABLE with the schema of a Parquet file."""
    opts = table_options(options, allow_unknown_options)
    schema = pq.read_schema(schema_from).remove_metadata()
    keys = [k.strip() for k in partition_keys.split(",") if k.strip()]
    storage = parse_storage_options(storage_options)
    try:
        created = Table.create(table, schema, keys, opts, storage, allow_unknown_options=allow_unknown_options)
    except ValidationError as exc:  # options or partition keys that do not fit the schema: what the flags said
        raise click.UsageError(str(exc)) from None
    if as_json:
        echo_json(
            {
                "location": created.location,
                "schema_id": created.context.schema.id,
                "columns": list(schema.names),
                "partition_keys": keys,
                "options": dict(created.context.schema.options),
            }
        )
    else:
        say(f"created {created.location} with columns {list(schema.names)} partitioned by {keys}")


@click.command(cls=OneLineErrorCommand)
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
@click.option("--json", "as_json", is_flag=True, help="Print the commit and its after-commit maintenance as JSON.")
@storage_option_flag
@handle_errors
def write(
    table: str,
    file: str,
    overwrite: bool,
    partition: str | None,
    dynamic: bool,
    fill_missing_columns: bool,
    as_json: bool,
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
    if as_json:
        echo_json(
            {
                "snapshot_id": None if snapshot is None else snapshot.id,
                "commit_kind": None if snapshot is None else snapshot.commit_kind.value,
                "record_count": data.num_rows,
                "after_commit": [{"operation": done.operation, **done.to_json()} for done in target.last_after_commit],
            }
        )
    elif snapshot is None:
        say("nothing to commit (no rows); no snapshot written")
    else:
        say(f"committed snapshot {snapshot.id} ({snapshot.commit_kind.value}, {data.num_rows} rows)")
        for done in target.last_after_commit:
            if done.did_something():
                say(f"after commit: {done.headline()}")


@click.command("drop-partition", cls=OneLineErrorCommand)
@click.argument("table")
@click.argument("partitions", nargs=-1, required=True, metavar="K=V[,K=V] ...")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@storage_option_flag
@handle_errors
def drop_partition(table: str, partitions: tuple[str, ...], as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Mark-delete partitions of TABLE in one snapshot (bytes are freed by `tablefmt expire`). Values as
    `tablefmt partitions` shows them (a DATE as yyyy-MM-dd, or its day number as in the directory name)."""
    specs = [parse_spec_text(p) for p in partitions]
    target = open_table(table, storage_options)
    snapshot = target.drop_partitions(specs)
    existing = None if snapshot is not None else target.inspect.partitions()
    nearby = [] if existing is None else nearby_partitions(existing, target._spec(specs[0]))
    if as_json:
        values = (
            {} if existing is None else dict(zip(existing["partition"].to_pylist(), existing["values"].to_pylist()))
        )
        echo_json(
            {
                "snapshot_id": None if snapshot is None else snapshot.id,
                "dropped_records": 0 if snapshot is None else -(snapshot.delta_record_count or 0),
                "nearby_partitions": [target.inspect.partition_values_text(values[name]) for name in nearby],
            }
        )
    elif snapshot is None:
        shown = ", ".join(nearby) if nearby else "none (the table holds no data)"
        say(wrap(f"no partition matches {' '.join(partitions)}; no snapshot written. Nearby: {shown}", indent="  "))
    else:
        say(f"committed snapshot {snapshot.id} (OVERWRITE, {-(snapshot.delta_record_count or 0)} rows dropped)")
