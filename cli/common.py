"""Shared CLI plumbing: storage options, durations, table opening, errors as one line, JSON output."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from tableformat.cli.progress import Activity, activity, counting
from tableformat.durations import MAX_DURATION_MS, duration_range, parse_duration_ms
from tableformat.errors import ArgumentError, TableFormatError, ValidationError
from tableformat.io.storage_options import parse_storage_options as parse_storage_option_pairs
from tableformat.option_types import INT32_MAX

if TYPE_CHECKING:
    from tableformat.table import Table

F = TypeVar("F", bound=Callable[..., Any])

COUNT = click.IntRange(min=1, max=INT32_MAX)
"""A count flag (snapshots, files, threads, tables): 1 to 2147483647, the range of the count options."""

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


def open_table(path: str, storage_options: Sequence[str], activity: Activity | None = None) -> Table:
    """Open the table at ``path`` with CLI storage options (its storage calls feeding ``activity``'s progress line
    when there is one)."""
    from tableformat.context import TableContext  # imported here: the group and its help need none of the table API
    from tableformat.io.factory import open_location
    from tableformat.layout import TableLayout
    from tableformat.table import Table

    options = parse_storage_options(storage_options)
    if activity is None:
        return Table.open(path, options)
    file_io, root = open_location(path, options)
    return Table(TableContext.of(path, counting(file_io, activity), TableLayout(root)))


def echo_json(document: Any) -> None:
    """Print one JSON document on stdout."""
    click.echo(json.dumps(document, indent=2, default=str, sort_keys=False))


def quiet() -> bool:
    """Whether ``tablefmt -q`` was given (no progress, no reports of what a command did; data and errors only)."""
    context = click.get_current_context(silent=True)
    if context is None:
        return False
    obj = context.find_root().obj
    return bool(isinstance(obj, dict) and obj.get("quiet"))


def say(message: str = "") -> None:
    """Print a line reporting what a command did (suppressed by ``-q``)."""
    if not quiet():
        click.echo(message)


def dry_run_data(paths: Sequence[str]) -> None:
    """Under ``-q``: a dry run's list is data, printed whole, one path per line (relative to the table root)."""
    if quiet():
        for path in paths:
            click.echo(path)


@contextmanager
def progress(label: str) -> Iterator[Activity | None]:
    """A progress line for a long command (on a terminal, unless -q); see tableformat.cli.progress."""
    with activity(label, enabled=not quiet()) as current:
        yield current


def one_line(exc: BaseException) -> str:
    """An exception as one line, without credentials-bearing reprs."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


_JSON_ERRORS: ContextVar[bool] = ContextVar("tablefmt_json_errors", default=False)
"""Whether the command line asked for --json: errors are then a JSON object on stdout too."""


def fail(message: str, exit_code: int, kind: str = "Error") -> NoReturn:
    """End the command with ``exit_code`` after one line ``error: MESSAGE`` on stderr; with ``--json`` stdout also
    gets the error as one JSON object ``{"error": MESSAGE, "kind": KIND}`` (``kind``: the error's class, e.g.
    ValidationError, or UsageError for a bad command line), so a program reading stdout always gets JSON."""
    text = " ".join(message.split())
    if _JSON_ERRORS.get():
        click.echo(json.dumps({"error": text, "kind": kind}))
    click.echo(f"error: {text}", err=True)
    raise click.exceptions.Exit(exit_code)


def reader_went_away() -> NoReturn:
    """The reader of stdout closed it (``tablefmt ... | head -1``): end with exit 0 and no error line, whatever
    was left to print (the command's work is done or stopped; the reader chose to stop reading). stdout is pointed
    at /dev/null first, so flushing it at exit cannot fail again and turn the status into 120."""
    silence_stdout()
    raise click.exceptions.Exit(0)


def silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null (after the reader closed the pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real descriptor (a test runner's capture): nothing to flush later
        pass


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
        fail(exc.format_message(), exc.exit_code, "UsageError" if exc.exit_code == 2 else type(exc).__name__)
    except click.Abort:
        fail("aborted", 1, "Aborted")
    except BrokenPipeError:
        reader_went_away()
    except ArgumentError as exc:  # arguments are checked before any work: a usage error, in the CLI's words
        fail(exc.command_line(), 2, "UsageError")
    except (TableFormatError, OSError, ValueError) as exc:
        fail(one_line(exc), 1, type(exc).__name__)
    except Exception as exc:
        log.debug("unexpected error", exc_info=True)
        fail(f"unexpected {type(exc).__name__}: {one_line(exc)} (tablefmt -vv logs the traceback)", 1, "InternalError")


class _OneLineErrors:
    """Parse and run errors of a click command or group as one line (also when invoked alone, not via the group)."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        asked = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
        _JSON_ERRORS.set(asked or (parent is not None and _JSON_ERRORS.get()))
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

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """The top group takes ``-q``/``--quiet`` anywhere before ``--``: ``tablefmt expire T -q`` as ``tablefmt -q
        expire T`` (no subcommand has a -q of its own)."""
        if ctx.parent is None:
            end = args.index("--") if "--" in args else len(args)
            quiet_flags = [a for a in args[:end] if a in QUIET_FLAGS]
            if quiet_flags:
                args = ["-q"] + [a for a in args[:end] if a not in QUIET_FLAGS] + args[end:]
        return super().parse_args(ctx, args)


QUIET_FLAGS = ("-q", "--quiet")


def handle_errors(func: F) -> F:
    """Turn errors of a command callback into one line (exit 2 for usage errors, 1 otherwise; never a traceback)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def duration_flag(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Option callback: a duration (``30s``, ``15 min``, ``1 h``, ``1h30m``, ``1.5h``, ``7d``) as milliseconds,
    0 ms to 36500 d (tableformat.durations.MAX_DURATION_MS); anything else is a usage error."""
    if value is None:
        return None
    if value.strip().startswith("-"):
        raise click.BadParameter(f"must not be negative, got {value!r}", param=param)
    try:
        millis = parse_duration_ms(value)
    except ValidationError as exc:
        raise click.BadParameter(str(exc), param=param) from None
    if millis > MAX_DURATION_MS:
        raise click.BadParameter(f"must be {duration_range()}, got {value!r}", param=param)
    return millis
