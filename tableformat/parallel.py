"""How many threads a piece of work uses (the pools themselves come from tableformat/threads.py), an executor that
runs inline when one is enough, an ordered map with a bounded number of calls in flight (bounded_map), and a lazily
started pool for a whole run (Workers).

On the local filesystem, metadata reads come from the page cache and decoding them is CPU work that holds the GIL:
threads there make a run slower (each result costs a thread switch), so unless asked for a thread count, work on a
FileIO that is not ``latency_bound`` runs inline in the calling thread. On object stores every call waits on the
network and ``file-operation.thread-num`` threads overlap those waits.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

from tableformat.errors import ValidationError
from tableformat.io.fileio import FileIO
from tableformat.options import FILE_OPERATION_THREAD_NUM, TableOptions
from tableformat.threads import InlineExecutor, thread_pool

T = TypeVar("T")
R = TypeVar("R")

READ_CHUNK = 16
"""Metadata files read per pool task when reading in parallel (one file per task costs more than it saves)."""


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
    return thread_pool(workers, name)


def bounded_map(pool: Executor, fn: Callable[[T], R], items: Iterable[T], window: int) -> Iterator[tuple[T, R]]:
    """(item, fn(item)) in input order with at most ``window`` calls in flight (bounded memory)."""
    if isinstance(pool, InlineExecutor):  # no futures needed (and no lookahead: the same order of calls)
        for item in items:
            yield item, fn(item)
        return
    pending: deque[tuple[T, Future[R]]] = deque()
    for item in items:
        pending.append((item, pool.submit(fn, item)))
        if len(pending) >= window:
            first, future = pending.popleft()
            yield first, future.result()
    while pending:
        first, future = pending.popleft()
        yield first, future.result()


class Workers:
    """One thread pool for a whole expiration run: threads start once (lazily), not per batch of work."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, in parallel when worthwhile (in order; the first exception propagates)."""
        if len(items) <= 1 or self.threads <= 1:
            return [fn(item) for item in items]
        return list(self._started().map(fn, items))

    def submit(self, fn: Callable[..., R], /, *args: Any) -> Future[R]:
        """Run ``fn(*args)`` on the pool (inline with one thread): for work whose follow-up reads are submitted as
        each result arrives. A task may submit more tasks; no task may wait on another's future."""
        if self.threads <= 1:
            return InlineExecutor().submit(fn, *args)
        return self._started().submit(fn, *args)

    def _started(self) -> ThreadPoolExecutor:
        """The run's pool, started on first use."""
        if self._pool is None:
            self._pool = thread_pool(self.threads, "tablefmt-expire")
        return self._pool

    def map_chunked(self, fn: Callable[[T], R], items: Sequence[T], chunk: int = READ_CHUNK) -> list[R]:
        """``map`` with ``chunk`` items per pool task (cheap calls: a task per item costs more than the call)."""
        if len(items) <= chunk or self.threads <= 1:
            return [fn(item) for item in items]
        size = max(1, min(chunk, -(-len(items) // self.threads)))
        parts = [items[i : i + size] for i in range(0, len(items), size)]
        done = self.map(lambda part: [fn(item) for item in part], parts)
        return [result for part in done for result in part]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
