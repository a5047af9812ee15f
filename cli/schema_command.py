"""``tablefmt schema``: show a table's schema with field ids, and change its columns as Paimon's ALTER TABLE does
(add-column, rename-column, drop-column, alter-column), each change one new schema version
(tableformat/commit/schema_update.py, docs/schema.md). A change Paimon's rules refuse, an unknown type or an unknown
column is a usage error (exit 2, one line). Registered on the group in cli/main.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from tableformat.cli.common import OneLineErrorGroup, echo_json, handle_errors, open_table, say, storage_option_flag
from tableformat.cli.render import print_table
from tableformat.commit.schema_change import SchemaChangeResult
from tableformat.commit.schema_update import SchemaUpdate
from tableformat.errors import SchemaChangeError
from tableformat.model.schema import TableSchema

_json_flag = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


class _ShowByDefault(OneLineErrorGroup):
    """``tablefmt schema TABLE`` means ``tablefmt schema show TABLE``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group("schema", cls=_ShowByDefault)
def schema() -> None:
    """Show TABLE's schema with field ids, or change its columns; each change writes one new schema version, as
    Paimon's ALTER TABLE does (field ids are kept; older files read an added column as null).

    \b
    tablefmt schema TABLE [--json]                                  columns with field ids and types
    tablefmt schema add-column TABLE NAME TYPE [--after COL] [--comment C]
    tablefmt schema rename-column TABLE OLD NEW
    tablefmt schema drop-column TABLE NAME
    tablefmt schema alter-column TABLE NAME [--type TYPE] [--nullable] [--comment C]

    TYPE in Paimon's spelling: BIGINT, STRING, DECIMAL(10,2), TIMESTAMP(6), VARCHAR(20) NOT NULL, ...
    """


def columns_json(table_schema: TableSchema) -> list[dict[str, Any]]:
    return [
        {
            "field_id": f.id,
            "name": f.name,
            "type": str(f.type),
            "nullable": f.type.nullable,
            "comment": f.description,
        }
        for f in table_schema.fields
    ]


@schema.command("show")
@click.argument("table")
@_json_flag
@storage_option_flag
@handle_errors
def schema_show(table: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """TABLE's latest schema: every column with its field id, type and comment; partition and primary keys."""
    target = open_table(table, storage_options)
    current = target.schema
    if as_json:
        echo_json(
            {
                "location": target.location,
                "schema_id": current.id,
                "highest_field_id": current.highest_field_id,
                "columns": columns_json(current),
                "partition_keys": list(current.partition_keys),
                "primary_keys": list(current.primary_keys),
            }
        )
        return
    rows = []
    for f in current.fields:
        role = "partition key" if f.name in current.partition_keys else ""
        role = "primary key" if f.name in current.primary_keys else role
        rows.append([f.id, f.name, str(f.type), role, f.description or ""])
    click.echo(f"schema-{current.id} (highest field id {current.highest_field_id})")
    print_table(["field_id", "name", "type", "key", "comment"], rows, right=["field_id"], fold=["comment"])


def _change(
    table: str, storage_options: tuple[str, ...], as_json: bool, make: Callable[[SchemaUpdate], object], what: str
) -> None:
    target = open_table(table, storage_options)
    try:
        with target.update_schema() as update:
            make(update)
    except SchemaChangeError as exc:
        raise click.UsageError(str(exc)) from None
    result = update.result
    assert result is not None
    _report(result, as_json, what)


def _report(result: SchemaChangeResult, as_json: bool, what: str) -> None:
    if as_json:
        echo_json(
            {
                "changed": result.changed,
                "schema_id": result.schema.id,
                "previous_schema_id": result.previous.id,
                "columns": columns_json(result.schema),
            }
        )
    elif result.changed:
        say(f"{what}: wrote schema-{result.schema.id} (was schema-{result.previous.id})")
    else:
        say(f"no change: {what} already holds (schema-{result.schema.id})")


@schema.command("add-column")
@click.argument("table")
@click.argument("name")
@click.argument("type_text", metavar="TYPE")
@click.option("--after", default=None, metavar="COL", help="Place the column right after COL (default: last).")
@click.option("--comment", default=None, help="The column's comment.")
@_json_flag
@storage_option_flag
@handle_errors
def add_column(
    table: str,
    name: str,
    type_text: str,
    after: str | None,
    comment: str | None,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Add nullable column NAME of TYPE to TABLE; rows written before read it as null."""
    _change(
        table,
        storage_options,
        as_json,
        lambda u: u.add_column(name, type_text, after=after, comment=comment),
        f"added column {name!r}",
    )


@schema.command("rename-column")
@click.argument("table")
@click.argument("old")
@click.argument("new")
@_json_flag
@storage_option_flag
@handle_errors
def rename_column(table: str, old: str, new: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Rename column OLD of TABLE to NEW (it keeps its field id: older files read under the new name)."""
    _change(table, storage_options, as_json, lambda u: u.rename_column(old, new), f"renamed {old!r} to {new!r}")


@schema.command("drop-column")
@click.argument("table")
@click.argument("name")
@_json_flag
@storage_option_flag
@handle_errors
def drop_column(table: str, name: str, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Drop column NAME of TABLE (not a partition key, primary key or the record-TTL time field)."""
    _change(table, storage_options, as_json, lambda u: u.drop_column(name), f"dropped column {name!r}")


@schema.command("alter-column")
@click.argument("table")
@click.argument("name")
@click.option("--type", "type_text", default=None, metavar="TYPE", help="Widen the column to TYPE.")
@click.option("--nullable", is_flag=True, help="Make a NOT NULL column nullable.")
@click.option("--comment", default=None, help="Set the column's comment.")
@_json_flag
@storage_option_flag
@handle_errors
def alter_column(
    table: str,
    name: str,
    type_text: str | None,
    nullable: bool,
    comment: str | None,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Widen column NAME's type (INT to BIGINT, FLOAT to DOUBLE, a longer DECIMAL, ...), make it nullable, or set
    its comment."""
    if type_text is None and not nullable and comment is None:
        raise click.UsageError("give --type, --nullable or --comment")
    _change(
        table,
        storage_options,
        as_json,
        lambda u: u.update_column(name, type=type_text, nullable=True if nullable else None, comment=comment),
        f"altered column {name!r}",
    )
