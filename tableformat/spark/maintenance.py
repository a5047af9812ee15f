"""Maintenance driven from a Spark application: expiration on demand and orphan cleanup with executors.

The distributed orphan cleaner *is* the local one (:func:`tableformat.cleanup.orphans.remove_orphan_files`),
run on the driver over a FileIO whose directory listings were made by Spark's executors beforehand, whose
manifests are read on executors (each reduced there to the file names its entries give) and whose delete batches
run on executors (:mod:`tableformat.spark.storage`). Same census, same name rules and age cutoff, same reference
subtraction, same result; the listing, the manifest reads and the deleting leave the driver. With a file list (an
S3 Inventory report or a Parquet/CSV of ``path, size, last_modified``, docs/inventory.md) nothing is listed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pyspark.sql import SparkSession

from tableformat.cleanup import orphans as local
from tableformat.cleanup.after_commit import own_operations
from tableformat.cleanup.kernel import OperationResult
from tableformat.cleanup.orphans import OrphanResult
from tableformat.cleanup.snapshots import SNAPSHOT_EXPIRATION, ExpireResult
from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance
from tableformat.parallel import resolve_parallelism
from tableformat.spark.storage import ExecutorAssistedFileIO, prelist_table

log = logging.getLogger(__name__)


def _table(path: str, storage_options: Mapping[str, Any] | None) -> TableContext:
    return TableContext.load(path, dict(storage_options or {}))


@dataclass(frozen=True, slots=True, kw_only=True)
class DistributedOrphanRun:
    """A distributed orphan cleanup: the cleaner's result and where its storage calls ran."""

    result: OrphanResult
    prelisted_dirs: int
    """Directories the executors listed."""
    served_dirs: int
    """Of those, directories the cleaner's census read from the executors' listing."""
    driver_listings: int
    """Listings the driver made itself (the cleaner re-lists snapshot/tag directories when reading references)."""
    delete_jobs: int
    """Spark jobs that deleted a batch of orphans (one per batch of up to 1,000 files)."""
    manifests_read_on_executors: int = 0
    """Manifests whose entries' file names the executors read (the driver reads snapshots and manifest lists)."""


def run_distributed_orphan_cleanup(
    spark: SparkSession,
    path: str,
    older_than: timedelta | None = None,
    dry_run: bool = False,
    parallelism: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    *,
    force: bool = False,
    now_ms: int | None = None,
    file_list: str | None = None,
    max_files: int | None = None,
) -> DistributedOrphanRun:
    """remove_orphan_files, also reporting where the listing and deleting ran."""
    ctx = _table(path, storage_options)
    local.resolve_older_than_ms(ctx, older_than, force=force)  # refuse a bad guard before listing anything
    resolve_parallelism(ctx.options, ctx.io, parallelism)  # refuse a bad value before listing
    sc = spark.sparkContext
    slices = parallelism or sc.defaultParallelism
    listings = {} if file_list else prelist_table(sc, ctx.io, ctx.layout.root, slices)
    prelisted = len(listings)
    assisted = ExecutorAssistedFileIO(ctx.io, sc, listings, slices)
    assisted_ctx = ctx.with_io(assisted)
    result = TableMaintenance(assisted_ctx).remove_orphan_files(
        older_than=older_than,
        dry_run=dry_run,
        parallelism=parallelism,
        force=force,
        now_ms=now_ms,
        file_list=file_list,
        max_files=max_files,
    )
    log.info(
        "distributed orphan cleanup of %s: executors listed %d directories (%d used) and read %d manifests, the "
        "driver listed %d, %d delete job(s)",
        ctx.url(),
        prelisted,
        assisted.served,
        assisted.mapped_on_executors,
        assisted.listed_on_driver,
        assisted.delete_jobs,
    )
    return DistributedOrphanRun(
        result=result,
        prelisted_dirs=prelisted,
        served_dirs=assisted.served,
        driver_listings=assisted.listed_on_driver,
        delete_jobs=assisted.delete_jobs,
        manifests_read_on_executors=assisted.mapped_on_executors,
    )


def remove_orphan_files(
    spark: SparkSession,
    path: str,
    older_than: timedelta | None = None,
    dry_run: bool = False,
    parallelism: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    *,
    force: bool = False,
    now_ms: int | None = None,
    file_list: str | None = None,
    max_files: int | None = None,
) -> OrphanResult:
    """Orphan cleanup with directory listing and deletion on Spark's executors; the local cleaner's rules and result.

    ``older_than`` defaults to the table option ``orphan-files.older-than`` (1 day); under 1 hour is refused unless
    ``force``. ``parallelism``: Spark tasks per listing job and driver threads for reading metadata and submitting
    delete batches (defaults: Spark's default parallelism, and the table's ``file-operation.thread-num``). With
    ``dry_run`` nothing is deleted and ``deleted_paths`` lists exactly what a real run would delete. The driver
    holds the directory listings until the census has read them (roughly 200 bytes per file). ``file_list``: take
    the table's files from this S3 Inventory ``manifest.json`` or Parquet/CSV file list instead (nothing is listed;
    the cutoff is capped at its creation time; docs/inventory.md). ``max_files``: delete at most this many orphans
    (default ``orphan-files.max-files``); the rest are the result's ``backlog``.
    """
    return run_distributed_orphan_cleanup(
        spark,
        path,
        older_than,
        dry_run,
        parallelism,
        storage_options,
        force=force,
        now_ms=now_ms,
        file_list=file_list,
        max_files=max_files,
    ).result


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceReport:
    """What maintain() did: every after-commit operation of the registry (snapshot expiration among them, last),
    and orphan cleanup when asked."""

    operations: tuple[tuple[str, OperationResult], ...]
    """(operation name, result) in the order they ran."""
    orphans: OrphanResult | None = None

    @property
    def expiration(self) -> ExpireResult:
        """The snapshot expiration's result."""
        result = dict(self.operations)[SNAPSHOT_EXPIRATION.name]
        assert isinstance(result, ExpireResult)
        return result


def maintain(
    spark: SparkSession,
    path: str,
    storage_options: Mapping[str, Any] | None = None,
    *,
    remove_orphans: bool = False,
    older_than: timedelta | None = None,
    dry_run: bool = False,
    parallelism: int | None = None,
    force: bool = False,
) -> MaintenanceReport:
    """Run all of a table's maintenance now, whatever its ``write-only`` option says.

    Every operation the registry runs after commits that applies to the table (record expiration does not apply to
    a primary-key table), in its order, per the table's options (snapshot expiration
    last; metadata-sized work on the driver), then, if ``remove_orphans``,
    the distributed orphan cleanup with ``older_than`` / ``force`` / ``parallelism`` as in remove_orphan_files.
    Errors raise (unlike the hook after a commit, this call exists to do the maintenance).
    """
    ctx = _table(path, storage_options)
    maintenance = TableMaintenance(ctx)
    ran: list[tuple[str, OperationResult]] = []
    for operation in own_operations(ctx, resolve_now(None), after_commit=False):
        overrides: dict[str, Any] = (
            {"parallelism": parallelism} if any(p.name == "parallelism" for p in operation.parameters) else {}
        )
        ran.append((operation.name, maintenance.run(operation.name, dry_run=dry_run, **overrides)))
    orphan_result = None
    if remove_orphans:
        orphan_result = remove_orphan_files(spark, path, older_than, dry_run, parallelism, storage_options, force=force)
    return MaintenanceReport(operations=tuple(ran), orphans=orphan_result)
