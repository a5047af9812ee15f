"""Batch writes: executors write Parquet data files, the driver commits them as exactly one snapshot.

Failure rules (pyspark runs ``commit()`` and ``abort()`` in a separate Python worker on the driver host, each
with a freshly unpickled writer, so nothing is remembered between them):

* a task that fails removes the files it wrote, then re-raises (Spark never cleans up after a task);
* ``commit()`` commits one snapshot under this job's own commit user. If the commit fails for sure (CommitError,
  ValidationError, or the table cannot even be opened) and no snapshot of this job exists, it removes the job's
  files before re-raising. After an ambiguous snapshot write (CommitStateUnknownError) or any other error it
  removes nothing: a snapshot referencing the files may exist or still appear;
* ``abort()`` runs when a task failed for good (some messages are None: commit() never ran) or when commit()
  raised (every message is present: commit() already cleaned up what it safely could). It deletes files only in the
  first case, and only after checking that no snapshot carries this job's commit user;
* maintenance after the commit (expiration) runs inside Table.commit_files and never raises.

Anything left behind (a killed worker, a speculative attempt that lost) is an orphan for remove_orphan_files.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from tableformat.commit.committer import read_commit_log
from tableformat.commit.data_writer import NewDataFile
from tableformat.commit.uncommitted import discard_uncommitted
from tableformat.errors import CommitError, ValidationError
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileIO
from tableformat.live_set import PartitionPredicate
from tableformat.spark.schema import normalise_timestamps
from tableformat.spark.worker_gc import freeze_worker_heap
from tableformat.table import Table

log = logging.getLogger(__name__)

COMMIT_IDENTIFIER = 1
"""Every job has its own commit user, so its one commit is identifier 1."""

RECENT_SNAPSHOTS_CHECKED = 10
"""Besides the latest snapshot's commit log, abort looks at this many newest snapshots for the job's commit user."""


@dataclass(frozen=True, slots=True)
class TablefmtCommitMessage(WriterCommitMessage):
    """What one successful task wrote."""

    files: tuple[NewDataFile, ...] = ()
    rows: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class WritePlan:
    """Everything a write needs, fixed on the driver at planning time (pickled to executors and the commit worker).

    ``renames`` maps DataFrame column names to table column names; ``fill`` adds constant columns (partition
    columns the static partition spec names but the DataFrame lacks).
    """

    location: str
    storage_options: Mapping[str, Any]
    overwrite: bool
    static_partition: Mapping[str, str] | None
    static_values: Mapping[str, Any] | None
    dynamic: bool | None
    renames: Mapping[str, str]
    fill: Mapping[str, tuple[Any, pa.DataType]]
    buffer_bytes: int
    buffer_rows: int
    commit_user: str = field(default_factory=lambda: f"spark-{uuid.uuid4()}")

    @property
    def mode(self) -> str:
        return "overwrite" if self.overwrite else "append"


class TablefmtWriter(DataSourceArrowWriter):
    """The writer Spark pickles to every task and to the commit worker."""

    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    # --- executors -------------------------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> TablefmtCommitMessage:
        freeze_worker_heap()  # once per executor worker: pyspark's collection after each task skips the imports
        plan = self.plan
        table = Table.open(plan.location, plan.storage_options)
        written: list[NewDataFile] = []
        buffer: list[pa.RecordBatch] = []
        buffered_rows = buffered_bytes = total_rows = 0
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                prepared = self._prepare(batch)
                buffer.append(prepared)
                buffered_rows += prepared.num_rows
                buffered_bytes += prepared.nbytes
                if buffered_bytes >= plan.buffer_bytes or buffered_rows >= plan.buffer_rows:
                    self._flush(table, buffer, written)
                    total_rows += buffered_rows
                    buffer, buffered_rows, buffered_bytes = [], 0, 0
            if buffer:
                self._flush(table, buffer, written)
                total_rows += buffered_rows
        except BaseException:
            remove_files(table.context.io, plan, written, "a failed write task")
            raise
        return TablefmtCommitMessage(files=tuple(written), rows=total_rows)

    def _prepare(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        plan = self.plan
        batch = normalise_timestamps(batch)
        if plan.renames:
            batch = batch.rename_columns([plan.renames.get(n, n) for n in batch.schema.names])
        for name, (value, arrow_type) in plan.fill.items():
            batch = batch.append_column(name, pa.array([value] * batch.num_rows, type=arrow_type))
        return batch

    def _flush(self, table: Table, buffer: Sequence[pa.RecordBatch], written: list[NewDataFile]) -> None:
        files = table.write_files(pa.Table.from_batches(buffer))
        written.extend(files)
        values = self.plan.static_values
        if values is not None:
            predicate = PartitionPredicate((values,))
            keys = table.partition_keys
            for new_file in files:
                row = dict(zip(keys, new_file.partition_values))
                if not predicate.matches(row):
                    raise ValidationError(
                        f"data for partition {row} is outside the overwritten partition "
                        f"{dict(self.plan.static_partition or {})}"
                    )

    # --- driver: commit / abort ------------------------------------------------------------------------------
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        plan = self.plan
        files = files_of(messages)
        try:
            table = Table.open(plan.location, plan.storage_options)
        except BaseException:
            remove_files(None, plan, files, "a job whose commit could not start")
            raise
        try:
            snapshot = table.commit_files(
                files,
                mode=plan.mode,
                partition=dict(plan.static_partition) if plan.static_partition is not None else None,
                dynamic=plan.dynamic if plan.overwrite else None,
                commit_user=plan.commit_user,
                commit_identifier=COMMIT_IDENTIFIER,
            )
        except (CommitError, ValidationError):
            # definite failures: nothing this commit prepared is referenced, unless a snapshot of this job exists
            landed = job_committed(table, plan.commit_user)
            if landed is False:
                remove_files(table.context.io, plan, files, "a failed commit")
            else:
                log.error("tablefmt: commit %s failed but may have landed; keeping its files", plan.commit_user)
            raise
        except BaseException:
            # an ambiguous outcome (CommitStateUnknownError) or an unexpected error: a snapshot referencing these
            # files may exist or still appear, so keep them; orphan cleanup removes them if none does
            log.error(
                "tablefmt: the commit of %d file(s) to %s (commit user %s) ended without a definite result; "
                "keeping every file",
                len(files),
                plan.location,
                plan.commit_user,
            )
            raise
        if snapshot is None:
            log.info("tablefmt: nothing to commit to %s (no rows, nothing replaced)", plan.location)
        else:
            log.info("tablefmt: committed snapshot %d to %s (%d file(s))", snapshot.id, plan.location, len(files))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        plan = self.plan
        files = files_of(messages)
        if not files:
            return
        if all(m is not None for m in messages):
            log.warning(
                "tablefmt: job aborted after every task succeeded (the commit failed); commit() removed what it "
                "safely could; leaving %d file(s) of %s for orphan cleanup",
                len(files),
                plan.commit_user,
            )
            return
        try:
            table = Table.open(plan.location, plan.storage_options)
        except Exception as exc:  # cannot check: keep the files, orphan cleanup takes them later
            log.error("tablefmt: abort cannot open %s (%s); leaving %d file(s)", plan.location, exc, len(files))
            return
        landed = job_committed(table, plan.commit_user)
        if landed is not False:
            log.error("tablefmt: abort found %s committed or undecidable; leaving its files", plan.commit_user)
            return
        remove_files(table.context.io, plan, files, "an aborted job")


def files_of(messages: Sequence[WriterCommitMessage | None]) -> list[NewDataFile]:
    """Every file the successful tasks report."""
    result: list[NewDataFile] = []
    for message in messages:
        if isinstance(message, TablefmtCommitMessage):
            result.extend(message.files)
    return result


def job_committed(table: Table, commit_user: str) -> bool | None:
    """True if a snapshot of ``commit_user`` exists, False if none does, None when that cannot be read."""
    try:
        latest = table.latest_snapshot()
        if latest is None:
            return False
        if commit_user in read_commit_log(latest):
            return True
        store = table.context.store
        for snapshot_id in store.snapshot_ids()[-RECENT_SNAPSHOTS_CHECKED:]:
            snapshot = store.try_read_snapshot(snapshot_id)
            if snapshot is not None and snapshot.commit_user == commit_user:
                return True
    except Exception as exc:
        log.warning("tablefmt: cannot read the snapshots of %s: %s", table.location, exc)
        return None
    return False


def remove_files(file_io: FileIO | None, plan: WritePlan, files: Sequence[NewDataFile], why: str) -> None:
    """Delete uncommitted data files; failures are logged (the files become orphans), never raised."""
    if not files:
        return
    try:
        if file_io is None:
            file_io = open_location(plan.location, dict(plan.storage_options))[0]
    except Exception as exc:
        log.warning("tablefmt: could not remove %d data file(s) of %s: %s", len(files), why, exc)
        return
    discard_uncommitted(file_io, [f.path for f in files], f"data file(s) of {why}")
