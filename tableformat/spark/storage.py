"""A FileIO that sends a maintenance run's bulk storage calls to Spark's executors.

``ExecutorAssistedFileIO`` wraps a table's FileIO for one maintenance run:

* ``list_dir`` answers from a listing the executors made beforehand (:func:`prelist_table`), each directory once;
  a directory that was not pre-listed, or is listed a second time, is listed by the wrapped FileIO on the driver;
* ``delete_files`` runs each batch as a one-task Spark job on an executor, with the same results and errors as the
  wrapped FileIO's ``delete_files``;
* everything else (metadata reads, existence checks, empty-directory removal) goes to the wrapped FileIO.

Maintenance code written for any FileIO (tableformat.cleanup) then runs unchanged, with the same rules, while the
listing and deleting happen on the cluster. Serving each pre-listed directory once keeps the order the cleaners
rely on: the census sees the (earlier) executor listing; anything that lists again later sees the store itself.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pyspark import SparkContext

from tableformat.errors import DeleteFailedError, StorageError
from tableformat.io.fileio import DistributedMap, FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.layout import BUCKET_PREFIX, TABLE_DIRS

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

_ROOT_DIRS = TABLE_DIRS


def spark_map(sc: SparkContext, fn: Callable[[T], R], items: Sequence[T], slices: int, description: str) -> list[R]:
    """``[fn(item) for item in items]`` computed by Spark tasks (at most ``slices`` per job), in input order."""
    if not items:
        return []
    sc.setJobDescription(f"{description} ({len(items)} item(s))")
    try:
        return sc.parallelize(list(items), max(1, min(len(items), slices))).map(fn).collect()
    finally:
        sc.setJobDescription(None)  # type: ignore[arg-type]


_PYTHON_ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$", re.MULTILINE)


def spark_failure(exc: BaseException) -> str:
    """One line for a failed Spark job: the Python error an executor raised (its last ``XError: message`` line, e.g.
    ``ModuleNotFoundError: No module named 'tableformat'`` when the executors' Python lacks tablefmt), else the
    start of Spark's message."""
    text = str(exc)
    found = _PYTHON_ERROR.findall(text.split("\n\tat ")[0])
    if found:
        kind, message = found[-1]
        return f"{kind}: {message.strip()}"[:500]
    return " ".join(text.split())[:500]


def _descend(parent_kind: str, name: str) -> str | None:
    """The kind of a subdirectory worth pre-listing, or None. A superset of what the orphan census enters."""
    if parent_kind in ("root", "branch"):
        if name in _ROOT_DIRS:
            return "branches" if name == "branch" and parent_kind == "root" else "leaf"
        return "partition" if parent_kind == "root" and "=" in name else None
    if parent_kind == "branches":
        return "branch" if name.startswith("branch-") else None
    if parent_kind == "partition":
        if "=" in name:
            return "partition"
        return "leaf" if name.startswith(BUCKET_PREFIX) else None
    return None


def prelist_table(sc: SparkContext, file_io: FileIO, root: str, slices: int) -> dict[str, list[FileInfo]]:
    """List a table's own directories on executors, one Spark job per directory level."""
    listings: dict[str, list[FileInfo]] = {}
    frontier: list[tuple[str, str]] = [(root, "root")]
    level = 0
    while frontier:

        def list_one(item: tuple[str, str]) -> tuple[str, str, list[FileInfo]]:
            return item[0], item[1], file_io.list_dir(item[0])

        results = spark_map(sc, list_one, frontier, slices, f"tablefmt: list level {level} of {file_io.url(root)}")
        frontier = []
        for path, kind, entries in results:
            listings[path] = entries
            for entry in entries:
                child = _descend(kind, entry.name) if entry.is_dir else None
                if child is not None:
                    frontier.append((entry.path, child))
        level += 1
    return listings


def _delete_on_executor(file_io: FileIO) -> Callable[[list[str]], tuple[list[str], list[str], str, bool]]:
    def delete(paths: list[str]) -> tuple[list[str], list[str], str, bool]:
        try:
            return file_io.delete_files(paths), [], "", False
        except DeleteFailedError as exc:
            return list(exc.deleted), list(exc.failed), str(exc), False
        except OSError as exc:
            return [], [], f"{type(exc).__name__}: {exc}", True

    return delete


class ExecutorAssistedFileIO(ForwardingFileIO):
    """Wraps a FileIO: pre-listed directories are served once, deletes run on executors (see the module doc)."""

    def __init__(self, inner: FileIO, sc: SparkContext, listings: dict[str, list[FileInfo]], slices: int) -> None:
        super().__init__(inner)
        self.sc = sc
        self._listings = listings
        self._lock = threading.Lock()
        self.slices = max(1, slices)
        """Spark tasks per job of :meth:`distributed_map`."""
        self.served = 0
        self.listed_on_driver = 0
        self.delete_jobs = 0
        self.mapped_on_executors = 0
        """Items (manifests) :meth:`distributed_map` ran on executors."""

    def distributed_map(self) -> DistributedMap:
        """Work over many files on the executors: jobs of ``4 x slices`` items, each spread over ``slices`` tasks,
        their results collected in order (the driver holds one job's results at a time)."""
        return self._on_executors

    def _on_executors(self, fn: Callable[[FileIO, Any], Any], items: Sequence[Any], description: str) -> Iterator[Any]:
        inner, batch = self.inner, 4 * self.slices

        def task(item: Any) -> Any:
            return fn(inner, item)

        for start in range(0, len(items), batch):
            chunk = items[start : start + batch]
            try:
                results = spark_map(self.sc, task, chunk, self.slices, f"tablefmt: {description}")
            except Exception as exc:  # an unreadable file, or the job itself failed: nothing is judged from it
                raise StorageError(f"{description} on executors failed: {spark_failure(exc)}") from exc
            with self._lock:
                self.mapped_on_executors += len(chunk)
            yield from results

    # --- the two calls that go to the cluster ----------------------------------------------------------------
    def list_dir(self, path: str) -> list[FileInfo]:
        with self._lock:
            entries = self._listings.pop(path, None)
            if entries is not None:
                self.served += 1
            else:
                self.listed_on_driver += 1
        return entries if entries is not None else self.inner.list_dir(path)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        if not paths:
            return []
        if len(paths) == 1:  # one file (a run's claim, a journal): the driver deletes it, no job for it
            return self.inner.delete_files(paths)
        with self._lock:
            self.delete_jobs += 1
        try:
            [(deleted, failed, message, os_error)] = spark_map(
                self.sc, _delete_on_executor(self.inner), [list(paths)], 1, f"tablefmt: delete {len(paths)} file(s)"
            )
        except Exception as exc:  # the Spark job itself failed: report the batch as failed, like an OSError
            raise StorageError(f"delete job for {len(paths)} file(s) failed: {spark_failure(exc)}") from exc
        if os_error:
            raise StorageError(message)
        if failed:
            raise DeleteFailedError(message, deleted, failed)
        return deleted
