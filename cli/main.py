"""The ``tablefmt`` click group and main.

A thin layer over the Python API. Every command lives in a ``*_command(s).py`` module (the table commands create,
write and drop-partition in ``table_commands.py``) and is listed once in :data:`COMMANDS` with the first paragraph
of its help: the group imports a command's module only when that command runs (or its own help is asked for), so
``tablefmt --help`` imports no command module, and a command imports only what it needs (cron starts one process
per table; docs/benchmarks.md, "Start-up"). tests/cli/test_lazy_commands.py holds the table to the commands.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import NamedTuple

import click

from tableformat.cli.common import OneLineErrorGroup, silence_stdout


class CommandEntry(NamedTuple):
    """Where a command of the group lives, and the first paragraph of its help (what ``tablefmt --help`` lists)."""

    module: str
    """The module under tableformat.cli."""
    attribute: str
    """The click command in it, or ``registered_command`` (the generic command of a registered operation)."""
    help: str


COMMANDS: dict[str, CommandEntry] = {
    "audit": CommandEntry(
        "audit_command",
        "audit",
        "The audit ledger of TABLE: every run that deleted or retired files, when, with which outcome, how much.",
    ),
    "check": CommandEntry(
        "orphans_command",
        "check",
        "Verify that every file TABLE references exists with its recorded size; count orphans (exit 1 if not ok).",
    ),
    "compact": CommandEntry(
        "operation_commands",
        "registered_command",
        "Merge small data files into files near target-file-size (one COMPACT snapshot per batch).",
    ),
    "create": CommandEntry(
        "table_commands",
        "create",
        "Create an empty table at TABLE with the schema of a Parquet file.",
    ),
    "demo": CommandEntry(
        "demo_command",
        "demo",
        "Build a sample events table in DIRECTORY (default: a new temp dir) and show its history and maintenance.",
    ),
    "describe": CommandEntry(
        "inspect_commands",
        "describe",
        "Describe TABLE: schema, partition keys, options (effective values and where they come from), "
        "snapshots, tags, branches, and the bytes that are live, stored and reclaimable.",
    ),
    "drop-partition": CommandEntry(
        "table_commands",
        "drop_partition",
        "Mark-delete partitions of TABLE in one snapshot (bytes are freed by `tablefmt expire`). Values as "
        "`tablefmt partitions` shows them (a DATE as yyyy-MM-dd, or its day number as in the directory name).",
    ),
    "erase": CommandEntry(
        "erase_command",
        "erase",
        "Erase the rows a filter matches: only the live files holding them are rewritten, in one snapshot per"
        " batch. With --purge every older snapshot is expired and the old files deleted at once (tags, "
        "branches and consumers holding them are named). --verify certifies that no matching row is left "
        "anywhere under the table root.",
    ),
    "expire": CommandEntry(
        "expire_command",
        "expire",
        "Expire old snapshots of TABLE and delete the files only they used (options default to the table's).",
    ),
    "expire-partitions": CommandEntry(
        "operation_commands",
        "registered_command",
        "Drop partitions older than the expiration time (files are freed later by snapshot expiration).",
    ),
    "expire-records": CommandEntry(
        "operation_commands",
        "registered_command",
        "Remove rows older than record-level.expire-time (whole files by statistics, partly expired rewritten).",
    ),
    "files": CommandEntry(
        "inspect_commands",
        "files",
        "Summarise the live data files of a snapshot of TABLE per partition (every file with --list; --json "
        "always lists every file).",
    ),
    "maintain": CommandEntry(
        "maintain_command",
        "maintain",
        "Maintain every table of TARGETS (tables, <db>.db directories or Paimon filesystem warehouses): "
        "partition expiration, snapshot, tag and consumer expiration, and orphan cleanup, each when the "
        "table's options make it due.",
    ),
    "options": CommandEntry(
        "steer_commands",
        "options",
        "Show, set or unset TABLE's options; each change writes a new schema version as Paimon's ALTER TABLE "
        "SET / RESET does.",
    ),
    "partitions": CommandEntry(
        "inspect_commands",
        "partitions",
        "List the partitions of a snapshot of TABLE (latest by default) as Paimon's $partitions: values as "
        "users write them (dates as yyyy-MM-dd), records, files, bytes, last update.",
    ),
    "remove-orphans": CommandEntry(
        "orphans_command",
        "remove_orphans",
        "Delete files of TABLE that no snapshot, tag or branch references (unknown files are never touched).",
    ),
    "report": CommandEntry(
        "report_command",
        "report",
        "Report on the retention of TARGETS (tables, <db>.db directories or Paimon filesystem warehouses, as "
        "for tablefmt maintain): a line per table, --html for the page with charts, --json for every figure. "
        "Nothing is changed: every figure comes from dry runs and metadata reads.",
    ),
    "rollback": CommandEntry(
        "steer_commands",
        "rollback",
        "Roll TABLE back as Paimon does: snapshots newer than the target and their tags are removed (their "
        "files are left to remove-orphans). Refused while a branch or consumer needs them. Stop writers "
        "first.",
    ),
    "schema": CommandEntry(
        "schema_command",
        "schema",
        "Show TABLE's schema with field ids, or change its columns; each change writes one new schema "
        "version, as Paimon's ALTER TABLE does (field ids are kept; older files read an added column as "
        "null).",
    ),
    "snapshots": CommandEntry(
        "inspect_commands",
        "snapshots",
        "List the snapshots of TABLE, oldest first: kind, commit time, records, bytes added and removed.",
    ),
    "tag": CommandEntry(
        "steer_commands",
        "tag",
        "Create, delete and list tags (tags protect a snapshot's files from expiration).",
    ),
    "undo": CommandEntry(
        "undo_command",
        "undo",
        "Restore exactly what run RUN_ID (from `tablefmt audit`) took from TABLE: expired snapshots and tags,"
        " files kept by the undo window (maintenance.undo-window), files its commits took out. Refused, "
        "nothing changed, where the result could not be exact.",
    ),
    "write": CommandEntry(
        "table_commands",
        "write",
        "Append a Parquet FILE to TABLE (one snapshot), or overwrite with --overwrite.",
    ),
}
"""Every command of ``tablefmt``, by name."""


class LazyGroup(OneLineErrorGroup):
    """A group whose commands are imported when first needed; its help lists them from :data:`COMMANDS`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, each command's short help made from its entry (commands not loaded stay unloaded)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            command = self.commands[name] if name in self.commands else click.Command(name, help=COMMANDS[name].help)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def load_command(name: str) -> click.Command:
    """Import the command ``name`` of :data:`COMMANDS`."""
    entry = COMMANDS[name]
    module = importlib.import_module(f"tableformat.cli.{entry.module}")
    found = getattr(module, entry.attribute)
    command: click.Command = found if isinstance(found, click.Command) else found(name)
    return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tablefmt")
@click.option("-v", "--verbose", count=True, help="Log more (-v: info, -vv: debug).")
@click.option("-q", "--quiet", is_flag=True, help="Print only data and errors: no progress, no reports, no warnings.")
@click.pass_context
def cli(ctx: click.Context, verbose: int, quiet: bool) -> None:
    """tablefmt: Apache Paimon tables with safe retention (expire, remove-orphans, check); writes append tables,
    reads and maintains primary-key tables too."""
    ctx.obj = {"quiet": quiet}
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    if quiet:
        level = logging.ERROR
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


def main() -> None:
    """Console-script entry point. A reader that closes stdout early (``| head``) never changes the exit status."""
    try:
        cli(prog_name="tablefmt")
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the last buffered lines met a closed pipe after the command ended
            silence_stdout()


if __name__ == "__main__":
    main()
