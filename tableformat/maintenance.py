"""``table.maintenance``: every registered maintenance operation of one table, by name or by its own method.

The operations come from the one registry (``tableformat.cleanup.registry``); a new operation is reachable here
(``table.maintenance.run("its-name", ...)``) as soon as it is registered.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from tableformat.cleanup import registry
from tableformat.cleanup.after_commit import run_after_commit
from tableformat.cleanup.check import CheckResult, check_table
from tableformat.cleanup.compaction import CompactResult, compact
from tableformat.cleanup.kernel import OperationResult, Progress, run_operation
from tableformat.cleanup.orphans import OrphanResult, remove_orphan_files
from tableformat.cleanup.partitions import PartitionExpireResult, expire_partitions
from tableformat.cleanup.records import RecordExpireResult, expire_records
from tableformat.cleanup.snapshots import ExpireResult, expire_snapshots
from tableformat.context import TableContext

PartitionSpec = Mapping[str, Any]


class TableMaintenance:
    """The maintenance operations of one table."""

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
        """Run the operation ``name`` with keyword overrides of the table's options (its ``parameters``)."""
        result: OperationResult = run_operation(
            registry.operation(name), self._ctx, overrides, dry_run=dry_run, now_ms=now_ms, progress=progress
        )
        return result

    def after_commit(self, *, now_ms: int | None = None) -> list[OperationResult]:
        """What runs after every commit (unless ``write-only=true``), run now (or at the fixed time ``now_ms``)."""
        return run_after_commit(self._ctx, now_ms)

    def expire_partitions(
        self,
        expiration_time: dt.timedelta | int | str | None = None,
        strategy: str | None = None,
        max_num: int | None = None,
        dry_run: bool = False,
        *,
        now_ms: int | None = None,
    ) -> PartitionExpireResult:
        """Drop partitions older than ``expiration_time`` (default: ``partition.expiration-time``), oldest first.

        Marks their files deleted in OVERWRITE snapshots (snapshot expiration frees the bytes later); partitions
        whose time cannot be found are never dropped and are reported. A dry run reports exactly what a real run
        drops. Arguments override the table's options.
        """
        return expire_partitions(
            self._ctx, expiration_time=expiration_time, strategy=strategy, max_num=max_num, dry_run=dry_run,
            now_ms=now_ms,
        )

    def expire_snapshots(
        self,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained: dt.timedelta | int | str | None = None,
        limit: int | None = None,
        dry_run: bool = False,
        *,
        parallelism: int | None = None,
        progress: Progress | None = None,
    ) -> ExpireResult:
        """Expire old snapshots (and tags past their time-retained); arguments override the table's options.

        Deletes data files, manifests and manifest lists that only expired snapshots used; a dry run returns
        exactly the files the real run would delete.
        """
        return expire_snapshots(
            self._ctx,
            retain_min=retain_min,
            retain_max=retain_max,
            time_retained=time_retained,
            limit=limit,
            dry_run=dry_run,
            parallelism=parallelism,
            progress=progress,
        )

    def remove_orphan_files(
        self,
        older_than: dt.timedelta | None = None,
        dry_run: bool = False,
        parallelism: int | None = None,
        *,
        force: bool = False,
    ) -> OrphanResult:
        """Delete files no snapshot, tag or branch references and older than ``older_than``.

        Default: the table option orphan-files.older-than (1 day); a cutoff under 1 hour or in the future needs
        ``force``. Only file names the format produces are candidates; others are reported, never deleted.
        """
        return remove_orphan_files(
            self._ctx, older_than=older_than, dry_run=dry_run, parallelism=parallelism, force=force
        )

    def check(self, parallelism: int | None = None) -> CheckResult:
        """Verify every referenced file exists with its recorded size; count orphans and reclaimable bytes."""
        return check_table(self._ctx, parallelism=parallelism)

    def expire_records(
        self,
        expire_time: dt.timedelta | int | str | None = None,
        time_field: str | None = None,
        max_files: int | None = None,
        dry_run: bool = False,
        *,
        now_ms: int | None = None,
    ) -> RecordExpireResult:
        """Remove rows older than ``expire_time`` (default: ``record-level.expire-time``) by ``time_field``.

        Files whose every row is expired are dropped in one metadata-only snapshot (never read); partly expired
        files are rewritten with their unexpired rows, old and new swapped in one snapshot per batch. At most
        ``max_files`` files per run. A dry run reports exactly the files a real run drops and rewrites.
        """
        return expire_records(
            self._ctx, expire_time=expire_time, time_field=time_field, max_files=max_files, dry_run=dry_run,
            now_ms=now_ms,
        )

    def compact(
        self,
        partition: PartitionSpec | str | None = None,
        target_file_size: int | str | None = None,
        dry_run: bool = False,
        *,
        now_ms: int | None = None,
    ) -> CompactResult:
        """Merge the small files of each partition (or only ``partition``) and bucket into files near
        ``target_file_size`` (default: ``target-file-size``), one COMPACT snapshot per batch; every row is kept
        exactly once (rows expired by the record TTL are dropped)."""
        return compact(
            self._ctx, partition=partition, target_file_size=target_file_size, dry_run=dry_run, now_ms=now_ms
        )


class RewriteMethods:
    """``Table.expire_records`` and ``Table.compact`` (kept here so table.py stays small)."""

    @property
    def maintenance(self) -> TableMaintenance:
        raise NotImplementedError

    def expire_records(
        self,
        expire_time: dt.timedelta | int | str | None = None,
        time_field: str | None = None,
        max_files: int | None = None,
        dry_run: bool = False,
    ) -> RecordExpireResult:
        """``table.maintenance.expire_records``: remove rows older than the record-level expire time."""
        return self.maintenance.expire_records(expire_time, time_field, max_files, dry_run)

    def compact(
        self,
        partition: PartitionSpec | str | None = None,
        target_file_size: int | str | None = None,
        dry_run: bool = False,
    ) -> CompactResult:
        """``table.maintenance.compact``: merge small files into files near the target size."""
        return self.maintenance.compact(partition, target_file_size, dry_run)
