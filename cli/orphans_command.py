"""``tablefmt remove-orphans`` and ``tablefmt check`` (registered on the group in cli/main.py)."""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import click

from tableformat.cleanup.check import check_table
from tableformat.cleanup.orphans import OrphanResult, remove_orphan_files
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
from tableformat.durations import format_duration_ms
from tableformat.errors import TableFormatError
from tableformat.units import human_bytes

_SHOWN = 20
"""Paths printed in text mode before '... and N more'."""


def _timedelta(millis: int | None) -> timedelta | None:
    return None if millis is None else timedelta(milliseconds=millis)  # duration_flag: at most 36500 d


def _echo_paths(title: str, paths: tuple[str, ...]) -> None:
    if not paths:
        return
    say(f"{title}:")
    for path in paths[:_SHOWN]:
        say(f"  {path}")
    if len(paths) > _SHOWN:
        say(f"  ... and {len(paths) - _SHOWN} more")


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
    as_json: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Delete files of TABLE that no snapshot, tag or branch references (unknown files are never touched)."""
    guard = _timedelta(older_than)
    if engine == "spark":
        result = _remove_orphans_on_spark(table, storage_options, spark_master, guard, dry_run, parallelism, force)
    else:
        with progress("removing orphans") as current:
            target = open_table(table, storage_options, current)
            result = remove_orphan_files(
                target.context, older_than=guard, dry_run=dry_run, parallelism=parallelism, force=force
            )
    if as_json:
        echo_json(result.to_json())
    elif dry_run and quiet():
        dry_run_data(result.deleted_paths)
    else:
        verb = "would delete" if dry_run else "deleted"
        count = len(result.deleted_paths)
        older = "the table default" if guard is None else format_duration_ms(guard // timedelta(milliseconds=1))
        say(
            f"{result.orphan_files} orphan file(s), {human_bytes(result.orphan_bytes)}, older than {older}; "
            f"{verb} {count} file(s), {human_bytes(result.deleted_bytes)}"
        )
        _echo_paths("would delete" if dry_run else "deleted", result.deleted_paths)
        _echo_paths("unknown files (never deleted)", result.skipped_unknown)
        _echo_paths("nested tables (never entered)", result.skipped_nested_tables)
        _echo_paths("could not delete", result.failed)
        if result.removed_dirs:
            say(f"{'would remove' if dry_run else 'removed'} {len(result.removed_dirs)} empty directories")
    if result.failed:
        sys.exit(1)


def _remove_orphans_on_spark(
    table: str,
    storage_options: tuple[str, ...],
    spark_master: str | None,
    guard: timedelta | None,
    dry_run: bool,
    parallelism: int | None,
    force: bool,
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
@storage_option_flag
@handle_errors
def check(
    table: str,
    as_json: bool,
    parallelism: int | None,
    older_than: int | None,
    force: bool,
    storage_options: tuple[str, ...],
) -> None:
    """Verify that every file TABLE references exists with its recorded size; count orphans (exit 1 if not ok)."""
    with progress("checking") as current:
        ctx = open_table(table, storage_options, current).context
        guard = _timedelta(older_than)
        result = check_table(ctx, parallelism=parallelism, older_than=guard, force=force)
    if as_json:
        echo_json(result.to_json())
    else:
        say(
            f"{'ok' if result.ok else 'NOT OK'}: {result.snapshots} snapshot(s), {result.tags} tag(s), "
            f"{result.referenced_files} referenced file(s), {human_bytes(result.referenced_bytes)}"
        )
        for problem in result.missing_files[:_SHOWN]:
            say(f"  missing {problem.kind} {problem.path} (referenced by {problem.referenced_by})")
        for problem in result.size_mismatches[:_SHOWN]:
            say(f"  size mismatch {problem.path}: recorded {problem.expected_size}, found {problem.actual_size}")
        for error in result.errors:
            say(f"  error: {error}")
        if result.external_files_skipped:
            say(f"external data files not checked: {result.external_files_skipped}")
        _echo_paths("nested tables (not checked, never cleaned)", result.skipped_nested_tables)
        orphans = "not counted" if result.orphan_files is None else f"{result.orphan_files}"
        say(f"orphan files: {orphans} ({human_bytes(result.orphan_bytes)})")
        _echo_paths("orphans", result.orphan_paths)
        say(f"reclaimable: {human_bytes(result.reclaimable_bytes)} ({result.reclaimable_note})")
    if not result.ok:
        sys.exit(1)
