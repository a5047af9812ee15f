"""``tablefmt erase``: erase rows by a SQL filter or a file of keys, optionally purge the old copies, or certify
(``--verify``) that no row matching the filter is left anywhere under the table root."""

from __future__ import annotations

import click

from tableformat.cli.common import duration_flag, echo_json, handle_errors, open_table, say, storage_option_flag


@click.command("erase")
@click.argument("table")
@click.option("--where", default=None, metavar="SQL", help="A SQL boolean expression over the table's columns, "
              "e.g. \"user_id IN (1, 2) AND day >= DATE '2024-01-01'\".")  # fmt: skip
@click.option("--keys-file", default=None, metavar="FILE", help="A Parquet or CSV file of keys to erase (with --key).")
@click.option("--key", default=None, metavar="COL[=FILECOL]", help="The table column the keys file's column holds.")
@click.option("--purge", is_flag=True, help="Also expire every older snapshot and delete the old files now.")
@click.option("--include-tags", is_flag=True, help="With --purge: rewrite the tags that hold erased rows without them.")
@click.option("--deadline", callback=duration_flag, default=None, metavar="DURATION",
              help="The old files must be gone this long after the erasure (erase.deadline).")  # fmt: skip
@click.option("--verify", is_flag=True, help="Only check: scan every Parquet file under the root for matching rows "
              "(exit 0 only when none is left).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Only report what would be erased and purged.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@storage_option_flag
@handle_errors
def erase(
    table: str,
    where: str | None,
    keys_file: str | None,
    key: str | None,
    purge: bool,
    include_tags: bool,
    deadline: int | None,
    verify: bool,
    dry_run: bool,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Erase the rows a filter matches: only the live files holding them are rewritten, in one snapshot per batch.
    With --purge every older snapshot is expired and the old files deleted at once (tags, branches and consumers
    holding them are named). --verify certifies that no matching row is left anywhere under the table root."""
    if verify and (purge or include_tags or dry_run or deadline is not None):
        raise click.UsageError("--verify only reads: it takes no --purge, --include-tags, --dry-run or --deadline")
    if include_tags and not purge:
        raise click.UsageError("--include-tags rewrites tags as part of a purge: give --purge too")
    opened = open_table(table, storage_options)
    if verify:
        checked = opened.maintenance.verify_erasure(where, keys_file=keys_file, key=key)
        if as_json:
            echo_json(checked.to_json())
        else:
            for line in checked.summary():
                say(line)
        if not checked.certified:  # the certificate above is the output (one JSON document with --json)
            unread = f", {len(checked.unreadable)} file(s) unreadable" if checked.unreadable else ""
            click.echo(f"error: {checked.matches} matching row(s) remain{unread}", err=True)
            raise click.exceptions.Exit(1)
        return
    result = opened.maintenance.erase(
        where, keys_file=keys_file, key=key, purge=purge, include_tags=include_tags, deadline=deadline, dry_run=dry_run
    )
    if as_json:
        echo_json(result.to_json())
    else:
        for line in result.summary():
            say(line)
