"""Human output: sizes in KiB/MiB/GiB, durations, ISO times in the local zone, and aligned tables that fit the
terminal (80 columns when the output is not a terminal or COLUMNS says so), printed with rich."""

from __future__ import annotations

import datetime as dt
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # rich is imported when a table is printed (not by commands that print lines)
    from rich.console import Console
    from rich.table import Table as RichTable

from tableformat.durations import format_duration_ms
from tableformat.units import human_bytes, human_count

__all__ = ["human_bytes", "human_count"]


def human_duration(millis: int | None) -> str:
    return "-" if millis is None else format_duration_ms(millis)


def iso_time(millis: int | None) -> str:
    """Epoch milliseconds as an ISO time in the local zone, offset shown: ``2026-11-24T10:15:02+01:00``."""
    if millis is None:
        return "-"
    return dt.datetime.fromtimestamp(millis / 1000, dt.timezone.utc).astimezone().isoformat(timespec="seconds")


def iso_local(value: dt.datetime | None) -> str:
    """A naive local wall-clock time (a file's creation time) in ISO form with the local zone's offset."""
    if value is None:
        return "-"
    return value.astimezone().isoformat(timespec="seconds")


def console(*, stderr: bool = False) -> Console:
    """A rich console on click's current stdout (stderr): no colours or markup outside a terminal, 80 columns wide
    unless the terminal or COLUMNS says otherwise."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not stream.isatty():
        width = int(os.environ.get("COLUMNS", "80") or 80)
    terminal = stream.isatty()
    return Console(
        file=stream, width=width, highlight=False, markup=False, emoji=False, soft_wrap=False, no_color=not terminal
    )


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[str] = (), fold: Sequence[str] = ()
) -> RichTable:
    """An aligned, borderless table: ``right`` columns right-aligned (numbers), ``fold`` columns may wrap (paths);
    every other column keeps its text on one line and is cut with an ellipsis if the width runs out."""
    from rich.table import Table as RichTable
    from rich.text import Text

    result = RichTable(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 2, 0, 0))
    for name in columns:
        result.add_column(
            name,
            justify="right" if name in right else "left",
            overflow="fold" if name in fold else "ellipsis",
            no_wrap=name not in fold,
        )
    for row in rows:
        result.add_row(*(Text(str(cell)) for cell in row))
    return result


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, right: Sequence[str] = (), fold: Sequence[str] = ()
) -> None:
    """Print an aligned table on stdout (through click, lines without trailing blanks)."""
    out = console()
    with out.capture() as captured:
        out.print(table(columns, rows, right=right, fold=fold))
    for line in captured.get().splitlines():
        click.echo(line.rstrip())


def width() -> int:
    """The output width: the terminal's, else COLUMNS, else 80."""
    return int(console().width)


def wrap(text: str, *, indent: str = "", first: str = "") -> str:
    """``text`` wrapped at the output width on word boundaries (never inside a word, so paths stay whole), later
    lines indented by ``indent``."""
    return textwrap.fill(
        text,
        width=width(),
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )


def echo_pairs(pairs: Sequence[tuple[str, Any]]) -> None:
    """``key: value`` lines with the values aligned (long values wrapped under themselves)."""
    pad = max((len(k) for k, _ in pairs), default=0) + 2
    for key, value in pairs:
        click.echo(wrap(str(value), first=f"{key + ':':<{pad}}", indent=" " * pad))
