"""A CLI command for every registered maintenance operation that has no hand-written one.

The command is built from the operation's ``parameters``: ``tablefmt <name> TABLE [--<param> ...] [--dry-run]
[--json] [--storage-option k=v]``; it runs through ``table.maintenance.run`` and prints the result's JSON or a
one-line summary with its notes. ``expire`` and ``remove-orphans`` have hand-written commands (richer output,
progress bars, a Spark engine) that run through the same Table API.
"""

from __future__ import annotations

from typing import Any

import click

from tableformat.cleanup.kernel import Operation, Parameter
from tableformat.cleanup.registry import operation
from tableformat.cli.common import (
    OneLineErrorCommand,
    dry_run_data,
    duration_flag,
    echo_json,
    handle_errors,
    open_table,
    quiet,
    say,
)
from tableformat.option_types import INT32_MAX


def _option(parameter: Parameter) -> click.Option:
    flag = parameter.flag
    if parameter.kind == "flag":
        return click.Option([flag, parameter.name], is_flag=True, default=False, help=parameter.help)
    if parameter.kind == "choice":
        choice = click.Choice(parameter.choices)
        return click.Option([flag, parameter.name], type=choice, default=None, help=parameter.help)
    if parameter.kind in ("text", "size"):
        metavar = "SIZE" if parameter.kind == "size" else "TEXT"
        return click.Option([flag, parameter.name], default=None, metavar=metavar, help=parameter.help)
    if parameter.kind == "duration":
        return click.Option(
            [flag, parameter.name], callback=duration_flag, default=None, metavar="DURATION", help=parameter.help
        )
    low = parameter.option.bounds[0] if parameter.option and parameter.option.bounds else parameter.minimum
    kind = click.IntRange(min=low, max=INT32_MAX)  # counts: Paimon's Java int
    return click.Option([flag, parameter.name], type=kind, default=None, help=parameter.help)


def operation_command(operation: Operation[Any, Any, Any]) -> click.Command:
    """The generic command of one registered operation."""

    @handle_errors
    def run(table: str, dry_run: bool, as_json: bool, storage_options: tuple[str, ...], **given: Any) -> None:
        overrides = {key: value for key, value in given.items() if value is not None and value is not False}
        result = open_table(table, storage_options).maintenance.run(operation.name, dry_run=dry_run, **overrides)
        if as_json:
            echo_json(result.to_json())
        elif dry_run and quiet():
            dry_run_data(result.deleted_paths)
        else:
            for line in result.summary():
                say(line)

    params: list[click.Parameter] = [click.Argument(["table"])]
    params += [_option(p) for p in operation.parameters]
    params += [
        click.Option(["--dry-run"], is_flag=True, help="Only report what would be done."),
        click.Option(["--json", "as_json"], is_flag=True, help="Print the result as one JSON object."),
        click.Option(
            ["--storage-option", "storage_options"], multiple=True, metavar="KEY=VALUE", help="fsspec storage option."
        ),
    ]
    return OneLineErrorCommand(
        operation.name, callback=run, params=params, help=f"{operation.summary[:1].upper()}{operation.summary[1:]}."
    )


def registered_command(name: str) -> click.Command:
    """The generic command of the registered operation ``name`` (how the ``tablefmt`` group loads it)."""
    return operation_command(operation(name))
