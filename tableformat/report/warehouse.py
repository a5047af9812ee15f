"""The report of many tables: the same targets as ``tablefmt maintain`` (a table, a ``<db>.db`` directory or a Paimon
filesystem warehouse, listed by the maintainer's own discovery), each table reported as ``table.report()`` does."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from tableformat.cleanup.maintainer import MaintainSettings, TableTarget, discover_all
from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.parallel import bounded_map, executor

from .figures import failed_report, options_with, table_report
from .model import TableRetentionReport, WarehouseReport

log = logging.getLogger(__name__)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def report_target(
    target: TableTarget,
    settings: MaintainSettings,
    *,
    now_ms: int,
    since_ms: int | None,
) -> TableRetentionReport:
    """One discovered table's report; a table that cannot be opened gives a report holding only the error."""
    try:
        ctx = TableContext.load(target.location, dict(settings.storage_options))
        ctx = options_with(ctx, settings.overrides_for(target))
        return table_report(ctx, name=target.name, now_ms=now_ms, since_ms=since_ms, settings=settings)
    except Exception as exc:  # one table's failure must not stop the report of the others
        log.debug("report of %s failed", target.location, exc_info=True)
        return failed_report(target.name, target.location, now_ms, since_ms, _one_line(exc))


def warehouse_report(
    targets: Iterable[str],
    settings: MaintainSettings | None = None,
    *,
    now_ms: int | None = None,
    since_ms: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    on_table: Callable[[TableRetentionReport], None] | None = None,
) -> WarehouseReport:
    """Every table of ``targets`` (discovered as ``tablefmt maintain`` does, with the settings' include/exclude
    globs and per-table option overrides), ``settings.parallelism`` tables at a time. ValidationError for a target
    that is neither a table nor a warehouse, before any table is read."""
    started = time.perf_counter()
    settings = settings or MaintainSettings()
    if storage_options:
        settings = replace(settings, storage_options={**settings.storage_options, **storage_options})
    names = tuple(targets)
    found = discover_all(names, settings.storage_options, settings.include, settings.exclude)
    now = resolve_now(now_ms)
    reports = []
    with executor(settings.parallelism, "tablefmt-report-tables") as pool:
        done = bounded_map(
            pool, lambda t: report_target(t, settings, now_ms=now, since_ms=since_ms), found, 2 * settings.parallelism
        )
        for _, report in done:
            reports.append(report)
            if on_table is not None:
                on_table(report)
    return WarehouseReport(targets=names, now_ms=now, tables=tuple(reports), seconds=time.perf_counter() - started)
