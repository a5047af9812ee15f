"""Thread pools for maintenance: how many threads, and an executor that runs inline when one is enough.

On the local filesystem, metadata reads come from the page cache and decoding them is CPU work that holds the GIL:
threads there make a run slower (each result costs a thread switch), so unless asked for a thread count, work on a
FileIO that is not ``latency_bound`` runs inline in the calling thread. On object stores every call waits on the
network and ``file-operation.thread-num`` threads overlap those waits.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from tableformat.errors import ValidationError
from tableformat.io.fileio import FileIO
from tableformat.options import FILE_OPERATION_THREAD_NUM, TableOptions

T = TypeVar("T")


class InlineExecutor(Executor):
    """Runs each submitted call at once in the caller's thread and returns its completed future."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # the future carries it, as a thread pool's would
            future.set_exception(exc)
        return future


def resolve_parallelism(options: TableOptions, file_io: FileIO, parallelism: int | None) -> int:
    """Threads for metadata reads: the argument; else file-operation.thread-num when the table sets it or the
    storage is latency-bound; else 1 (inline)."""
    if parallelism is None:
        explicit = FILE_OPERATION_THREAD_NUM.key in options.raw
        parallelism = options.require(FILE_OPERATION_THREAD_NUM) if explicit or file_io.latency_bound else 1
    return _checked(parallelism)


def resolve_delete_parallelism(options: TableOptions, parallelism: int | None) -> int:
    """Threads for deletes: the argument, else file-operation.thread-num. Deleting waits on the store everywhere (a
    local unlink of a file already on disk is a journal update, and releases the GIL), so threads pay off even on
    local disk."""
    return _checked(options.require(FILE_OPERATION_THREAD_NUM) if parallelism is None else parallelism)


def _checked(parallelism: object) -> int:
    if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
        raise ValidationError(f"parallelism must be a positive integer, got {parallelism!r}")
    return parallelism


def executor(workers: int, name: str) -> Executor:
    """A context-managed executor: inline for one worker, else a thread pool named ``name``."""
    if workers <= 1:
        return InlineExecutor()
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
