"""Prometheus text format for the maintainer (node_exporter's textfile collector reads it).

One gauge family per figure, labelled by table; the file is replaced atomically after every pass, so the collector
never reads half a file. Last success times come from each table's maintain state, so a table that had nothing due
this pass still shows when it last succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence

from .table_pass import TableReport

_FAMILIES = (
    ("tablefmt_maintain_last_success_timestamp_seconds", "Time of the table's last pass without error."),
    ("tablefmt_maintain_duration_seconds", "Duration of the table's last pass."),
    ("tablefmt_maintain_reclaimed_bytes", "Bytes deleted by the table's last pass."),
    ("tablefmt_maintain_backlog", "Items left due by operation limits after the table's last pass."),
    ("tablefmt_maintain_failed", "1 when the table's last pass had an error, else 0."),
    ("tablefmt_maintain_falling_behind", "1 when the table's retention does not keep up with its ingest."),
    ("tablefmt_maintain_ingest_bytes_per_hour", "Bytes added per hour over the keep-up window."),
    ("tablefmt_maintain_undo_held_bytes", "Bytes the undo window holds (maintenance.undo-window; absent when off)."),
    ("tablefmt_maintain_request_cost_usd", "What the S3 requests of the table's last pass cost (docs/cost.md)."),
    (
        "tablefmt_maintain_freed_storage_usd_per_month",
        "What storing the bytes the table's last pass deleted cost a month (docs/cost.md).",
    ),
)

_REQUESTS = (
    "tablefmt_maintain_requests",
    "S3 requests of the table's last pass by kind (LIST, GET, HEAD, PUT, DELETE; docs/cost.md).",
)


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _values(report: TableReport, last_success_s: float | None) -> dict[str, float | None]:
    keep_up = report.keep_up
    return {
        "tablefmt_maintain_last_success_timestamp_seconds": last_success_s,
        "tablefmt_maintain_duration_seconds": report.seconds,
        "tablefmt_maintain_reclaimed_bytes": report.reclaimed_bytes,
        "tablefmt_maintain_backlog": None if keep_up is None else sum(keep_up.backlog.values()),
        "tablefmt_maintain_failed": 0 if report.ok else 1,
        "tablefmt_maintain_falling_behind": None if keep_up is None else int(keep_up.falling_behind),
        "tablefmt_maintain_ingest_bytes_per_hour": None if keep_up is None else keep_up.ingest_bytes_per_hour,
        "tablefmt_maintain_undo_held_bytes": report.held_bytes,
        "tablefmt_maintain_request_cost_usd": report.requests_usd if report.operations else None,
        "tablefmt_maintain_freed_storage_usd_per_month": report.freed_usd_per_month if report.operations else None,
    }


def render_metrics(reports: Sequence[TableReport]) -> str:
    """The textfile: every family with a sample per table that has a value."""
    lines = []
    values = [
        (report, _values(report, None if report.last_success_ms is None else report.last_success_ms / 1000))
        for report in reports
    ]
    for name, help_text in _FAMILIES:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        for report, figures in values:
            value = figures[name]
            if value is not None:
                text = str(value) if isinstance(value, int) else repr(float(value))
                lines.append(f'{name}{{table="{_label(report.table)}"}} {text}')
    name, help_text = _REQUESTS
    lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    for report in reports:
        for kind, count in report.requests.items():
            lines.append(f'{name}{{table="{_label(report.table)}",kind="{kind}"}} {count}')
    return "\n".join(lines) + "\n"
