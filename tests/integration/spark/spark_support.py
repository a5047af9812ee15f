"""Helpers for the Spark tests, and a fault-injecting variant of the tablefmt data source.

``FaultySource`` (format ``tablefmt_faulty``) is the real source with one extra write option, ``fault``:

* ``task-once``: task 0 fails on its first attempt after having written files, and succeeds when retried;
* ``task-always``: task 0 fails on every attempt (the job fails); its first attempt fails only once the other task
  has written its files and returned (Spark fails the job at task 0's last failure without waiting for running
  tasks: a task still writing then would leave files that neither it nor abort() knows of);
* ``after-commit``: commit() raises after the snapshot landed (Spark then calls abort()).

Failing attempts touch a file in ``fault.marker-dir`` so tests can see the failure really happened. The module is
pickled by value (Spark's workers cannot import test modules).
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.cloudpickle import register_pickle_by_value
from pyspark.sql.datasource import DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType
from support.tables import files_under

from tableformat.spark.datasource import TablefmtDataSource
from tableformat.spark.writer import TablefmtCommitMessage, TablefmtWriter, WritePlan

FAILING_BATCH = 2
"""The injected failure hits when the task asks for this batch (0-based), after earlier batches were flushed."""


def data_files_on_disk(table_dir: str) -> set[str]:
    """Every Parquet data file under a local table directory (not the audit ledger's records)."""
    return {os.path.join(table_dir, rel) for rel in files_under(table_dir) if rel.endswith(".parquet")}


def rows(df: Any) -> list[tuple[Any, ...]]:
    """A DataFrame's rows as sorted tuples."""
    return sorted(tuple(r) for r in df.collect())


TASK_DONE = "task-done-{}"
"""Marker a task of a ``task-always`` job other than task 0 writes once its write has returned."""

WAIT_S = 120


def _await_marker(path: str) -> None:
    """Return once ``path`` exists (another task has finished); fail after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} did not appear within {WAIT_S} s")
        time.sleep(0.01)  # poll interval: the wait ends on the marker, not on a time


def _fail_at(
    iterator: Iterator[pa.RecordBatch], index: int, marker: str, awaited: str | None
) -> Iterator[pa.RecordBatch]:
    for position, batch in enumerate(iterator):
        if position == index:
            if awaited is not None:
                _await_marker(awaited)
            with open(marker, "w") as handle:
                handle.write("failed\n")
            raise RuntimeError("injected task failure")
        yield batch


class FaultyWriter(TablefmtWriter):
    def __init__(self, plan: WritePlan, fault: str, marker_dir: str) -> None:
        super().__init__(plan)
        self.fault = fault
        self.marker_dir = marker_dir

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TablefmtCommitMessage:
        context = TaskContext.get()
        assert context is not None
        first_task = context.partitionId() == 0
        failing = (self.fault == "task-once" and context.attemptNumber() == 0) or self.fault == "task-always"
        always = self.fault == "task-always"
        if first_task and failing:
            marker = os.path.join(self.marker_dir, f"task-failure-{context.attemptNumber()}-{uuid.uuid4().hex}")
            first_attempt = always and context.attemptNumber() == 0
            awaited = os.path.join(self.marker_dir, TASK_DONE.format(1)) if first_attempt else None
            iterator = _fail_at(iterator, FAILING_BATCH, marker, awaited)
        message = super().write(iterator)
        if always and not first_task:
            open(os.path.join(self.marker_dir, TASK_DONE.format(context.partitionId())), "w").close()
        return message

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        super().commit(messages)
        if self.fault == "after-commit":
            open(os.path.join(self.marker_dir, "after-commit"), "w").close()
            raise RuntimeError("injected failure after the snapshot landed")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        open(os.path.join(self.marker_dir, f"abort-{uuid.uuid4().hex}"), "w").close()
        super().abort(messages)


class FaultySource(TablefmtDataSource):
    @classmethod
    def name(cls) -> str:
        return "tablefmt_faulty"

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        fault = self.options.pop("fault")
        marker_dir = self.options.pop("fault.marker-dir")
        base = super().writer(schema, overwrite)
        assert isinstance(base, TablefmtWriter)
        return FaultyWriter(base.plan, fault, marker_dir)


register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]
