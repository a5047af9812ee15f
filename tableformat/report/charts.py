"""The report's charts, drawn with matplotlib (the optional extra ``report``, imported only here and only when a
chart is drawn) and returned as SVG documents: fonts as paths, no external reference, each its own document (the
page embeds them as ``data:`` images, so ids never clash)."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from typing import Any

from tableformat.errors import ValidationError
from tableformat.units import human_bytes

from .model import KeepUpFigures, PartitionFigures, StorageHistory

LIVE = "#2f6db5"
OLDER = "#f0a04b"
ORPHAN = "#b8b8b8"
DROPPED = "#c8433a"
TRIMMED = "#e9b949"
INGEST = "#2f6db5"
RECLAIMED = "#3a9a5b"
TAKEN_OUT = "#c8433a"
MAX_PARTITION_BARS = 120
"""Partitions drawn (the newest); the page's table lists them all."""

_MPL: Any = None


def require_matplotlib() -> None:
    """Fail now (ValidationError naming the extra) when the charts could not be drawn, before any table is read."""
    _matplotlib()


def _matplotlib() -> Any:
    """matplotlib, imported once with the non-interactive SVG setup; a one-line error naming the extra if missing."""
    global _MPL
    if _MPL is None:
        try:
            import matplotlib
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ValidationError(
                "the HTML report draws its charts with matplotlib: pip install 'tablefmt[report]'"
            ) from exc
        matplotlib.rcParams.update(
            {
                "svg.fonttype": "path",
                "font.size": 9,
                "axes.spines.top": False,
                "axes.spines.right": False,
                "axes.grid": True,
                "grid.color": "#e4e4e4",
                "grid.linewidth": 0.6,
                "axes.axisbelow": True,
                "svg.hashsalt": "tablefmt-report",
            }
        )
        _MPL = (matplotlib, Figure)
    return _MPL


def _figure(width: float, height: float, *, bottom: float = 0.16, right: float = 0.98, left: float = 0.1) -> Any:
    """A figure with fixed margins (a layout engine would double the cost of every chart)."""
    _, figure_class = _matplotlib()
    figure = figure_class(figsize=(width, height), dpi=100)
    figure.subplots_adjust(left=left, right=right, bottom=bottom, top=0.9)
    return figure


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": "tablefmt report"})
    return out.getvalue()


def _bytes_axis(ax: Any) -> None:
    ticker = _matplotlib()[0].ticker
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: human_bytes(v)))


def _times(values_ms: Sequence[int]) -> list[dt.datetime]:
    return [dt.datetime.fromtimestamp(v / 1000, dt.timezone.utc).replace(tzinfo=None) for v in values_ms]


def _time_axis(ax: Any) -> None:
    dates = _matplotlib()[0].dates
    locator = dates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))


def storage_chart(history: StorageHistory, now_ms: int, orphan_bytes: int | None, since_ms: int | None) -> str:
    """Stacked areas over commit time: live bytes, bytes held only by older snapshots and tags; the orphan bytes
    the cleaner finds now as a bar on top at the right (known only now)."""
    points = [p for p in history.points if since_ms is None or p.time_ms >= since_ms]
    fig = _figure(7.4, 3.0, bottom=0.2)
    ax = fig.add_subplot()
    if points:
        times = [p.time_ms for p in points] + [max(now_ms, points[-1].time_ms)]
        live = [p.live_bytes for p in points] + [points[-1].live_bytes]
        older = [p.older_only_bytes for p in points] + [points[-1].older_only_bytes]
        x = _times(times)
        ax.fill_between(x, 0, live, step="post", color=LIVE, alpha=0.9, label="live (latest snapshot)", lw=0)
        stacked = [a + b for a, b in zip(live, older)]
        older_label = "held only by older snapshots/tags"
        ax.fill_between(x, live, stacked, step="post", color=OLDER, alpha=0.9, label=older_label, lw=0)
        span = max(times[-1] - times[0], 1000)
        if orphan_bytes:
            width = dt.timedelta(milliseconds=span * 0.025)
            ax.bar(x[-1], orphan_bytes, width=width, bottom=stacked[-1], color=ORPHAN, hatch="///",
                   edgecolor="#707070", label="orphans (now)", align="edge")
        ax.set_xlim(x[0], x[-1] + dt.timedelta(milliseconds=span * 0.03))
        _time_axis(ax)
        ax.legend(loc="upper left", fontsize=8, framealpha=0.85, edgecolor="#d4d4d4")
    else:
        ax.text(0.5, 0.5, "no snapshot", ha="center", va="center", transform=ax.transAxes)
    _bytes_axis(ax)
    ax.set_ylim(bottom=0)
    ax.set_title("Data bytes over time (UTC)", loc="left", fontsize=10)
    return _svg(fig)


def partition_chart(partitions: Sequence[PartitionFigures]) -> str:
    """Bytes per partition in partition order (bars), rows as dots; partitions a rule would drop in red, those it
    would trim in yellow."""
    shown = list(partitions)[-MAX_PARTITION_BARS:]
    fig = _figure(7.4, 3.2, bottom=0.27, right=0.92)
    ax = fig.add_subplot()
    if not shown:
        ax.text(0.5, 0.5, "no live data", ha="center", va="center", transform=ax.transAxes)
        return _svg(fig)
    colors = [DROPPED if p.dropped_by else TRIMMED if p.trimmed_by else LIVE for p in shown]
    positions = list(range(len(shown)))
    ax.bar(positions, [p.file_size_in_bytes for p in shown], color=colors, width=0.8)
    _bytes_axis(ax)
    rows = ax.twinx()
    rows.plot(positions, [p.record_count for p in shown], "o", color="#333333", markersize=3, label="rows")
    rows.set_ylim(bottom=0)
    rows.grid(False)
    rows.spines["right"].set_visible(True)
    rows.set_ylabel("rows", fontsize=8)
    step = max(1, len(shown) // 12)
    ax.set_xticks(positions[::step], [p.partition or "(all)" for p in shown][::step], rotation=30, ha="right",
                  fontsize=7)
    patches = _matplotlib()[0].patches
    handles = [patches.Patch(color=LIVE, label="kept"), patches.Patch(color=DROPPED, label="dropped by a rule now")]
    if any(p.trimmed_by for p in shown):
        handles.append(patches.Patch(color=TRIMMED, label="partly expired (record TTL)"))
    handles += rows.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="upper left", fontsize=8, frameon=False)
    more = f" (newest {len(shown)} of {len(partitions)})" if len(partitions) > len(shown) else ""
    ax.set_title(f"Bytes and rows by partition{more}", loc="left", fontsize=10)
    return _svg(fig)


def keep_up_chart(keep_up: KeepUpFigures, history: StorageHistory, now_ms: int) -> str:
    """Per hour: bytes ingested (up), bytes the maintainer reclaimed and bytes taken out of the live set by drops,
    overwrites and record expiry (down)."""
    hour = 3_600_000
    taken: dict[int, int] = {}
    for p in history.points:
        if p.removed_bytes:
            start = p.time_ms - p.time_ms % hour
            taken[start] = taken.get(start, 0) + p.removed_bytes
    start = now_ms - keep_up.window_ms
    hours = sorted({h.hour_ms for h in keep_up.hours} | {h for h in taken if h + hour > start})
    by_hour = {h.hour_ms: h for h in keep_up.hours}
    fig = _figure(7.4, 2.8, bottom=0.2)
    ax = fig.add_subplot()
    if not hours:
        ax.text(0.5, 0.5, "no commits in the window", ha="center", va="center", transform=ax.transAxes)
        return _svg(fig)
    x = _times([h + hour // 2 for h in hours])
    width = dt.timedelta(milliseconds=max(hour * 2 // 3, keep_up.window_ms // 120))
    ingest = [by_hour[h].ingest_bytes if h in by_hour else 0 for h in hours]
    reclaimed = [-(by_hour[h].reclaimed_bytes if h in by_hour else 0) for h in hours]
    out = [-taken.get(h, 0) for h in hours]
    ax.bar(x, ingest, width=width, color=INGEST, label="ingested")
    ax.bar(x, out, width=width, color=TAKEN_OUT, label="taken out of the live set")
    ax.bar(x, reclaimed, width=width, bottom=out, color=RECLAIMED, label="reclaimed by tablefmt maintain")
    ax.axhline(0, color="#555555", lw=0.8)
    ax.set_xlim(*_times([min(hours[0], now_ms - keep_up.window_ms), max(now_ms, hours[-1] + hour)]))
    ticker = _matplotlib()[0].ticker
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: human_bytes(abs(v))))
    _time_axis(ax)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=3)
    ax.set_title("Ingest against retention, bytes per hour (UTC)", loc="left", fontsize=10)
    return _svg(fig)


def ranking_chart(names: Sequence[str], reclaimable: Sequence[int], growth: Sequence[float]) -> str:
    """Two horizontal bar charts side by side: reclaimable bytes and growth per day of the top tables."""
    longest = max((len(n) for n in names), default=10)
    fig = _figure(7.4, max(1.6, 0.22 * len(names) + 0.8), left=min(0.45, 0.03 + 0.0085 * longest), bottom=0.12)
    left, right = fig.subplots(1, 2, sharey=True)
    positions = list(range(len(names)))[::-1]
    left.barh(positions, list(reclaimable), color=OLDER)
    left.set_yticks(positions, list(names), fontsize=7)
    left.set_title("reclaimable now", loc="left", fontsize=9)
    right.barh(positions, list(growth), color=LIVE)
    right.set_title("growth per day", loc="left", fontsize=9)
    ticker = _matplotlib()[0].ticker
    for ax in (left, right):
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: human_bytes(v)))
        ax.tick_params(axis="x", labelsize=7)
    return _svg(fig)
