"""``table.maintenance``: the one front door to a table's maintenance operations.

Every registered operation (``tableformat.cleanup.registry``) runs through :meth:`TableMaintenance.run`, by name;
each has a typed method here too, a one-line call of ``run``. The CLI, the after-commit hook, Spark, ``tablefmt
maintain`` and the report all reach the same kernel (``run_operation``), which checks and types every override
from the operation's declared parameters before anything is read. A new operation is reachable here
(``table.maintenance.run("its-name", ...)``) as soon as it is registered.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from tableformat.cleanup import registry
from tableformat.cleanup.after_commit import run_after_commit
from tableformat.cleanup.check import CheckResult, check_table
from tableformat.cleanup.compaction import CompactResult
from tableformat.cleanup.erase import EraseResult, erase_filter
from tableformat.cleanup.erase.verify import VerifyResult, verify_erasure
from tableformat.cleanup.kernel import OperationResult, Progress, run_operation
from tableformat.cleanup.orphans import OrphanResult
from tableformat.cleanup.partitions import PartitionExpireResult
from tableformat.cleanup.records import RecordExpireResult
from tableformat.cleanup.snapshots import ExpireResult
from tableformat.cleanup.undo import UndoResult, undo_run
from tableformat.context import TableContext
from tableformat.durations import duration_arg_ms

R = TypeVar("R", bound=OperationResult)
PartitionSpec = Mapping[str, Any]
Duration = dt.timedelta | int | str
"""A duration override: a timedelta, milliseconds, or a string such as ``30d``, ``1h30m`` or Paimon's ``1 h``."""
Size = int | str
"""A size override: bytes, or a string such as ``128mb``."""


class TableMaintenance:
    """The maintenance operations of one table. Keyword arguments override the table's options for one run; a dry
    run returns exactly what a real run at that moment would do, and changes nothing."""

    def __init__(self, context: TableContext) -> None:
        self._ctx = context

    @property
    def names(self) -> tuple[str, ...]:
        """The registered operations, in the order a table's own maintenance runs them."""
        return tuple(op.name for op in registry.OPERATIONS)

    def run(
        self,
        name: str,
        *,
        dry_run: bool = False,
        now_ms: int | None = None,
        progress: Progress | None = None,
        **overrides: Any,
    ) -> OperationResult:
        """Run the operation ``name`` with keyword overrides of the table's options (its ``parameters``; None means
        not given). ValidationError, nothing read, for an override it does not take or a value out of range."""
        result: OperationResult = run_operation(
            registry.operation(name), self._ctx, overrides, dry_run=dry_run, now_ms=now_ms, progress=progress
        )
        return result

    def after_commit(self, *, now_ms: int | None = None) -> list[OperationResult]:
        """What runs after every commit (unless ``write-only=true``), run now (or at the fixed time ``now_ms``)."""
        return run_after_commit(self._ctx, now_ms)

    def expire_snapshots(
        self,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained: Duration | None = None,
        limit: int | None = None,
        parallelism: int | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
        progress: Progress | None = None,
    ) -> ExpireResult:
        """Expire old snapshots (and tags past their time-retained, and expired consumers) and delete the files
        only they used: data files, manifests, manifest lists, changelog, index and statistics files."""
        return self._run(
            ExpireResult, "expire", dry_run, now_ms, progress,
            retain_min=retain_min, retain_max=retain_max, time_retained=time_retained, limit=limit,
            parallelism=parallelism,
        )  # fmt: skip

    def expire_partitions(
        self,
        *,
        expiration_time: Duration | None = None,
        strategy: str | None = None,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        max_num: int | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
    ) -> PartitionExpireResult:
        """Drop partitions older than ``expiration_time`` (default: ``partition.expiration-time``), oldest first,
        in OVERWRITE snapshots (snapshot expiration frees the bytes later); partitions whose time cannot be found
        are never dropped and are reported."""
        return self._run(
            PartitionExpireResult, "expire-partitions", dry_run, now_ms, None,
            expiration_time=expiration_time, strategy=strategy, timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern, max_num=max_num,
        )  # fmt: skip

    def expire_records(
        self,
        *,
        expire_time: Duration | None = None,
        time_field: str | None = None,
        max_files: int | None = None,
        max_rewrite_size: Size | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
    ) -> RecordExpireResult:
        """Remove rows older than ``expire_time`` (default: ``record-level.expire-time``) by ``time_field``: files
        whose every row expired are dropped without being read, partly expired files are rewritten."""
        return self._run(
            RecordExpireResult, "expire-records", dry_run, now_ms, None,
            expire_time=expire_time, time_field=time_field, max_files=max_files, max_rewrite_size=max_rewrite_size,
        )  # fmt: skip

    def compact(
        self,
        *,
        partition: PartitionSpec | str | None = None,
        target_file_size: Size | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
    ) -> CompactResult:
        """Merge the small files of each partition (or only ``partition``) and bucket into files near
        ``target_file_size`` (default: ``target-file-size``); every row is kept exactly once."""
        return self._run(
            CompactResult, "compact", dry_run, now_ms, None, partition=partition, target_file_size=target_file_size
        )

    def erase(
        self,
        where: Any = None,
        *,
        keys_file: str | None = None,
        key: str | None = None,
        purge: bool = False,
        include_tags: bool = False,
        deadline: Duration | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
        progress: Progress | None = None,
    ) -> EraseResult:
        """Erase the rows ``where`` matches (SQL text such as ``"user_id IN (1, 2)"``, or a pyarrow compute
        expression), or whose ``key`` column (``COL[=FILECOL]``) holds a key of ``keys_file`` (Parquet or CSV): the
        live files holding them are rewritten without them, one guarded snapshot per batch. ``purge`` also expires
        every older snapshot and deletes the old files now (tags, branches and consumers that hold them are
        reported in ``pinned_by``, never removed); with ``include_tags`` the tags that hold them are rewritten
        without the erased rows. See docs/erase.md."""
        return self._run(
            EraseResult, "erase", dry_run, now_ms, progress,
            where=where, keys_file=keys_file, key=key, purge=purge or None, include_tags=include_tags or None,
            deadline=deadline,
        )  # fmt: skip

    def verify_erasure(
        self,
        where: Any = None,
        *,
        keys_file: str | None = None,
        key: str | None = None,
        now_ms: int | None = None,
    ) -> VerifyResult:
        """The erasure certificate: scan every Parquet file under the table root (referenced or not), reading only
        the filter's columns, for rows the filter (as :meth:`erase` takes it) matches. ``certified`` is True only
        when none matches anywhere and every file could be read. Deletes nothing."""
        row_filter = erase_filter(self._ctx.schema, where, keys_file, key, self._ctx.io.storage_options())
        return verify_erasure(self._ctx, row_filter, now_ms)

    def remove_orphan_files(
        self,
        *,
        older_than: Duration | None = None,
        force: bool = False,
        parallelism: int | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
        file_list: str | os.PathLike[str] | None = None,
        max_files: int | None = None,
    ) -> OrphanResult:
        """Delete files no snapshot, tag, changelog or branch references and older than ``older_than`` (default:
        ``orphan-files.older-than``, 1 d; under 1 h needs ``force``). Only names the format produces are
        candidates; others are reported, never deleted. ``file_list``: an S3 Inventory ``manifest.json`` or a
        Parquet/CSV of ``path, size, last_modified`` to take the files from instead of listing (docs/inventory.md).
        ``max_files``: delete at most this many orphans (default ``orphan-files.max-files``, 200,000); the rest are the
        result's ``backlog``, for the next run."""
        return self._run(
            OrphanResult, "remove-orphans", dry_run, now_ms, None,
            older_than=older_than, force=force, parallelism=parallelism, file_list=file_list, max_files=max_files,
        )  # fmt: skip

    def check(
        self,
        *,
        parallelism: int | None = None,
        older_than: Duration | None = None,
        force: bool = False,
        now_ms: int | None = None,
        file_list: str | os.PathLike[str] | None = None,
    ) -> CheckResult:
        """Verify every referenced file exists with its recorded size; count orphans (with remove-orphans' cutoff)
        and reclaimable bytes. Deletes nothing. ``file_list``: as for remove_orphan_files (sizes come from it too;
        referenced files it does not name are stat'ed)."""
        guard = None if older_than is None else dt.timedelta(milliseconds=duration_arg_ms(older_than, "older_than"))
        return check_table(
            self._ctx, parallelism=parallelism, older_than=guard, force=force, now_ms=now_ms, file_list=file_list
        )

    def undo(self, run_id: str, *, dry_run: bool = False, now_ms: int | None = None) -> UndoResult:
        """Give back exactly what run ``run_id`` took while its undo window (``maintenance.undo-window``) lasts:
        expired snapshots and tags read again, files a run's commits took out come back in a new commit
        (docs/undo.md). UndoRefusedError, nothing changed, where that cannot be exact."""
        return undo_run(self._ctx, run_id, dry_run=dry_run, now_ms=now_ms)

    def _run(
        self,
        kind: type[R],
        name: str,
        dry_run: bool,
        now_ms: int | None,
        progress: Progress | None,
        **overrides: Any,
    ) -> R:
        """``run`` for the typed methods above: the result is the operation's own result class ``kind``."""
        result = self.run(name, dry_run=dry_run, now_ms=now_ms, progress=progress, **overrides)
        if not isinstance(result, kind):
            raise TypeError(f"{name} returned a {type(result).__name__}, not a {kind.__name__}")
        return result


class _HasMaintenance(Protocol):
    @property
    def maintenance(self) -> TableMaintenance: ...


def deprecated_alias(name: str) -> Any:
    """``Table.<name>``, kept for old scripts: calls ``table.maintenance.<name>`` (keyword arguments only) with a
    DeprecationWarning naming the front door."""

    def alias(table: _HasMaintenance, **kwargs: Any) -> Any:
        warnings.warn(f"Table.{name}() is deprecated: use table.maintenance.{name}()", DeprecationWarning, stacklevel=2)
        return getattr(table.maintenance, name)(**kwargs)

    alias.__name__ = name
    alias.__doc__ = f"Deprecated: use ``table.maintenance.{name}(...)``."
    return alias
