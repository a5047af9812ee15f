"""Maintenance driven from a Spark application: expiration on demand and orphan cleanup with executors.

The distributed orphan cleaner runs the local cleaner's own planning code (:mod:`tableformat.cleanup.orphans`) on
the driver: the same census of the table's directories, the same name classification and age cutoff, the same
reference subtraction and the same result. Only two kinds of storage calls go to the executors: listing
directories (one Spark job per directory level, one call per directory) and deleting batches of orphans.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import SparkSession

from tableformat.cleanup import orphans as local
from tableformat.cleanup.expire import ExpireResult, expire_snapshots
from tableformat.cleanup.orphans import OrphanFile, OrphanPlan, OrphanResult
from tableformat.context import TableContext
from tableformat.errors import MaintenanceError, ValidationError

log = logging.getLogger(__name__)

T = TypeVar("T")


class SparkMapExecutor(Executor):
    """An Executor whose ``map`` runs on Spark's executors (one task per item, up to ``slices`` tasks per job).

    ``fn`` and the items are pickled with cloudpickle, so they must not capture unpicklable state. ``submit`` is not
    supported: only bulk storage calls are meant to leave the driver.
    """

    def __init__(self, sc: SparkContext, slices: int, description: str) -> None:
        self.sc = sc
        self.slices = max(1, slices)
        self.description = description
        self.jobs = 0

    def map(
        self, fn: Callable[..., T], *iterables: Iterable[Any], timeout: float | None = None, chunksize: int = 1
    ) -> Iterator[T]:
        items = list(zip(*iterables))
        if not items:
            return iter([])

        def call(args: tuple[Any, ...]) -> T:
            return fn(*args)

        self.jobs += 1
        self.sc.setJobDescription(f"{self.description} ({len(items)} item(s))")
        try:
            results = self.sc.parallelize(items, min(len(items), self.slices)).map(call).collect()
        finally:
            self.sc.setJobDescription(None)  # type: ignore[arg-type]
        return iter(results)


def _table(path: str, storage_options: Mapping[str, Any] | None) -> TableContext:
    return TableContext.load(path, dict(storage_options or {}))


def plan_orphan_removal(
    spark: SparkSession,
    ctx: TableContext,
    *,
    older_than: timedelta | None = None,
    force: bool = False,
    parallelism: int | None = None,
    now_ms: int | None = None,
) -> OrphanPlan:
    """tableformat.cleanup.orphans.plan_orphan_removal with the directory listing done by Spark executors."""
    older_ms = local.resolve_older_than_ms(ctx, older_than, force=force)
    workers = local.resolve_parallelism(ctx, parallelism)
    sc = spark.sparkContext
    slices = parallelism if parallelism is not None else sc.defaultParallelism
    planned_at = local.now_epoch_ms() if now_ms is None else now_ms
    cutoff_ms = planned_at - older_ms
    listing_pool = SparkMapExecutor(sc, slices, f"tablefmt orphan listing of {ctx.url()}")
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tablefmt-orphans") as pool:
        try:
            census = local._take_census(ctx, listing_pool, cutoff_ms)
            candidates = census.candidates
            found = len(candidates)
            roots_read = local._discard_referenced(ctx, pool, workers, candidates) if found else 0
        except MaintenanceError:
            raise
        except local._REFERENCE_ERRORS as exc:
            raise MaintenanceError(f"orphan cleanup of {ctx.url()} stopped, nothing was deleted: {exc}") from exc
    orphans = sorted(
        (
            OrphanFile(f"{directory}/{name}" if directory else name, size, mtime_ms)
            for directory, name, size, mtime_ms in candidates.items()
        ),
        key=lambda o: o.path,
    )
    empty = () if ctx.io.is_object_store else local._empty_dirs(census, orphans, cutoff_ms)
    log.info(
        "distributed orphan plan for %s: %d dirs (%d Spark jobs), %d files, %d candidates, %d roots, %d orphans",
        ctx.url(),
        census.directories,
        listing_pool.jobs,
        census.files,
        found,
        roots_read,
        len(orphans),
    )
    return OrphanPlan(
        root=ctx.layout.root,
        planned_at_ms=planned_at,
        cutoff_ms=cutoff_ms,
        orphans=tuple(orphans),
        skipped_unknown=tuple(sorted(census.unknown)),
        skipped_no_mtime=tuple(sorted(census.no_mtime)),
        empty_dirs=empty,
        directories_listed=census.directories,
        files_listed=census.files,
        candidates=found,
        roots_read=roots_read,
    )


def execute_orphan_plan(
    spark: SparkSession,
    ctx: TableContext,
    plan: OrphanPlan,
    *,
    parallelism: int | None = None,
    now_ms: int | None = None,
) -> OrphanResult:
    """tableformat.cleanup.orphans.execute_orphan_plan with the delete batches run by Spark executors."""
    if plan.root != ctx.layout.root:
        raise ValidationError(f"the plan was made for {plan.root!r}, not for {ctx.layout.root!r}")
    now = local.now_epoch_ms() if now_ms is None else now_ms
    if now - plan.planned_at_ms > local.MAX_PLAN_AGE_MS:
        raise MaintenanceError("the orphan plan is more than an hour old; plan again (new commits may reference files)")
    sc = spark.sparkContext
    layout = ctx.layout
    size_of = {layout.join(o.path): o.size for o in plan.orphans}
    paths = list(size_of)
    batches = [paths[i : i + local.DELETE_BATCH] for i in range(0, len(paths), local.DELETE_BATCH)]
    deleted: list[str] = []
    failed: list[str] = []
    if batches:
        slices = parallelism if parallelism is not None else sc.defaultParallelism
        delete_pool = SparkMapExecutor(sc, slices, f"tablefmt orphan deletion in {ctx.url()}")
        delete_batch = local._delete_batch
        for done, errors in delete_pool.map(lambda batch: delete_batch(ctx, batch), batches):
            deleted += done
            failed += errors
    for path in deleted:
        log.info("deleted orphan %s", ctx.url(path))
    for failure in failed:
        log.warning("could not delete orphan %s", failure)
    removed: list[str] = []
    if not ctx.io.is_object_store:
        for rel in plan.empty_dirs:
            try:
                if ctx.io.remove_empty_dir(layout.join(rel)):
                    removed.append(rel)
                    log.info("removed empty directory %s", ctx.url(layout.join(rel)))
            except OSError as exc:
                log.warning("could not remove empty directory %s: %s", rel, exc)
    return OrphanResult(
        orphan_files=len(plan.orphans),
        orphan_bytes=plan.orphan_bytes,
        deleted_paths=tuple(sorted(layout.relative(p) for p in deleted)),
        deleted_bytes=sum(size_of[p] for p in deleted if p in size_of),
        skipped_unknown=plan.skipped_unknown,
        dry_run=False,
        cutoff_ms=plan.cutoff_ms,
        failed=tuple(failed),
        removed_dirs=tuple(removed),
        plan=plan,
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
) -> OrphanResult:
    """Orphan cleanup with listing and deletion on Spark's executors; the local cleaner's rules and result.

    ``older_than`` defaults to the table option ``orphan-files.older-than`` (1 day); under 1 hour is refused unless
    ``force``. ``parallelism``: Spark tasks per listing/deletion job and driver threads for reading metadata
    (default: Spark's default parallelism for tasks, ``file-operation.thread-num`` for threads). With ``dry_run``
    nothing is deleted and ``deleted_paths`` lists exactly what a real run would delete.
    """
    ctx = _table(path, storage_options)
    plan = plan_orphan_removal(spark, ctx, older_than=older_than, force=force, parallelism=parallelism, now_ms=now_ms)
    if dry_run:
        return local.dry_run_result(plan)
    return execute_orphan_plan(spark, ctx, plan, parallelism=parallelism, now_ms=plan.planned_at_ms)


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceReport:
    """What maintain() did: expiration always, orphan cleanup when asked."""

    expiration: ExpireResult
    orphans: OrphanResult | None = None


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

    Snapshot expiration per the table's options (metadata-sized work on the driver), then, if ``remove_orphans``,
    the distributed orphan cleanup with ``older_than`` / ``force`` / ``parallelism`` as in remove_orphan_files.
    Errors raise (unlike the hook after a commit, this call exists to do the maintenance).
    """
    ctx = _table(path, storage_options)
    expiration = expire_snapshots(ctx, dry_run=dry_run, parallelism=parallelism)
    orphan_result = None
    if remove_orphans:
        orphan_result = remove_orphan_files(spark, path, older_than, dry_run, parallelism, storage_options, force=force)
    return MaintenanceReport(expiration=expiration, orphans=orphan_result)
