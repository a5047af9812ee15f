"""The report as one self-contained HTML file: inline CSS, charts as ``data:`` SVG images, no script, no external
URL, laid out to print (each table starts a new page; a warehouse's ranking is the first page)."""

from __future__ import annotations

import base64
import datetime as dt
import html
from collections.abc import Sequence

from tableformat.io.local import replace_text_file
from tableformat.units import dollars, human_bytes

from . import charts
from .model import (
    KeepUpFigures,
    PartitionFigures,
    RuleFigures,
    StoragePoint,
    TableRetentionReport,
    WarehouseReport,
)

DETAILED_TABLES = 25
"""A warehouse report draws charts for this many tables (the top ones by reclaimable bytes and by growth); every
table is in the ranking."""
PARTITION_ROWS = 40
"""Partitions listed per table: every marked one, then the newest."""

CSS = """
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: #1d1d1d; background: #ffffff;
       margin: 24px auto; max-width: 1120px; padding: 0 16px; font-size: 13px; line-height: 1.4; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 2px; border-bottom: 2px solid #2f6db5; padding-bottom: 2px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
.muted { color: #5d5d5d; }
.mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; word-break: break-all; }
section { margin: 28px 0 40px; }
.tiles { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.tile { border: 1px solid #d4d4d4; border-radius: 6px; padding: 6px 12px; min-width: 130px; }
.tile b { display: block; font-size: 17px; }
.row { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.chart { flex: 1 1 620px; max-width: 760px; }
.chart img { width: 100%; height: auto; display: block; }
.side { flex: 1 1 300px; }
table { border-collapse: collapse; width: 100%; margin: 4px 0; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #e2e2e2; vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.due, th.due { white-space: nowrap; }
tr.dropped td { background: #fbe9e7; }
tr.trimmed td { background: #fdf6df; }
.warn { border-left: 4px solid #c8433a; background: #fbe9e7; padding: 6px 10px; margin: 8px 0; }
.ok { border-left: 4px solid #3a9a5b; background: #eaf5ee; padding: 6px 10px; margin: 8px 0; }
ul.notes { margin: 4px 0; padding-left: 18px; color: #5d5d5d; font-size: 12px; }
@media print {
  body { margin: 0; max-width: none; font-size: 11px; }
  section.table, section.ranking { break-before: page; }
  section.table:first-of-type { break-before: auto; }
  .row { display: block; }
  .chart, .chart img { max-width: 100%; }
  tr, .tile, .chart { break-inside: avoid; }
}
"""


HELD_HINT = "deleted once maintenance.undo-window ends; tablefmt undo gives it back until then"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _due_time(ms: int, now_ms: int) -> str:
    """A next-due time short enough for the rules table's one-line column: ``27 Nov 09:15`` (UTC, said in the
    header); the year too when it is not the year of ``now_ms``."""
    due = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
    now = dt.datetime.fromtimestamp(now_ms / 1000, dt.timezone.utc)
    return due.strftime("%d %b %H:%M" if due.year == now.year else "%d %b %Y %H:%M")


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms / 1000:g} s"


def _image(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{_e(alt)}" src="data:image/svg+xml;base64,{data}">'


def _tile(label: str, value: str, note: str = "") -> str:
    title = f' title="{_e(note)}"' if note else ""
    return f'<div class="tile"{title}><span class="muted">{_e(label)}</span><b>{_e(value)}</b></div>'


def _rule_row(rule: RuleFigures, now_ms: int) -> str:
    if not rule.configured:
        frees, outcome = "-", "not configured by the table's options"
    else:
        monthly = f"{dollars(rule.frees_usd_per_month)}/month"
        frees = "-" if rule.result is None else f"{human_bytes(rule.frees_bytes)} ({monthly})"
        outcome = rule.outcome()
        if rule.marks_bytes:
            outcome += f" ({human_bytes(rule.marks_bytes)} freed later by snapshot expiration)"
    if rule.next_due_ms is not None:
        due = "now" if rule.next_due_ms <= now_ms else _due_time(rule.next_due_ms, now_ms)
    elif rule.configured:
        due = "next pass"  # never run by tablefmt maintain: its next pass runs it
    else:
        due = "-"
    cadence = f"every {_duration(rule.interval_ms)}" + (" and after changes" if rule.on_change else "")
    backlog = f"; {rule.backlog} left by its limit" if rule.backlog else ""
    return (
        f"<tr><td><b>{_e(rule.operation)}</b><br><span class=muted>{_e(cadence)}</span></td>"
        f'<td class="num">{_e(frees)}</td><td>{_e(outcome + backlog)}</td><td class="due">{_e(due)}</td></tr>'
    )


def _rules_table(report: TableRetentionReport) -> str:
    rows = "".join(_rule_row(r, report.now_ms) for r in report.rules)
    return (
        "<table><thead><tr><th>rule</th><th class=num>frees now</th><th>dry run</th><th class=due>next due (UTC)</th>"
        "</tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


RAW_ROWS_TITLE = (
    "a primary-key table's manifests count every stored version of a key (raw rows); how many rows a read returns "
    "needs the read, which merges them. Changelog rows are not counted."
)


def _rows_tile(report: TableRetentionReport, latest: StoragePoint | None) -> str:
    """The live-rows tile: "live rows" on an append table, "live rows (raw, all versions)" on a primary-key one."""
    value = "-" if latest is None or latest.live_rows is None else f"{latest.live_rows:,}"
    if report.row_count_kind == "raw":
        return _tile("live rows (raw, all versions)", value, RAW_ROWS_TITLE)
    return _tile("live rows", value)


def _rows_header(report: TableRetentionReport) -> str:
    return "raw rows" if report.row_count_kind == "raw" else "rows"


def _partition_rows(partitions: Sequence[PartitionFigures], rows_header: str = "rows") -> str:
    marked = [p for p in partitions if p.dropped_by or p.trimmed_by]
    rest = [p for p in partitions if not (p.dropped_by or p.trimmed_by)]
    shown = marked + rest[-max(0, PARTITION_ROWS - len(marked)) :] if len(marked) < PARTITION_ROWS else marked
    shown.sort(key=lambda p: partitions.index(p))
    body = []
    for p in shown:
        css = ' class="dropped"' if p.dropped_by else ' class="trimmed"' if p.trimmed_by else ""
        mark = ", ".join([f"dropped by {r}" for r in p.dropped_by] + [f"trimmed by {r}" for r in p.trimmed_by])
        body.append(
            f"<tr{css}><td class=mono>{_e(p.partition or '(unpartitioned)')}</td>"
            f'<td class="num">{p.record_count:,}</td><td class="num">{_e(human_bytes(p.file_size_in_bytes))}</td>'
            f'<td class="num">{p.file_size_in_bytes:,}</td><td class="num">{p.file_count}</td><td>{_e(mark)}</td></tr>'
        )
    more = len(partitions) - len(shown)
    tail = f'<p class="muted">{more} more partition(s) not listed (tablefmt partitions lists all).</p>' if more else ""
    return (
        f"<table><thead><tr><th>partition</th><th class=num>{_e(rows_header)}</th><th class=num>size</th>"
        "<th class=num>bytes</th>"
        f"<th class=num>files</th><th>rules</th></tr></thead><tbody>{''.join(body)}</tbody></table>{tail}"
    )


def _keep_up_text(figures: KeepUpFigures) -> str:
    k = figures.keep_up
    lines = [
        f"window: {k.window_hours:.1f} h ({_e(figures.source)})",
        f"commits/h: {k.commits_per_hour:.2f}",
        f"ingest/h: {human_bytes(k.ingest_bytes_per_hour)}, {k.ingest_rows_per_hour:,.0f} rows",
        f"dropped rows/h: {k.dropped_rows_per_hour:,.0f}",
        f"reclaimed/h: {human_bytes(k.reclaimed_bytes_per_hour)}",
    ]
    if k.backlog:
        lines.append("backlog: " + ", ".join(f"{name} {left}" for name, left in k.backlog.items()))
    items = "".join(f"<li>{_e(line)}</li>" for line in lines)
    verdict = (
        "".join(f'<div class="warn">Retention is falling behind: {_e(a)}</div>' for a in k.advice)
        if k.falling_behind
        else '<div class="ok">Retention keeps up with ingest.</div>'
    )
    return f"{verdict}<ul class=notes>{items}</ul>"


def _table_section(report: TableRetentionReport, index: int) -> str:
    latest = report.storage.latest
    parts = [f'<section class="table" id="table-{index}"><h2>{_e(report.name)}</h2>']
    parts.append(f'<div class="mono muted">{_e(report.location)}</div>')
    parts += [f'<div class="warn">{_e(w)}</div>' for w in report.warnings]
    if report.errors and not report.rules:  # the table could not be read at all
        return "".join(parts) + "</section>"
    tiles = [
        _tile("live data", human_bytes(report.live_bytes)),
        _rows_tile(report, latest),
        _tile("held only by older snapshots/tags", human_bytes(0 if latest is None else latest.older_only_bytes)),
        _tile("orphans", "-" if report.orphan_bytes is None else human_bytes(report.orphan_bytes),
              "found by the orphan cleanup dry run (files older than orphan-files.older-than)"),
        _tile(
            "reclaimable now",
            f"{human_bytes(report.reclaimable_bytes)} ({dollars(report.reclaimable_usd_per_month)}/month)",
            "sum of the rules' dry runs; a month's storage at the table's price table (docs/cost.md)",
        ),
        *([_tile("held by the undo window", human_bytes(report.held_bytes), HELD_HINT)] if report.held_bytes else []),
        _tile("snapshots", "-" if latest is None else f"{report.storage.earliest_snapshot}..{latest.snapshot_id}"),
    ]
    parts.append(f'<div class="tiles">{"".join(tiles)}</div>')
    storage = charts.storage_chart(report.storage, report.now_ms, report.orphan_bytes, report.since_ms)
    parts.append(
        f'<div class="row"><div class="chart">{_image(storage, "data bytes over time")}</div>'
        f'<div class="side"><h3>What each rule would free now</h3>{_rules_table(report)}</div></div>'
    )
    notes = [*report.storage.notes, "orphans are known only now (the orphan cleanup dry run)"]
    parts.append("<ul class=notes>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h3>Partitions</h3>")
    parts.append(f'<div class="chart">{_image(charts.partition_chart(report.partitions), "bytes by partition")}</div>')
    parts.append(_partition_rows(report.partitions, _rows_header(report)))
    if report.keep_up is not None:
        parts.append("<h3>Keep-up</h3>")
        chart = charts.keep_up_chart(report.keep_up, report.storage, report.now_ms)
        parts.append(
            f'<div class="row"><div class="chart">{_image(chart, "ingest against retention per hour")}</div>'
            f'<div class="side">{_keep_up_text(report.keep_up)}</div></div>'
        )
    parts.append("</section>")
    return "".join(parts)


def _ranking_rows(tables: Sequence[TableRetentionReport], detailed: dict[str, int]) -> str:
    rows = []
    for rank, t in enumerate(tables, 1):
        name = _e(t.name)
        if t.name in detailed:
            name = f'<a href="#table-{detailed[t.name]}">{name}</a>'
        state = "error" if t.errors and not t.rules else "falling behind" if t.warnings else "ok"
        rows.append(
            f'<tr><td class="num">{rank}</td><td>{name}</td>'
            f'<td class="num">{_e(human_bytes(t.reclaimable_bytes))}</td>'
            f'<td class="num">{_e(human_bytes(t.growth_bytes_per_day()))}/d</td>'
            f'<td class="num">{_e(human_bytes(t.live_bytes))}</td><td>{_e(state)}</td></tr>'
        )
    return (
        "<table><thead><tr><th class=num>#</th><th>table</th><th class=num>reclaimable now</th>"
        "<th class=num>growth</th><th class=num>live</th><th>state</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _ranking(report: WarehouseReport, detailed: dict[str, int]) -> str:
    by_reclaimable = report.by_reclaimable()
    top = by_reclaimable[:15]
    chart = charts.ranking_chart(
        [t.name for t in top], [t.reclaimable_bytes for t in top], [max(0.0, t.growth_bytes_per_day()) for t in top]
    )
    total = sum(t.reclaimable_bytes for t in report.tables)
    return (
        f'<section class="ranking"><h2>{len(report.tables)} tables, {_e(human_bytes(total))} reclaimable now</h2>'
        f'<div class="chart">{_image(chart, "tables by reclaimable bytes and growth")}</div>'
        f"<h3>By reclaimable bytes</h3>{_ranking_rows(by_reclaimable, detailed)}"
        f"<h3>By growth</h3>{_ranking_rows(report.by_growth()[:DETAILED_TABLES], detailed)}</section>"
    )


def render_html(report: WarehouseReport | TableRetentionReport, *, detailed_tables: int = DETAILED_TABLES) -> str:
    """The whole page. A warehouse (more than one table) gets the ranking first, then charts for the top
    ``detailed_tables`` tables by reclaimable bytes and by growth."""
    if isinstance(report, TableRetentionReport):
        report = WarehouseReport(targets=(report.location,), now_ms=report.now_ms, tables=(report,))
    tables = list(report.tables)
    chosen = tables
    if len(tables) > 1:
        chosen = report.by_reclaimable()[:detailed_tables]
        growing = [t for t in report.by_growth() if t not in chosen]
        chosen += growing[: detailed_tables // 2]
    detailed = {t.name: i for i, t in enumerate(chosen)}
    body = [
        "<header><h1>Retention report</h1>",
        f'<div class="muted">{_e(", ".join(report.targets))} - generated {_e(_when(report.now_ms))}'
        f" by tablefmt</div></header>",
    ]
    if len(tables) > 1:
        body.append(_ranking(report, detailed))
    body += [_table_section(t, i) for i, t in enumerate(chosen)]
    title = f"Retention report: {', '.join(report.targets)}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )


def write_html(report: WarehouseReport | TableRetentionReport, path: str, **kwargs: int) -> None:
    """Write the page to a local ``path`` (replaced atomically)."""
    replace_text_file(path, render_html(report, **kwargs), prefix=".tablefmt-report-", suffix=".html")
