"""``tablefmt undo TABLE RUN_ID [--dry-run] [--json]``: give back what one maintenance run took, while its undo
window lasts (docs/undo.md)."""

from __future__ import annotations

import click

from tableformat.cli.common import (
    OneLineErrorCommand,
    echo_json,
    handle_errors,
    open_table,
    say,
    storage_option_flag,
)


@click.command("undo", cls=OneLineErrorCommand)
@click.argument("table")
@click.argument("run_id")
@click.option("--dry-run", is_flag=True, help="Show what would be restored; change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_option_flag
@handle_errors
def undo(table: str, run_id: str, dry_run: bool, as_json: bool, storage_options: tuple[str, ...]) -> None:
    """Restore exactly what run RUN_ID (from `tablefmt audit`) took from TABLE: expired snapshots and tags, files
    kept by the undo window (maintenance.undo-window), files its commits took out. Refused, nothing changed, where
    the result could not be exact.

    \b
    tablefmt audit /data/orders --since 1d
    tablefmt undo /data/orders 20261127T153012.345Z-1a2b3c4d5e6f --dry-run
    """
    result = open_table(table, storage_options).maintenance.undo(run_id, dry_run=dry_run)
    if as_json:
        echo_json(result.to_json())
        return
    for line in result.summary():
        say(line)
