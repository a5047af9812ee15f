"""The report's charts, drawn with matplotlib (the optional extra ``report``, imported only here and only when a
chart is drawn) and returned as SVG documents: fonts as paths, no external reference, each its own document (the
page embeds them as ``data:`` images, so ids never clash). Each ``*_figure`` function returns the matplotlib Figure
(what the tests read ticks, limits and legends from); the ``*_chart`` function beside it returns its SVG.

Byte axes tick at round values of one binary unit per axis (the unit the axis maximum reaches, then
``MaxNLocator`` steps 1, 2, 2.5, 5, 10 in that unit); time axes show hours:minutes and the date where it changes;
legends sit above the plotting area, between the title and the axes, so they never cover data."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Sequence
from typing import Any

from tableformat.errors import ValidationError

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


BYTE_UNITS = (("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("PiB", 1 << 50))
BYTE_STEPS = (1, 2, 2.5, 5, 10)
"""MaxNLocator's steps in the axis's unit: ticks at 0, 10, 20 KiB or 0, 2.5, 5 MiB, never 9.8 KiB."""
TITLE_INCHES = 0.3
LEGEND_INCHES = 0.28
"""The band above the axes: the title, then one legend row."""


def byte_unit(maximum: float) -> tuple[str, int]:
    """The largest binary unit ``maximum`` (bytes) reaches at least once: (name, size in bytes); bytes below 1 KiB."""
    chosen = BYTE_UNITS[0]
    for unit in BYTE_UNITS:
        if abs(maximum) >= unit[1]:
            chosen = unit
    return chosen


def _tick_number(value: float) -> str:
    """A tick value in its unit without float noise: 0, 7.5, 20, 0.25."""
    text = f"{round(value, 6):g}"
    return "0" if text == "-0" else text


def _figure(
    width: float, height: float, *, bottom: float = 0.16, right: float = 0.98, left: float = 0.1, legend_rows: int = 1
) -> Any:
    """A figure with fixed margins (a layout engine would double the cost of every chart); the top margin holds
    the title and ``legend_rows`` legend rows, whatever the figure's height."""
    _, figure_class = _matplotlib()
    figure = figure_class(figsize=(width, height), dpi=100)
    top = 1 - (TITLE_INCHES + LEGEND_INCHES * legend_rows + 0.05) / height
    figure.subplots_adjust(left=left, right=right, bottom=bottom, top=top)
    return figure


def _title(fig: Any, text: str) -> None:
    """The chart's title at the top left of the figure, above the legend band."""
    left = fig.subplotpars.left
    fig.text(left, 1 - 0.06 / fig.get_figheight(), text, ha="left", va="top", fontsize=10)


def _legend_above(ax: Any, handles: Sequence[Any] | None = None) -> None:
    """The legend in one row between the title and the axes: it cannot cover data."""
    if handles is None:
        handles = ax.get_legend_handles_labels()[0]
    ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0, 1.02),
        ncols=len(handles),
        fontsize=8,
        frameon=False,
        borderaxespad=0,
        handlelength=1.4,
        columnspacing=1.2,
    )


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None, "Creator": "tablefmt report"})
    return out.getvalue()


def _bytes_axis(ax: Any, which: str = "y") -> None:
    """Round ticks of one binary unit on the axis ``which`` ("x" or "y") over its current limits (call it once
    the data is drawn); labels like "20 KiB" (negative values, drawn downwards, labelled by their size)."""
    ticker = _matplotlib()[0].ticker
    get_limits, set_limits = (ax.get_xlim, ax.set_xlim) if which == "x" else (ax.get_ylim, ax.set_ylim)
    low, high = sorted(get_limits())
    high = max(high, 1.0)  # an axis of nothing still ticks whole bytes
    set_limits(low, high)  # fixed now: the ticks below are for exactly these limits
    unit, size = byte_unit(max(abs(low), abs(high)))
    locator = ticker.MaxNLocator(nbins=6, steps=list(BYTE_STEPS), integer=size == 1)
    slack = (high - low) / size * 1e-9
    ticks = [
        t * size for t in locator.tick_values(low / size, high / size) if low / size - slack <= t <= high / size + slack
    ]
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_locator(ticker.FixedLocator(ticks))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{_tick_number(abs(v) / size)} {unit}"))


def _count_axis(axis: Any) -> None:
    """Whole-number ticks with thousands separators (row counts)."""
    ticker = _matplotlib()[0].ticker
    axis.set_major_locator(ticker.MaxNLocator(nbins=6, steps=list(BYTE_STEPS), integer=True))
    axis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))


def _times(values_ms: Sequence[int]) -> list[dt.datetime]:
    return [dt.datetime.fromtimestamp(v / 1000, dt.timezone.utc).replace(tzinfo=None) for v in values_ms]


def _time_axis(ax: Any) -> None:
    """Ticks as readable UTC times: hours:minutes (with seconds when the ticks are seconds apart), the date where
    it changes, whole dates for ticks days apart; the date of the axis in its corner."""
    dates = _matplotlib()[0].dates
    locator = dates.AutoDateLocator(minticks=3, maxticks=7)
    formatter = dates.ConciseDateFormatter(
        locator,
        formats=["%Y", "%b", "%d %b", "%H:%M", "%H:%M", "%H:%M:%S"],
        zero_formats=["", "%Y", "%d %b", "%d %b", "%H:%M", "%H:%M:%S"],
        offset_formats=["", "%Y", "%Y-%m", "%Y-%m-%d", "%Y-%m-%d", "%Y-%m-%d"],
    )
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(formatter)


MIN_TIME_SPAN_MS = 30_000
"""The storage chart spans at least 30 seconds: a table written within a second still gets ticks whole seconds
apart (below that the ticks would be fractions of a second, all reading the same HH:MM:SS)."""


def storage_figure(history: StorageHistory, now_ms: int, orphan_bytes: int | None, since_ms: int | None) -> Any:
    """Stacked areas over commit time: live bytes, bytes held only by older snapshots and tags; the orphan bytes
    the cleaner finds now as a bar on top at the right (known only now)."""
    points = [p for p in history.points if since_ms is None or p.time_ms >= since_ms]
    fig = _figure(7.4, 3.0, bottom=0.14)
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
        span = max(times[-1] - times[0], MIN_TIME_SPAN_MS)
        if orphan_bytes:
            width = dt.timedelta(milliseconds=span * 0.025)
            ax.bar(
                x[-1],
                orphan_bytes,
                width=width,
                bottom=stacked[-1],
                color=ORPHAN,
                hatch="///",
                edgecolor="#707070",
                label="orphans (now)",
                align="edge",
            )
        ax.set_xlim(x[0], _times([times[0] + int(span * 1.03)])[0])
        _time_axis(ax)
        _legend_above(ax)
    else:
        ax.text(0.5, 0.5, "no snapshot", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylim(bottom=0)
    _bytes_axis(ax)
    _title(fig, "Data bytes over time (UTC)")
    return fig


def storage_chart(history: StorageHistory, now_ms: int, orphan_bytes: int | None, since_ms: int | None) -> str:
    """:func:`storage_figure` as SVG."""
    return _svg(storage_figure(history, now_ms, orphan_bytes, since_ms))


def partition_figure(partitions: Sequence[PartitionFigures]) -> Any:
    """Bytes per partition in partition order (bars), rows as dots; partitions a rule would drop in red, those it
    would trim in yellow."""
    shown = list(partitions)[-MAX_PARTITION_BARS:]
    fig = _figure(7.4, 3.2, bottom=0.24, right=0.9)
    ax = fig.add_subplot()
    more = f" (newest {len(shown)} of {len(partitions)})" if len(partitions) > len(shown) else ""
    _title(fig, f"Bytes and rows by partition{more}")
    if not shown:
        ax.text(0.5, 0.5, "no live data", ha="center", va="center", transform=ax.transAxes)
        return fig
    colors = [DROPPED if p.dropped_by else TRIMMED if p.trimmed_by else LIVE for p in shown]
    positions = list(range(len(shown)))
    ax.bar(positions, [p.file_size_in_bytes for p in shown], color=colors, width=0.8)
    _bytes_axis(ax)
    rows = ax.twinx()
    rows.plot(positions, [p.record_count for p in shown], "o", color="#333333", markersize=3, label="rows")
    rows.set_ylim(bottom=0)
    _count_axis(rows.yaxis)
    rows.grid(False)
    rows.spines["right"].set_visible(True)
    rows.set_ylabel("rows", fontsize=8)
    step = max(1, len(shown) // 12)
    ax.set_xticks(
        positions[::step], [p.partition or "(all)" for p in shown][::step], rotation=30, ha="right", fontsize=7
    )
    patches = _matplotlib()[0].patches
    handles = [patches.Patch(color=LIVE, label="kept"), patches.Patch(color=DROPPED, label="dropped by a rule now")]
    if any(p.trimmed_by for p in shown):
        handles.append(patches.Patch(color=TRIMMED, label="partly expired (record TTL)"))
    handles += rows.get_legend_handles_labels()[0]
    _legend_above(ax, handles)
    return fig


def partition_chart(partitions: Sequence[PartitionFigures]) -> str:
    """:func:`partition_figure` as SVG."""
    return _svg(partition_figure(partitions))


def keep_up_figure(keep_up: KeepUpFigures, history: StorageHistory, now_ms: int) -> Any:
    """Per hour of the keep-up window (the x axis is exactly the window): bytes ingested (up), bytes the
    maintainer reclaimed and bytes taken out of the live set by drops, overwrites and record expiry (down)."""
    hour = 3_600_000
    start = now_ms - keep_up.window_ms

    def in_window(hour_ms: int) -> bool:
        return hour_ms + hour > start and hour_ms <= now_ms

    taken: dict[int, int] = {}
    for p in history.points:
        bucket = p.time_ms - p.time_ms % hour  # the hours of the maintainer's counts
        if p.removed_bytes and p.time_ms <= now_ms and in_window(bucket):
            taken[bucket] = taken.get(bucket, 0) + p.removed_bytes
    by_hour = {h.hour_ms: h for h in keep_up.hours if in_window(h.hour_ms)}
    hours = sorted(set(by_hour) | set(taken))
    fig = _figure(7.4, 2.8, bottom=0.14)
    ax = fig.add_subplot()
    _title(fig, "Ingest against retention, bytes per hour (UTC)")
    ax.set_xlim(*_times([start, now_ms]))
    _time_axis(ax)
    if not hours:
        ax.text(0.5, 0.5, "no commits in the window", ha="center", va="center", transform=ax.transAxes)
        ax.yaxis.set_major_locator(_matplotlib()[0].ticker.NullLocator())
        return fig
    x = _times(hours)
    width = dt.timedelta(milliseconds=max(hour * 0.9, keep_up.window_ms / 150))  # still visible over days
    ingest = [by_hour[h].ingest_bytes if h in by_hour else 0 for h in hours]
    reclaimed = [-(by_hour[h].reclaimed_bytes if h in by_hour else 0) for h in hours]
    out = [-taken.get(h, 0) for h in hours]
    ax.bar(x, ingest, width=width, align="edge", color=INGEST, label="ingested")
    ax.bar(x, out, width=width, align="edge", color=TAKEN_OUT, label="taken out of the live set")
    ax.bar(x, reclaimed, width=width, align="edge", bottom=out, color=RECLAIMED, label="reclaimed by tablefmt maintain")
    ax.axhline(0, color="#555555", lw=0.8)
    ax.set_xlim(*_times([start, now_ms]))  # bars of hours that start before the window are cut at its start
    _bytes_axis(ax)
    _legend_above(ax)
    return fig


def keep_up_chart(keep_up: KeepUpFigures, history: StorageHistory, now_ms: int) -> str:
    """:func:`keep_up_figure` as SVG."""
    return _svg(keep_up_figure(keep_up, history, now_ms))


def ranking_figure(names: Sequence[str], reclaimable: Sequence[int], growth: Sequence[float]) -> Any:
    """Two horizontal bar charts side by side: reclaimable bytes and growth per day of the top tables."""
    longest = max((len(n) for n in names), default=10)
    fig = _figure(
        7.4, max(1.6, 0.22 * len(names) + 0.8), left=min(0.45, 0.03 + 0.0085 * longest), bottom=0.12, legend_rows=0
    )
    left, right = fig.subplots(1, 2, sharey=True)
    positions = list(range(len(names)))[::-1]
    left.barh(positions, list(reclaimable), color=OLDER)
    left.set_yticks(positions, list(names), fontsize=7)
    left.set_title("reclaimable now", loc="left", fontsize=9)
    right.barh(positions, list(growth), color=LIVE)
    right.set_title("growth per day", loc="left", fontsize=9)
    for ax in (left, right):
        ax.set_xlim(left=0)
        _bytes_axis(ax, "x")
        ax.tick_params(axis="x", labelsize=7)
    return fig


def ranking_chart(names: Sequence[str], reclaimable: Sequence[int], growth: Sequence[float]) -> str:
    """:func:`ranking_figure` as SVG."""
    return _svg(ranking_figure(names, reclaimable, growth))
