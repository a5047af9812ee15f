"""``tablefmt maintain``: every table's retention over tables or whole warehouses, once (cron) or as a daemon.

Exit codes: 0 when every table succeeded (or had nothing due, or was leased by another maintainer, or an operation
lost a race with snapshot expiration: reported, and due again soon), 1 when any table failed (the others still ran),
2 for usage errors (a bad flag, config file or target), found before any table is touched. ``--watch`` ends on
SIGTERM/SIGINT with the same rule applied to each table's last pass: 1 when the last pass of any table failed, else 0
(a table that failed earlier and was maintained since counts as succeeded).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import click

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings, TableReport, load_settings, render_metrics
from tableformat.errors import ValidationError
from tableformat.io.local import replace_text_file

from .common import COUNT, handle_errors, parse_storage_options, storage_option_flag
from .render import human_bytes, iso_time


def human_line(report: TableReport) -> str:
    """One line (plus advice lines) per table for a terminal."""
    if report.errors:
        problems = "; ".join(f"{op}: {msg}" if op else msg for op, msg in report.errors)
        head = f"FAILED {report.table}: {problems}"
    elif report.skipped:
        due = f" (next due {iso_time(report.next_due_ms)})" if report.next_due_ms else ""
        head = f"{report.table}: {report.skipped}{due}"
    else:
        head = f"{report.table}: ok"
    done = []
    for name, result in report.operations:
        done.append(f"{name}: {result.headline().removeprefix(name + ': ')}")
    lines = [head + (" - " + "; ".join(done) if done else "")]
    if report.operations:
        lines[0] += f" [{human_bytes(report.reclaimed_bytes)} freed, {report.seconds:.2f} s]"
    lines += [
        f"  {name}: lost a race with snapshot expiration, due again soon ({message})"
        for name, message in report.lost_races
    ]
    lines += [f"  {name}: skipped, not applicable ({reason})" for name, reason in report.not_applicable]
    if report.keep_up is not None and report.keep_up.falling_behind:
        lines += [f"  warning: retention is falling behind: {advice}" for advice in report.keep_up.advice]
    return "\n".join(lines)


def write_metrics_file(path: str, reports: Sequence[TableReport]) -> None:
    """Replace ``path`` atomically (temp file in the same directory, then rename)."""
    replace_text_file(path, render_metrics(reports), prefix=".tablefmt-metrics-")


class _Output:
    """Where reports go: JSON lines or human lines on stdout, and the metrics file."""

    def __init__(self, as_json: bool, metrics_file: str | None) -> None:
        self.as_json = as_json
        self.metrics_file = metrics_file
        self.latest: dict[str, TableReport] = {}
        """Each table's last report: what the exit status and the metrics file follow."""
        self.lock = threading.Lock()

    @property
    def failed(self) -> bool:
        """Whether the last pass of any table failed (a table that failed once and was maintained since is ok)."""
        with self.lock:
            return any(not report.ok for report in self.latest.values())

    def __call__(self, report: TableReport) -> None:
        with self.lock:
            self.latest[report.location] = report
            if self.as_json:
                click.echo(json.dumps(report.to_json(), default=str, separators=(",", ":")))
            else:
                click.echo(human_line(report))
            sys.stdout.flush()

    def flush_metrics(self) -> None:
        if self.metrics_file:
            with self.lock:
                write_metrics_file(self.metrics_file, list(self.latest.values()))


def _settings(config: str | None, storage: dict[str, Any], parallel: int | None) -> MaintainSettings:
    settings = load_settings(config)
    if storage:
        settings = replace(settings, storage_options={**settings.storage_options, **storage})
    if parallel is not None:
        settings = replace(settings, parallelism=parallel)
    return settings


@click.command("maintain")
@click.argument("targets", nargs=-1, required=True)
@click.option("--once", is_flag=True, help="Run what is due on every table, then exit (the default).")
@click.option("--watch", is_flag=True, help="Keep running: visit each table when it is next due.")
@click.option("--config", type=click.Path(dir_okay=False), help="TOML settings (default: $TABLEFMT_MAINTAIN_CONFIG).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per table per pass on stdout.")
@click.option("--metrics-file", type=click.Path(dir_okay=False), help="Write Prometheus text format here.")
@click.option("--dry-run", is_flag=True, help="Report what is due and what it would delete; change nothing.")
@click.option(
    "--parallelism",
    "--parallel",
    "parallel",
    type=COUNT,
    help="Tables maintained at once (default 2); --parallel is an older spelling.",
)
@storage_option_flag
@handle_errors
def maintain(
    targets: tuple[str, ...],
    once: bool,
    watch: bool,
    config: str | None,
    as_json: bool,
    metrics_file: str | None,
    dry_run: bool,
    parallel: int | None,
    storage_options: tuple[str, ...],
) -> None:
    """Maintain every table of TARGETS (tables, <db>.db directories or Paimon filesystem warehouses): partition
    expiration, snapshot, tag and consumer expiration, and orphan cleanup, each when the table's options make it due.

    \b
    cron:    */10 * * * * tablefmt maintain s3://lake/warehouse --metrics-file /var/lib/node_exporter/tablefmt.prom
    daemon:  tablefmt maintain --watch /data/warehouse

    Exit status: 0 when every table's pass succeeded (or had nothing due, or the table was leased by another
    maintainer), 1 when a table's pass failed, 2 for a bad flag, config file or target (one that does not exist).
    --watch runs until SIGTERM or SIGINT, lets the running passes finish, then exits 1 if the last pass of any table
    failed, else 0.
    """
    if once and watch:
        raise click.UsageError("give --once or --watch, not both")
    try:
        settings = _settings(config, parse_storage_options(storage_options), parallel)
        maintainer = Maintainer(targets, settings, dry_run=dry_run)
        tables = maintainer.discover()
    except ValidationError as exc:
        raise click.UsageError(str(exc)) from None
    output = _Output(as_json, metrics_file)
    if not watch:
        _run_once(maintainer, tables, output)
    else:
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())

        def sink(report: TableReport) -> None:
            output(report)
            output.flush_metrics()

        maintainer.watch(stop, sink)
    if output.failed:
        raise click.exceptions.Exit(1)


def _run_once(maintainer: Maintainer, tables: list[Any], output: _Output) -> None:
    show_bar = not output.as_json and sys.stderr.isatty() and len(tables) > 1
    if not show_bar:
        maintainer.run_once(tables, output)
    else:
        with click.progressbar(length=len(tables), label="maintaining", file=sys.stderr) as bar:

            def sink(report: TableReport) -> None:
                output(report)
                bar.update(1)

            maintainer.run_once(tables, sink)
    output.flush_metrics()
    if not output.as_json:
        done = sum(1 for r in output.latest.values() if r.operations)
        failed = sum(1 for r in output.latest.values() if not r.ok)
        freed = sum(r.reclaimed_bytes for r in output.latest.values())
        click.echo(f"{len(tables)} table(s): {done} maintained, {failed} failed, {human_bytes(freed)} freed")
