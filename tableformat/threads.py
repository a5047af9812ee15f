"""The one place thread pools are made: every pool tablefmt starts (reads, deletes, syncs, S3 requests, maintained
tables) is a ``thread_pool`` with a name prefix, or an ``InlineExecutor`` when one worker is enough. How many
threads a piece of work uses is decided in :mod:`tableformat.parallel` (and by its callers below it); the
import-rule test holds that no other module builds a ThreadPoolExecutor."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def thread_pool(workers: int, name: str) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads named ``name-<n>`` (a context manager: leaving it waits for every call)."""
    return ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix=name)


class InlineExecutor(Executor):
    """Runs each submitted call at once in the caller's thread and returns its completed future."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the future carries it, as a thread pool's would
            future.set_exception(exc)
        return future
