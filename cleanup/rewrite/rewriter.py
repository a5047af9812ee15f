"""The one rewriter of compaction and record-level TTL: live data files in, new data files out, swapped in one
guarded commit per batch.

Each :class:`RewriteUnit` is a group of live files of one partition and bucket. Their rows are streamed (a few
tens of thousands at a time, expired rows dropped when a TTL is given, files the TTL says are fully expired not
even opened) into new files of about the target size, in input order; the units of a batch are written on up to
one thread per core. A batch of units is then committed as ONE
snapshot through the Committer's REPLACE (DELETE entries of exactly the replaced files + ADD entries of the new
files). The commit is guarded: if a replaced file is no longer live (a concurrent compaction, expiry, overwrite
or partition drop took it), the units that need it are abandoned, their new files removed, and the others are
committed again; rows a concurrent writer appended are never touched. A failure before the commit removes every
file the batch wrote; an unknown commit outcome keeps them (the snapshot may reference them). A planned file found
missing after the snapshots it was known live in were expired is a lost race (:mod:`.races`): the batch's files
are removed and SnapshotExpiredWhileReadingError tells the caller to plan again (then :meth:`Rewriter.rebase`). A
commit whose snapshot id had been taken and expired while it was prepared is made again (G2b).

Metadata-only drops (files whose every row is expired) use the same guarded REPLACE without new files.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, wait
from dataclasses import dataclass, field
from typing import Any

from tableformat.commit.committer import ChangeKind, CommitRequest, CommitResult, Committer
from tableformat.commit.data_writer import NewDataFile, kept_dictionary_columns
from tableformat.commit.rolling_writer import RollingFileWriter
from tableformat.commit.uncommitted import discard_uncommitted
from tableformat.context import TableContext
from tableformat.errors import CommitConflictError, CommitStateUnknownError
from tableformat.layout import NameFactory
from tableformat.model.manifest import ManifestEntry
from tableformat.model.snapshot import CommitKind
from tableformat.scan.reader import DataReader
from tableformat.scan.record_ttl import RecordTTL
from tableformat.threads import thread_pool

from .races import MISSING_FILE_ERRORS, REPLANS, raise_if_expired

log = logging.getLogger(__name__)

BATCH_ROWS = 65_536
"""Rows read from an old file at a time."""
MAX_WRITERS = 4
"""Units rewritten at once at most (and no more than the cores): each holds up to one new file's bytes and a row
group in memory."""
PARALLEL_ROWS_PER_FILE = 10_000
"""Units are written at once only when their files average this many rows: a file of fewer is read mostly in
Python, under the GIL, and threads cost more than they save (compacting files of 20 rows: 20 % more CPU)."""


@dataclass(frozen=True, slots=True)
class RewriteUnit:
    """Live files of one partition and bucket that become new files together (rows kept in this order)."""

    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[ManifestEntry, ...]

    @property
    def bytes(self) -> int:
        return sum(e.file.file_size for e in self.files)

    @property
    def rows(self) -> int:
        return sum(e.file.row_count for e in self.files)


@dataclass(slots=True)
class RewriteOutcome:
    """What the batches of one run committed (and what they gave up)."""

    snapshot_ids: list[int] = field(default_factory=list)
    replaced: list[ManifestEntry] = field(default_factory=list)
    written: list[NewDataFile] = field(default_factory=list)
    rows_in: int = 0
    rows_out: int = 0
    units: int = 0
    """Units committed."""
    abandoned: list[tuple[RewriteUnit, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitSettings:
    """How a run's commits look: who commits, which snapshot kind, which properties."""

    commit_user: str
    snapshot_kind: CommitKind
    properties: Mapping[str, str] = field(default_factory=dict)


class Rewriter:
    """Rewrites units of one table in guarded batches (see the module docs)."""

    def __init__(
        self,
        ctx: TableContext,
        ttl: RecordTTL | None,
        target_size: int,
        settings: CommitSettings,
        base_snapshot_id: int | None = None,
        *,
        keep_rows: Callable[[Any], Any] | None = None,
    ) -> None:
        self.ctx = ctx
        self.keep_rows = keep_rows
        """Applied to every batch read (a ``pyarrow.Table`` in, the rows to write again out): erasure drops the rows
        it matches here. None = every row the TTL keeps."""
        self.planned = base_snapshot_id
        """The snapshot the files to replace were planned on."""
        self.live_in = base_snapshot_id
        """A snapshot in which every file still to be replaced is live (the plan's, then each own commit's)."""
        self.ttl = ttl
        self.target_size = target_size
        self.settings = settings
        self.schema = ctx.store.latest_schema()
        self.reader = DataReader(
            ctx.io, ctx.layout, self.schema, ctx.schema_by_id, ctx.partition_codec(), threads=1, record_ttl=ttl
        )
        self.codec = ctx.partition_codec()
        self._identifiers = iter(range(1, 2**62))

    def rebase(self, base_snapshot_id: int | None) -> None:
        """The files to replace from now on were planned on ``base_snapshot_id`` (a new plan after a lost race)."""
        self.planned = self.live_in = base_snapshot_id

    # --- metadata-only drops -----------------------------------------------------------------------------------
    def drop(self, files: Sequence[ManifestEntry], outcome: RewriteOutcome) -> None:
        """Mark ``files`` deleted in one snapshot; files no longer live are left out (someone else removed them)."""
        pending = list(files)
        while pending:
            result = self._commit(pending, ())
            if result.missing_files:
                gone = {e.identifier() for e in result.missing_files}
                pending = [e for e in pending if e.identifier() not in gone]
                continue
            if result.created and result.snapshot is not None:
                outcome.snapshot_ids.append(result.snapshot.id)
                outcome.replaced.extend(pending)
            return

    # --- rewrites ----------------------------------------------------------------------------------------------
    def rewrite(self, units: Sequence[RewriteUnit], outcome: RewriteOutcome) -> None:
        """Write every unit's new files, then commit them as one snapshot (re-committing without units whose
        files vanished meanwhile)."""
        paths: list[str] = []
        try:
            written = dict(enumerate(self._write_units(units, paths)))
            self._commit_units(list(enumerate(units)), written, outcome)
        except CommitStateUnknownError:
            raise  # the snapshot may reference the new files: keep them
        except MISSING_FILE_ERRORS as exc:
            self._remove(paths)
            raise_if_expired(self.ctx.store, (self.planned, self.live_in), exc)  # a lost race: plan again
            raise  # a snapshot the file is live in still exists: deleted outside tablefmt
        except BaseException:
            self._remove(paths)
            raise

    def write(self, units: Sequence[RewriteUnit]) -> list[NewDataFile]:
        """Write every unit's new files without committing them (a caller that references them itself, e.g. a
        rewritten tag); on failure the files written so far are removed."""
        paths: list[str] = []
        try:
            return [f for files in self._write_units(units, paths) for f in files]
        except BaseException:
            self._remove(paths)
            raise

    def _commit_units(
        self,
        indexed: list[tuple[int, RewriteUnit]],
        written: dict[int, list[NewDataFile]],
        outcome: RewriteOutcome,
    ) -> None:
        while indexed:
            replaced = [e for _, unit in indexed for e in unit.files]
            new_files = [f for index, _ in indexed for f in written[index]]
            result = self._commit(replaced, new_files)
            if not result.missing_files:
                if result.created and result.snapshot is not None:
                    outcome.snapshot_ids.append(result.snapshot.id)
                    outcome.replaced.extend(replaced)
                    outcome.written.extend(new_files)
                    outcome.rows_in += sum(unit.rows for _, unit in indexed)
                    outcome.rows_out += sum(f.meta.row_count for f in new_files)
                    outcome.units += len(indexed)
                else:  # nothing changed (cannot happen for a non-empty replace): the new files are unreferenced
                    self._remove([f.path for f in new_files])
                return
            gone = {e.identifier() for e in result.missing_files}
            keep: list[tuple[int, RewriteUnit]] = []
            for index, unit in indexed:
                if any(e.identifier() in gone for e in unit.files):
                    outcome.abandoned.append((unit, "a file was removed by a concurrent commit; not rewritten"))
                    self._remove([f.path for f in written[index]])
                else:
                    keep.append((index, unit))
            indexed = keep

    def _write_units(self, units: Sequence[RewriteUnit], paths: list[str]) -> list[list[NewDataFile]]:
        """Each unit's new files, in unit order, up to :data:`MAX_WRITERS` units at once (one per core) when their
        files are large (:data:`PARALLEL_ROWS_PER_FILE`): pyarrow reads, filters, encodes and compresses them
        without the GIL. Every unit started has finished when this returns or raises (the first failure in unit
        order; units not started yet are not), so ``paths`` names every file written."""
        files = sum(len(unit.files) for unit in units)
        large = files > 0 and sum(unit.rows for unit in units) >= PARALLEL_ROWS_PER_FILE * files
        workers = min(len(units), os.cpu_count() or 1, MAX_WRITERS) if large else 1
        if workers <= 1:
            return [self._write_unit(unit, paths) for unit in units]
        with thread_pool(workers, "tablefmt-rewrite") as pool:
            futures = [pool.submit(self._write_unit, unit, paths) for unit in units]
            wait(futures, return_when=FIRST_EXCEPTION)
            for future in futures:  # after a failure, the units not started; otherwise every one is done already
                future.cancel()
        failed = next((f.exception() for f in futures if not f.cancelled() and f.exception() is not None), None)
        if failed is not None:
            raise failed
        return [future.result() for future in futures]

    def _write_unit(self, unit: RewriteUnit, paths: list[str]) -> list[NewDataFile]:
        values = tuple(self.codec.values(unit.partition).get(k) for k in self.schema.partition_keys)
        writer = RollingFileWriter(
            self.ctx.io,
            self.ctx.layout,
            self.schema,
            NameFactory(),
            partition=unit.partition,
            partition_values=values,
            bucket=unit.bucket,
            total_buckets=unit.total_buckets,
            target_size=self.target_size,
        )
        try:
            for table in self._rows(unit.files, writer):
                writer.write(table)
            return writer.close()
        finally:
            paths.extend(writer.written)

    def _rows(self, files: Sequence[ManifestEntry], writer: RollingFileWriter) -> Iterator[Any]:
        """The rows to write again; the first file opened decides which columns keep a dictionary in the new files
        (those its writer gave one: rewritten without a few rows, a file keeps its encodings and about its size)."""
        first = True
        for entry in self.reader.live_entries(files):  # a fully expired file adds no row: never opened
            footer = self._dictionaries_for(writer, entry) if first else None
            first = False
            for table in self.reader.iter_entry_batches(entry, BATCH_ROWS, footer=footer):
                yield table if self.keep_rows is None else self.keep_rows(table)

    def _dictionaries_for(self, writer: RollingFileWriter, entry: ManifestEntry) -> Callable[[Any], None]:
        names = [self.reader.file_column_name(entry, f.id) for f in self.schema.fields]

        def decide(footer: Any) -> None:
            writer.keep_dictionaries(kept_dictionary_columns(footer, self.reader.arrow_schema, names))

        return decide

    # --- commit ------------------------------------------------------------------------------------------------
    def _commit(self, replaced: Sequence[ManifestEntry], new_files: Sequence[NewDataFile]) -> CommitResult:
        request = CommitRequest(
            kind=ChangeKind.REPLACE,
            new_files=tuple(new_files),
            replaced_files=tuple(replaced),
            snapshot_kind=self.settings.snapshot_kind,
            replaced_live_in=self.live_in,
            commit_user=self.settings.commit_user,
            commit_identifier=next(self._identifiers),
            properties=dict(self.settings.properties),
        )
        result = self._commit_once(request)
        if result.created and result.snapshot is not None and result.snapshot.id - 1 == self.live_in:
            self.live_in = result.snapshot.id  # our commit directly on top: the other planned files stay live
        else:
            self.live_in = None
        return result

    def _commit_once(self, request: CommitRequest) -> CommitResult:
        """Commit ``request``, again when the snapshot id it took had been used and expired while it was prepared
        (G2b's CommitConflictError, the only one a REPLACE raises: a retention shorter than the commit took; nothing
        was committed, and the same request, same identifier, commits once), at most :data:`REPLANS` more times."""
        attempt = 0
        while True:
            try:
                return Committer(self.ctx.store, self.schema).commit(request)
            except CommitConflictError as exc:
                attempt += 1
                if attempt > REPLANS:
                    raise
                log.info("rewrite commit retried: %s", exc)

    def _remove(self, paths: Sequence[str]) -> None:
        discard_uncommitted(self.ctx.io, paths, "data file(s) of a rewrite")


def batches(units: Sequence[RewriteUnit], max_files: int) -> list[list[RewriteUnit]]:
    """Units in commit batches replacing at most ``max_files`` files each (a unit is never split)."""
    result: list[list[RewriteUnit]] = []
    current: list[RewriteUnit] = []
    count = 0
    for unit in units:
        if current and count + len(unit.files) > max_files:
            result.append(current)
            current, count = [], 0
        current.append(unit)
        count += len(unit.files)
    if current:
        result.append(current)
    return result
