"""``maintain_warehouse``: the ``tablefmt maintain --once`` pass with tables spread over Spark's executors.

Discovery runs on the driver (directory listings only); each table's whole pass (probe, lease, its due operations in
the registry's order, the state) runs on one executor, so a table's operations never interleave, and two
applications, or an application and a cron ``tablefmt maintain``, keep out of each other's way through the same
lease. The result is the same list of per-table reports the CLI prints, in table order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings, TableReport, TableTarget, load_settings
from tableformat.cleanup.maintainer.lease import new_owner
from tableformat.cleanup.maintainer.table_pass import maintain_table


def _on_executor(settings: MaintainSettings, owner: str, dry_run: bool) -> Any:
    def run(tables: Iterator[tuple[str, str]]) -> Iterator[TableReport]:
        for name, location in tables:
            yield maintain_table(TableTarget(name=name, location=location), settings, owner=owner, dry_run=dry_run)

    return run


def maintain_warehouse(
    spark: SparkSession,
    targets: str | Sequence[str],
    *,
    config: str | None = None,
    settings: MaintainSettings | None = None,
    storage_options: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    parallelism: int | None = None,
) -> list[TableReport]:
    """One maintainer pass over every table of ``targets`` (tables, ``<db>.db`` directories or warehouses), one
    Spark task per group of tables (``parallelism`` tasks; default: Spark's default parallelism).

    ``settings`` (or the TOML file ``config``) as for ``tablefmt maintain``; ``storage_options`` are added to
    theirs. Errors of a table are in its report (``ok`` False), never raised; a bad config or target raises
    ValidationError before any table is touched (TargetNotFoundError, a ValidationError and a FileNotFoundError,
    for a target that does not exist, as ``tablefmt maintain`` refuses it with exit code 2).
    """
    chosen = settings if settings is not None else load_settings(config)
    if storage_options:
        chosen = replace(chosen, storage_options={**chosen.storage_options, **storage_options})
    tables = Maintainer([targets] if isinstance(targets, str) else list(targets), chosen).discover()
    if not tables:
        return []
    slices = max(1, min(len(tables), parallelism or spark.sparkContext.defaultParallelism))
    rdd = spark.sparkContext.parallelize([(t.name, t.location) for t in tables], slices)
    reports: list[TableReport] = rdd.mapPartitions(_on_executor(chosen, new_owner(), dry_run)).collect()
    order = {t.location: i for i, t in enumerate(tables)}
    return sorted(reports, key=lambda r: order[r.location])
