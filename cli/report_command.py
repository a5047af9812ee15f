"""``tablefmt report TARGET... [--html FILE] [--json]``: a line per table (text), one self-contained HTML page and/or
JSON showing, per table,
storage over time, bytes and rows by partition, what each retention rule would free now and when it is next due,
and whether retention keeps up with ingest; a warehouse's tables ranked first."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import click

from tableformat.cleanup.maintainer import load_settings
from tableformat.clock import system_clock
from tableformat.errors import ValidationError
from tableformat.report import TableRetentionReport, since_cutoff, warehouse_report, write_html
from tableformat.report.charts import require_matplotlib
from tableformat.units import dollars, human_bytes

from .common import COUNT, handle_errors, parse_storage_options, quiet, storage_option_flag


def _line(report: TableRetentionReport) -> str:
    if report.errors and not report.rules:
        return f"FAILED {report.name}: {'; '.join(report.errors)}"
    head = (
        f"{report.name}: {human_bytes(report.live_bytes)} live, "
        f"{human_bytes(report.reclaimable_bytes)} reclaimable now ({dollars(report.reclaimable_usd_per_month)}/month), "
        f"{human_bytes(report.growth_bytes_per_day())}/day"
    )
    return "\n".join([head, *[f"  warning: {w}" for w in report.warnings]])


@click.command("report")
@click.argument("targets", nargs=-1, required=True)
@click.option("--html", "html_file", type=click.Path(dir_okay=False), help="Write the HTML report here.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON (one object per table).")
@click.option("--since", help="Chart and count keep-up from this long ago (e.g. 7d, '12 h'; default: keep-up-window).")
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    help="The tablefmt maintain TOML (include, exclude, storage, [tables] overrides, keep-up-window).",
)
@click.option(
    "--parallelism",
    "--parallel",
    "parallel",
    type=COUNT,
    help="Tables read at once (default 2); --parallel is an older spelling.",
)
@click.option("--tables", "detailed", type=COUNT, default=25, show_default=True,
              help="Tables of a warehouse shown with charts (the top ones by reclaimable bytes and growth).")
@storage_option_flag
@handle_errors
def report(
    targets: tuple[str, ...],
    html_file: str | None,
    as_json: bool,
    since: str | None,
    config: str | None,
    parallel: int | None,
    detailed: int,
    storage_options: tuple[str, ...],
) -> None:
    """Report on the retention of TARGETS (tables, <db>.db directories or Paimon filesystem warehouses, as for
    tablefmt maintain): a line per table, --html for the page with charts, --json for every figure. Nothing is
    changed: every figure comes from dry runs and metadata reads.

    \b
    tablefmt report /data/warehouse
    tablefmt report /data/warehouse --html retention.html
    tablefmt report s3://lake/wh/sales.db/orders --since 7d --html orders.html
    """
    now = system_clock()
    try:
        if html_file is not None:
            require_matplotlib()
        settings = load_settings(config)
        storage = parse_storage_options(storage_options)
        if storage:
            settings = replace(settings, storage_options={**settings.storage_options, **storage})
        if parallel is not None:
            settings = replace(settings, parallelism=parallel)
        cutoff = since_cutoff(since, now)
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None

    def shown(table: TableRetentionReport) -> None:
        if as_json:
            click.echo(json.dumps(table.to_json(), default=str, separators=(",", ":")))
        elif not quiet():
            click.echo(_line(table))
        sys.stdout.flush()

    try:
        result = warehouse_report(targets, settings, now_ms=now, since_ms=cutoff, on_table=shown)
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None
    if html_file is not None:
        write_html(result, html_file, detailed_tables=detailed)
        if not as_json and not quiet():
            click.echo(f"wrote {html_file} ({len(result.tables)} table(s), {result.seconds:.2f} s)")
    if any(t.errors for t in result.tables):
        raise click.exceptions.Exit(1)
