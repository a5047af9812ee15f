"""The charts as matplotlib draws them, read from the Figure before it becomes SVG (the SVG draws text as paths):
byte axes tick at round values of one binary unit, legends never cover the plotting area, time ticks read as
hours:minutes (with the date where it changes), and the keep-up chart spans exactly the keep-up window."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import time
from typing import Any

import pytest
from support.ci import optional

from tableformat.report import charts
from tableformat.report.model import StorageHistory, StoragePoint
from tableformat.table import Table

optional("matplotlib")

KIB = 1024
MIB = KIB * KIB
GIB = MIB * KIB
UNITS = {"B": 1, "KiB": KIB, "MiB": MIB, "GiB": GIB, "TiB": GIB * KIB}
BYTE_LABEL = re.compile(r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB)")
NOW_MS = 1_795_780_800_000  # 2026-11-27 10:00 UTC
"""The clock of the synthetic charts."""


def _now() -> int:
    return time.time_ns() // 1_000_000


def _drawn(fig: Any) -> Any:
    fig.draw_without_rendering()  # ticks, labels and legend placed exactly as savefig places them
    return fig


def _ticks(ax: Any, which: str) -> list[tuple[float, str]]:
    """(position, label) of the major ticks drawn inside the axis limits."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    low, high = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    slack = (high - low) * 1e-9
    labels = [t.get_text() for t in axis.get_majorticklabels()]
    locations = list(axis.get_majorticklocs())
    assert len(labels) == len(locations)
    return [(loc, label) for loc, label in zip(locations, labels) if low - slack <= loc <= high + slack]


def _assert_round_bytes(ax: Any, which: str = "y") -> str:
    """Every tick label is "<number> <unit>" of one unit, names the tick's position, and the ticks are evenly
    spaced multiples of 1, 2, 2.5 or 5 times a power of ten in that unit. Returns the unit."""
    ticks = _ticks(ax, which)
    assert len(ticks) >= 3, ticks
    parsed = []
    for location, label in ticks:
        match = BYTE_LABEL.fullmatch(label)
        assert match, f"{label!r} is not '<number> <unit>'"
        parsed.append((location, float(match[1]), match[2]))
    units = {unit for _, _, unit in parsed}
    assert len(units) == 1, f"one axis mixes units: {[label for _, label in ticks]}"
    unit = units.pop()
    size = UNITS[unit]
    values = [math.copysign(number, location) for location, number, _ in parsed]  # drawn downwards: negative
    for (location, _, _), value in zip(parsed, values):
        assert location == pytest.approx(value * size, abs=size * 1e-6)
    step = values[1] - values[0]
    assert all(b - a == pytest.approx(step) for a, b in itertools.pairwise(values)), values
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 2.5, 5), f"step {step} {unit} is not round"
    assert all(v / step == pytest.approx(round(v / step)) for v in values), values
    return unit


def _history(span_ms: int, top_bytes: int, points: int = 6) -> StorageHistory:
    start = NOW_MS - span_ms
    return StorageHistory(
        points=tuple(
            StoragePoint(
                snapshot_id=i + 1,
                time_ms=start + span_ms * i // (points - 1),
                commit_kind="APPEND",
                live_bytes=top_bytes * (i + 1) // points // 2,
                live_files=i + 1,
                live_rows=10 * (i + 1),
                older_only_bytes=top_bytes * (i + 1) // points // 2,
            )
            for i in range(points)
        ),
        earliest_snapshot=1,
    )


@pytest.mark.parametrize(
    ("top_bytes", "unit"),
    [
        (700, "B"),
        (30_000, "KiB"),
        (300 * KIB, "KiB"),
        (900 * KIB, "KiB"),
        (1000 * KIB, "MiB"),
        (5 * MIB + 123, "MiB"),
        (3 * GIB + 7, "GiB"),
    ],
)
def test_a_byte_axis_ticks_round_values_in_the_unit_its_maximum_reaches(top_bytes: int, unit: str) -> None:
    fig = _drawn(charts.storage_figure(_history(86_400_000, top_bytes), NOW_MS, None, None))
    assert _assert_round_bytes(fig.axes[0]) == unit


def test_every_byte_axis_of_the_report_ticks_round_values_of_one_unit(events: Table) -> None:
    report = events.report(since="1 h")
    assert report.keep_up is not None
    storage = _drawn(charts.storage_figure(report.storage, report.now_ms, report.orphan_bytes, report.since_ms))
    partitions = _drawn(charts.partition_figure(report.partitions))
    keep_up = _drawn(charts.keep_up_figure(report.keep_up, report.storage, report.now_ms))
    assert _assert_round_bytes(storage.axes[0]) == "KiB"
    assert _assert_round_bytes(partitions.axes[0]) == "KiB"
    rows = [label for _, label in _ticks(partitions.axes[1], "y")]
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", label) for label in rows), rows
    assert _assert_round_bytes(keep_up.axes[0]) == "KiB"  # ingest up, taken out down: one unit both ways
    assert any(location < 0 for location, _ in _ticks(keep_up.axes[0], "y"))
    ranking = _drawn(charts.ranking_figure(["db.a", "db.b", "db.c"], [3 * MIB, 700 * KIB, 0], [10_000, 2_500, 0]))
    assert [_assert_round_bytes(ax, "x") for ax in ranking.axes] == ["MiB", "KiB"]


def _legend_clear(fig: Any) -> None:
    """The legend lies inside the figure, outside every axes' plotting area, and off the title."""
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    box = legends[0].get_window_extent()
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
    for ax in fig.axes:
        assert not box.overlaps(ax.bbox), f"the legend {box} covers the plotting area {ax.bbox}"
    for text in fig.texts:
        assert not box.overlaps(text.get_window_extent()), f"the legend covers {text.get_text()!r}"


def test_legends_never_cover_the_plotting_area(events: Table) -> None:
    report = events.report(since="1 h")
    assert report.keep_up is not None
    _legend_clear(_drawn(charts.storage_figure(report.storage, report.now_ms, report.orphan_bytes, None)))
    _legend_clear(_drawn(charts.partition_figure(report.partitions)))
    _legend_clear(_drawn(charts.keep_up_figure(report.keep_up, report.storage, report.now_ms)))


TIME = re.compile(r"\d\d:\d\d(:\d\d)?")
DATE = re.compile(r"\d\d [A-Z][a-z]{2}")


@pytest.mark.parametrize(
    ("span", "dates"),
    [
        (dt.timedelta(seconds=50), False),
        (dt.timedelta(minutes=3), False),
        (dt.timedelta(hours=1), False),
        (dt.timedelta(hours=20), True),
        (dt.timedelta(days=6), True),
        (dt.timedelta(days=30), True),  # crosses 1 Nov: a date, not a month name
    ],
)
def test_time_ticks_read_as_hours_and_minutes_and_dates(span: dt.timedelta, dates: bool) -> None:
    span_ms = int(span.total_seconds() * 1000)
    fig = _drawn(charts.storage_figure(_history(span_ms, 50 * KIB), NOW_MS, None, None))
    labels = [label for _, label in _ticks(fig.axes[0], "x")]
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels
    if span < dt.timedelta(days=2):
        assert all(TIME.fullmatch(label) or DATE.fullmatch(label) for label in labels), labels
        assert sum(1 for label in labels if TIME.fullmatch(label)) >= 2, labels
    else:
        assert all(DATE.fullmatch(label) for label in labels), labels
    assert any(DATE.fullmatch(label) for label in labels) == dates, labels  # the 20 h span crosses midnight


def test_the_report_time_axes_show_hours_and_minutes(events: Table) -> None:
    report = events.report(since="1 h")  # the table was written seconds ago: ticks seconds apart
    assert report.keep_up is not None
    storage = _drawn(charts.storage_figure(report.storage, report.now_ms, report.orphan_bytes, None))
    keep_up = _drawn(charts.keep_up_figure(report.keep_up, report.storage, report.now_ms))
    for fig in (storage, keep_up):
        labels = [label for _, label in _ticks(fig.axes[0], "x")]
        assert len(labels) >= 3 and all(TIME.fullmatch(label) for label in labels), labels


def _date_number(ms: int) -> float:
    dates = optional("matplotlib.dates")
    return float(dates.date2num(dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).replace(tzinfo=None)))


@pytest.mark.parametrize(("since", "later_h"), [("1 h", 0), ("6 h", 0), ("1 h", 20), ("2 d", 30)])
def test_the_keep_up_chart_spans_exactly_the_keep_up_window(events: Table, since: str, later_h: int) -> None:
    now = _now() + later_h * 3_600_000
    report = events.report(since=since, now_ms=now)
    assert report.keep_up is not None
    window = report.keep_up.window_ms
    assert window == {"1 h": 3_600_000, "6 h": 6 * 3_600_000, "2 d": 48 * 3_600_000}[since]
    ax = _drawn(charts.keep_up_figure(report.keep_up, report.storage, now)).axes[0]
    low, high = ax.get_xlim()
    assert (low, high) == (
        pytest.approx(_date_number(now - window), abs=1e-9),
        pytest.approx(_date_number(now), abs=1e-9),
    )
    labels = [label for _, label in _ticks(ax, "x")]
    assert len(labels) >= 3 and all(TIME.fullmatch(label) or DATE.fullmatch(label) for label in labels), labels
