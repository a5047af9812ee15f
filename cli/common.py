"""Shared CLI plumbing: storage options, table opening, errors as one line, JSON output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from tableformat.errors import TableFormatError
from tableformat.table import Table

F = TypeVar("F", bound=Callable[..., Any])


def storage_option_flag(func: F) -> F:
    """Add a repeatable ``--storage-option k=v`` flag."""
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable), e.g. endpoint_url=http://127.0.0.1:8333. "
        "Credentials are best left to fsspec/AWS environment configuration.",
    )(func)


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``k=v`` pairs to a dict; ``client_kwargs.region_name=x`` style keys nest one level."""
    result: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--storage-option")
        key, value = pair.split("=", 1)
        if "." in key:
            outer, inner = key.split(".", 1)
            result.setdefault(outer, {})[inner] = value
        else:
            result[key] = value
    return result


def open_table(path: str, storage_options: Sequence[str]) -> Table:
    """Open the table at ``path`` with CLI storage options."""
    return Table.open(path, parse_storage_options(storage_options))


def echo_json(document: Any) -> None:
    """Print one JSON document on stdout."""
    click.echo(json.dumps(document, indent=2, default=str, sort_keys=False))


def one_line(exc: BaseException) -> str:
    """An exception as one line, without credentials-bearing reprs."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def handle_errors(func: F) -> F:
    """Turn tablefmt and OS errors into a one-line message and exit code 1 (never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except click.ClickException:
            raise
        except (TableFormatError, OSError, ValueError) as exc:
            click.echo(f"error: {one_line(exc)}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]
