"""Shared CLI plumbing: storage options, durations, table opening, errors as one line, JSON output."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import click

from tableformat.durations import parse_duration_ms
from tableformat.errors import TableFormatError, ValidationError
from tableformat.io.storage_options import parse_storage_options as parse_storage_option_pairs
from tableformat.table import Table

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger(__name__)

_HELP_NOT_ERROR: tuple[type[Exception], ...] = tuple(
    cls for cls in (getattr(click.exceptions, "NoArgsIsHelpError", None),) if cls is not None
)
"""click >= 8.2 answers a bare group with its help through an exception; that stays help, not an error line."""


def storage_option_flag(func: F) -> F:
    """Add a repeatable ``--storage-option k=v`` flag."""
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable), e.g. endpoint_url=http://127.0.0.1:8333; "
        "client_kwargs.region_name=eu nests; boolean and integer options are typed (anon=false). "
        "Credentials are best left to fsspec/AWS environment configuration.",
    )(func)


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``--storage-option`` pairs to typed storage options (tableformat.io.storage_options); errors are usage errors."""
    try:
        return parse_storage_option_pairs(pairs)
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param_hint="'--storage-option'") from None


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


def fail(message: str, exit_code: int) -> NoReturn:
    """Print ``error: MESSAGE`` as one line on stderr and end the command with ``exit_code``."""
    click.echo(f"error: {' '.join(message.split())}", err=True)
    raise click.exceptions.Exit(exit_code)


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Every error as one ``error: ...`` line: click usage errors exit 2, everything else 1; never a traceback."""
    try:
        yield
    except click.exceptions.Exit:
        raise
    except _HELP_NOT_ERROR:
        raise
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code)
    except click.Abort:
        fail("aborted", 1)
    except (TableFormatError, OSError, ValueError) as exc:
        fail(one_line(exc), 1)
    except Exception as exc:
        log.debug("unexpected error", exc_info=True)
        fail(f"unexpected {type(exc).__name__}: {one_line(exc)} (tablefmt -vv logs the traceback)", 1)


class _OneLineErrors:
    """Parse and run errors of a click command or group as one line (also when invoked alone, not via the group)."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        with one_line_errors():
            context: click.Context = super().make_context(info_name, args, parent, **extra)  # type: ignore[misc]
            return context

    def invoke(self, ctx: click.Context) -> Any:
        with one_line_errors():
            return super().invoke(ctx)  # type: ignore[misc]


class OneLineErrorCommand(_OneLineErrors, click.Command):
    """A command whose parse and run errors print as one line (also when it is invoked alone, not via the group)."""


class OneLineErrorGroup(_OneLineErrors, click.Group):
    """A group whose own errors, and those of its subcommands and subgroups, print as one line."""

    command_class = OneLineErrorCommand
    group_class = type


def handle_errors(func: F) -> F:
    """Turn errors of a command callback into one line (exit 2 for usage errors, 1 otherwise; never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def duration_flag(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Option callback: a duration (``30s``, ``15 min``, ``1 h``, ``1h30m``, ``1.5h``, ``7d``) as milliseconds >= 0."""
    if value is None:
        return None
    if value.strip().startswith("-"):
        raise click.BadParameter(f"must not be negative, got {value!r}", param=param)
    try:
        return parse_duration_ms(value)
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param=param) from None
