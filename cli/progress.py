"""Progress on a terminal: a live line on stderr showing what a long command is doing (storage listings, reads,
deletes, and a bar where the total is known), with log records printed above it, never through it.

The counts come from the table's own FileIO, wrapped for the command (:class:`CountingFileIO`): every listing
(S3 included), metadata read and delete the command makes ticks the line, whatever operation runs. Nothing is shown
when stderr is not a terminal (cron, pipes, CI) or with ``-q``.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO

if TYPE_CHECKING:  # rich is imported when a progress line shows (never under cron)
    from rich.console import Console
    from rich.progress import Progress, TaskID


class Activity:
    """The live line of one command: counters of storage calls and an optional determinate bar."""

    def __init__(self, progress: Progress | None, task: TaskID | None) -> None:
        self._progress = progress
        self._task = task
        self._lock = threading.Lock()
        self.counts = {"listings": 0, "reads": 0, "writes": 0, "deletes": 0}

    def count(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self.counts[kind] += n
            status = ", ".join(f"{v:,} {k}" for k, v in self.counts.items() if v)
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, status=status)

    def advance(self, done: int, total: int) -> None:
        """A determinate step (e.g. expiration's deletes): ``done`` of ``total``."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=done, total=max(total, 1))


class CountingFileIO(ForwardingFileIO):
    """The table's FileIO, counting calls into an Activity."""

    def __init__(self, inner: FileIO, activity: Activity) -> None:
        super().__init__(inner)
        self.activity = activity

    def read_bytes(self, path: str) -> bytes:
        self.activity.count("reads")
        return self.inner.read_bytes(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.activity.count("writes")
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self.activity.count("writes")
        return self.inner.write_if_absent(path, data)

    def list_dir(self, path: str) -> list[FileInfo]:
        self.activity.count("listings")
        return self.inner.list_dir(path)

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        self.activity.count("listings")
        return self.inner.list_dir_without_file_stats(path)

    def list_names(self, path: str) -> list[str]:
        self.activity.count("listings")
        return self.inner.list_names(path)

    def walk_files(self, path: str) -> Iterator[FileInfo]:
        self.activity.count("listings")
        return self.inner.walk_files(path)

    def list_subtree(self, path: str) -> list[FileInfo]:
        self.activity.count("listings")
        return self.inner.list_subtree(path)

    def list_subtree_range(self, path: str, first: str, last: str) -> list[FileInfo]:
        self.activity.count("listings")
        return self.inner.list_subtree_range(path, first, last)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        deleted = self.inner.delete_files(paths)
        self.activity.count("deletes", len(deleted))
        return deleted

    def open_input(self, path: str) -> IO[bytes]:
        self.activity.count("reads")
        return self.inner.open_input(path)


class _ConsoleHandler(logging.Handler):
    """Log records printed through the progress line's console: each one a whole line above the live line, in the
    format the command's usual stderr handler uses."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.console.print(self.format(record), soft_wrap=True, markup=False, highlight=False, emoji=False)
        except Exception:  # a log line must never end the command
            self.handleError(record)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def activity(label: str, *, enabled: bool = True, force_terminal: bool | None = None) -> Iterator[Activity | None]:
    """A live progress line on stderr for the duration of the block (None when stderr is no terminal or
    ``enabled`` is False). Log records are routed through the same console while it shows, so a warning prints as
    its own line above the progress line instead of being cut into it."""
    terminal = _stderr_is_terminal() if force_terminal is None else force_terminal
    if not enabled or not terminal:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr, force_terminal=True, stderr=True)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    root = logging.getLogger()
    saved = root.handlers[:]
    handler = _ConsoleHandler(console)
    if saved:
        handler.setLevel(saved[0].level)
        handler.setFormatter(saved[0].formatter or logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.handlers = [handler]
    try:
        with progress:
            task = progress.add_task(label, total=None, status="starting")
            yield Activity(progress, task)
    finally:
        root.handlers = saved


def counting(file_io: FileIO, current: Activity | None) -> FileIO:
    """``file_io`` wrapped to feed ``current`` (unchanged when there is no progress line)."""
    return file_io if current is None else CountingFileIO(file_io, current)


def progress_callback(current: Activity | None) -> Any:
    """Expiration's ``progress(done, total)`` callback feeding the line (None without one)."""
    return None if current is None else current.advance
