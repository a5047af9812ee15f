"""``tablefmt audit TABLE [--since 7d] [--run ID] [--path PATH] [--json]``: what the audit ledger recorded
(docs/audit.md): the runs that deleted or retired files, one run's files, or everything that happened to one file."""

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
from tableformat.cli.render import iso_time, print_table
from tableformat.units import human_bytes


@click.command("audit", cls=OneLineErrorCommand)
@click.argument("table")
@click.option("--since", help="Only runs that started this long ago or later (e.g. 7d, '12 h').")
@click.option("--run", "run_id", help="Only this run (text output lists its files).")
@click.option("--path", "path", help="Everything recorded about this file (relative to the table root).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@storage_option_flag
@handle_errors
def audit(
    table: str, since: str | None, run_id: str | None, path: str | None, as_json: bool, storage_options: tuple[str, ...]
) -> None:
    """The audit ledger of TABLE: every run that deleted or retired files, when, with which outcome, how much.

    \b
    tablefmt audit /data/orders --since 7d
    tablefmt audit /data/orders --run 20261127T153012.345Z-1a2b3c4d5e6f
    tablefmt audit /data/orders --path 'day=2026-01-01/bucket-0/data-....parquet' --json
    """
    opened = open_table(table, storage_options)
    if path is not None:
        events = opened.audit_path(path, since=since)
        if as_json:
            echo_json({"path": path.strip("/"), "events": [event.to_json() for event in events]})
            return
        if not events:
            say(f"no run recorded anything about {path}")
            return
        for e in events:
            what = f"{e.file.state} by {e.run.operation} ({human_bytes(e.file.size)})"
            say(f"{iso_time(e.time_ms)}  {what}, run {e.run.run_id}")
            say(f"  {e.file.reason}")
        return
    runs = opened.audit(since=since, run_id=run_id)
    if as_json:
        echo_json({"runs": [run.to_json() for run in runs]})
        return
    if not runs:
        say("no run recorded" + (f" with id {run_id}" if run_id else ""))
        return
    held = any(s.run.counts.deferred_files for s in runs)  # a column of its own once an undo window kept files
    print_table(
        ("run", "operation", "started", "outcome", "deleted", "bytes", "retired", *(("held",) if held else ())),
        [
            (
                s.run.run_id,
                s.run.operation,
                iso_time(s.run.started_ms),
                s.run.outcome,
                s.run.counts.deleted_files,
                human_bytes(s.run.counts.deleted_bytes),
                s.run.counts.retired_files,
                *((s.run.counts.deferred_files,) if held else ()),
            )
            for s in runs
        ],
        right=("deleted", "bytes", "retired", "held"),
    )
    if run_id is not None:
        if runs[0].run.detail:
            say(runs[0].run.detail)
        files = opened.audit_files(run_id)
        print_table(
            ("path", "size", "state", "reason"),
            [(f.path, human_bytes(f.size), f.state, f.reason) for f in files],
            right=("size",),
            fold=("reason",),
        )
