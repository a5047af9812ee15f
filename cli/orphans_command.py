"""``tablefmt remove-orphans`` and ``tablefmt check`` (registered on the group in cli/main.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import click

from tableformat.cleanup.orphans import OrphanResult
from tableformat.cli.common import (
    COUNT,
    OneLineErrorCommand,
    dry_run_data,
    duration_flag,
    echo_json,
    handle_errors,
    open_table,
    parse_storage_options,
    progress,
    quiet,
    say,
    storage_option_flag,
)
from tableformat.errors import FileListError, TableFormatError

FILE_LIST_HELP = (
    "Take the table's files from SOURCE instead of listing them (no LIST request): an S3 Inventory report's "
    "manifest.json (CSV, CSV.gz or Parquet) or a Parquet/CSV of path, size, last_modified; a local path or s3:// "
    "URL. The cutoff is capped at its creation time. See docs/inventory.md."
)


def _timedelta(millis: int | None) -> timedelta | None:
    return None if millis is None else timedelta(milliseconds=millis)  # duration_flag: at most 36500 d


@click.command("remove-orphans", cls=OneLineErrorCommand)
@click.argument("table")
@click.option(
    "--older-than",
    callback=duration_flag,
    default=None,
    metavar="DURATION",
    help="Only delete unreferenced files older than this, e.g. 3d, 36h, 1.5d, 1d12h (default: table option "
    "orphan-files.older-than, 1 d). Under 1 h needs --force.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option("--parallelism", type=COUNT, default=None, help="Threads for listing, reading, deleting.")
@click.option("--force", is_flag=True, help="Allow --older-than under 1 h (only when no writer is running).")
@click.option(
    "--engine",
    type=click.Choice(["local", "spark"]),
    default="local",
    show_default=True,
    help="local: threads in this process. spark: list and delete on Spark executors, same rules and result "
    "(needs the spark extra; run it under spark-submit or give --spark-master).",
)
@click.option("--spark-master", default=None, metavar="URL", help="Spark master for --engine spark, e.g. local[4].")
@click.option("--file-list", default=None, metavar="SOURCE", help=FILE_LIST_HELP)
@click.option(
    "--max-files",
    type=COUNT,
    default=None,
    help="Delete at most N orphans this run; the rest are reported as backlog for the next run (default: table "
    "option orphan-files.max-files, 200000).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@storage_option_flag
@handle_errors
def remove_orphans(
    table: str,
    older_than: int | None,
    dry_run: bool,
    parallelism: int | None,
    force: bool,
    engine: str,
    spark_master: str | None,
    file_list: str | None,
    max_files: int | None,
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Delete files of TABLE that no snapshot, tag or branch references (unknown files are never touched)."""
    if engine == "spark":
        guard = _timedelta(older_than)
        with _file_list_errors():
            result = _remove_orphans_on_spark(
                table, storage_options, spark_master, guard, dry_run, parallelism, force, file_list, max_files
            )
    else:
        with progress("removing orphans") as current, _file_list_errors():
            target = open_table(table, storage_options, current)
            result = target.maintenance.remove_orphan_files(
                older_than=older_than,
                force=force,
                parallelism=parallelism,
                dry_run=dry_run,
                file_list=file_list,
                max_files=max_files,
            )
    if as_json:
        echo_json(result.to_json())
    elif dry_run and quiet():
        dry_run_data(result.deleted_paths)
    else:
        for line in result.summary():
            say(line)
    if result.failed:
        sys.exit(1)


@contextmanager
def _file_list_errors() -> Iterator[None]:
    """A source given to --file-list that cannot be used is a usage error (exit 2); nothing was deleted."""
    try:
        yield
    except FileListError as exc:
        raise click.UsageError(f"--file-list: {exc}") from None


def _remove_orphans_on_spark(
    table: str,
    storage_options: tuple[str, ...],
    spark_master: str | None,
    guard: timedelta | None,
    dry_run: bool,
    parallelism: int | None,
    force: bool,
    file_list: str | None,
    max_files: int | None,
) -> OrphanResult:
    """remove-orphans --engine spark: the same cleaner with listing and deletion on Spark executors."""
    try:
        from pyspark.sql import SparkSession

        from tableformat.spark import remove_orphan_files as remove_orphan_files_on_spark
    except ImportError as exc:
        raise click.ClickException(f"--engine spark needs pyspark: pip install 'tablefmt[spark]' ({exc})") from None
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    existing = SparkSession.getActiveSession()
    builder = SparkSession.builder.appName("tablefmt remove-orphans")
    if spark_master:
        builder = builder.master(spark_master)
    spark = builder.getOrCreate()
    try:
        return remove_orphan_files_on_spark(
            spark,
            table,
            older_than=guard,
            dry_run=dry_run,
            parallelism=parallelism,
            storage_options=parse_storage_options(storage_options),
            force=force,
            file_list=file_list,
            max_files=max_files,
        )
    except (click.ClickException, TableFormatError, OSError, ValueError):
        raise
    except Exception as exc:  # Spark/Py4J errors: one line like every other CLI error
        raise click.ClickException(f"Spark failed: {' '.join(str(exc).split())[:500]}") from None
    finally:
        if existing is None:  # never stop a session this command did not start
            spark.stop()


@click.command("check", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--parallelism", type=COUNT, default=None, help="Threads for listing and reading.")
@click.option(
    "--older-than",
    callback=duration_flag,
    default=None,
    metavar="DURATION",
    help="Count as orphans only unreferenced files older than this, as remove-orphans does (default: table option "
    "orphan-files.older-than, 1 d). Under 1 h needs --force.",
)
@click.option("--force", is_flag=True, help="Allow --older-than under 1 h.")
@click.option("--file-list", default=None, metavar="SOURCE", help=FILE_LIST_HELP)
@storage_option_flag
@handle_errors
def check(
    table: str,
    as_json: bool,
    parallelism: int | None,
    older_than: int | None,
    force: bool,
    file_list: str | None,
    storage_options: tuple[str, ...],
) -> None:
    """Verify that every file TABLE references exists with its recorded size; count orphans (exit 1 if not ok)."""
    with progress("checking") as current, _file_list_errors():
        target = open_table(table, storage_options, current)
        result = target.maintenance.check(
            parallelism=parallelism, older_than=older_than, force=force, file_list=file_list
        )
    if as_json:
        echo_json(result.to_json())
    else:
        for line in result.summary():
            say(line)
    if not result.ok:
        sys.exit(1)
