"""``tablefmt expire``: snapshot expiration from the command line (registered on the group in cli/main.py)."""

from __future__ import annotations

import click

from tableformat.cli.common import (
    COUNT,
    OneLineErrorCommand,
    dry_run_data,
    duration_flag,
    echo_json,
    handle_errors,
    open_table,
    progress,
    quiet,
    say,
    storage_option_flag,
)
from tableformat.cli.progress import progress_callback
from tableformat.errors import ValidationError
from tableformat.options import SNAPSHOT_NUM_RETAINED_MAX, SNAPSHOT_NUM_RETAINED_MIN
from tableformat.table import Table


def _check_retention(target: Table, retain_min: int | None, retain_max: int | None) -> None:
    """One of --retain-min/--retain-max given and the table's value of the other makes them contradict: say which
    flag to add (the usual case: --retain-max 1 alone while snapshot.num-retained.min is the default 10)."""
    options = target.options
    if retain_max is not None and retain_min is None:
        table_min = options.require(SNAPSHOT_NUM_RETAINED_MIN)
        if retain_max < table_min:
            origin = "set on the table" if SNAPSHOT_NUM_RETAINED_MIN.key in options.raw else "the default"
            raise click.UsageError(
                f"--retain-max {retain_max} is below the table's {SNAPSHOT_NUM_RETAINED_MIN.key} ({table_min}, "
                f"{origin}); also pass --retain-min {retain_max} or lower"
            )
    if retain_min is not None and retain_max is None:
        table_max = options.require(SNAPSHOT_NUM_RETAINED_MAX)
        if retain_min > table_max:
            origin = "set on the table" if SNAPSHOT_NUM_RETAINED_MAX.key in options.raw else "the default"
            raise click.UsageError(
                f"--retain-min {retain_min} is above the table's {SNAPSHOT_NUM_RETAINED_MAX.key} ({table_max}, "
                f"{origin}); also pass --retain-max {retain_min} or higher"
            )


@click.command("expire", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--retain-min", type=COUNT, default=None, help="Keep at least the newest N snapshots.")
@click.option("--retain-max", type=COUNT, default=None, help="Keep at most the newest N snapshots.")
@click.option(
    "--time-retained",
    callback=duration_flag,
    default=None,
    metavar="DURATION",
    help="Expire a snapshot once its successor is older than this, e.g. 30s, 15m, 1 h, 1h30m, 1.5h, 7d.",
)
@click.option("--limit", type=COUNT, default=None, help="At most N snapshots per run.")
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
@click.option("--parallelism", type=COUNT, default=None, help="Threads for reads and deletes.")
@storage_option_flag
@handle_errors
def expire(
    table: str,
    retain_min: int | None,
    retain_max: int | None,
    time_retained: int | None,
    limit: int | None,
    dry_run: bool,
    as_json: bool,
    parallelism: int | None,
    storage_options: tuple[str, ...],
) -> None:
    """Expire old snapshots of TABLE and delete the files only they used (options default to the table's)."""
    with progress("expiring") as current:
        target = open_table(table, storage_options, current)
        _check_retention(target, retain_min, retain_max)
        try:
            result = target.maintenance.expire_snapshots(
                retain_min=retain_min,
                retain_max=retain_max,
                time_retained=time_retained,
                limit=limit,
                parallelism=parallelism,
                dry_run=dry_run,
                progress=progress_callback(current),
            )
        except ValidationError as exc:
            raise click.UsageError(" ".join(str(exc).split())) from None
    if as_json:
        echo_json(result.to_json())
    elif result.dry_run and quiet():
        dry_run_data(result.deleted_paths)
    else:
        for line in result.summary():
            say(line)
