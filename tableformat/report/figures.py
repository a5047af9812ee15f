"""The figures of one table's retention report, each from the code that owns it.

- What each rule would free now: every registered maintenance operation the table's options ask for, run as a dry
  run (``run_operation(op, ctx, {}, dry_run=True)``): the report cannot disagree with ``tablefmt <op> --dry-run``.
- Partitions: ``table.inspect.partitions()`` (what ``tablefmt partitions`` prints), each marked with the rules whose
  dry run drops it.
- Keep-up: the maintainer's own functions (``count_ingest``, ``merge_hours``, ``assess``) over the table's maintain
  state, or over the snapshot history alone for a table never maintained.
- Storage over time: :mod:`.history`.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tableformat.cleanup.kernel import Operation, OperationResult, run_operation
from tableformat.cleanup.maintainer import MaintainSettings
from tableformat.cleanup.maintainer.keep_up import assess, count_ingest, merge_hours, operation_limits
from tableformat.cleanup.orphans import OrphanResult
from tableformat.cleanup.partitions import PartitionExpireResult
from tableformat.cleanup.partitions.plan import display_values
from tableformat.cleanup.records import RecordExpireResult
from tableformat.cleanup.registry import OPERATIONS
from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.durations import duration_arg_ms
from tableformat.errors import CorruptMetadataError, TableFormatError, ValidationError
from tableformat.inspect import TableInspector, row_count_kind
from tableformat.model.maintain import MaintainState, OperationState
from tableformat.options import PARTITION_DEFAULT_NAME
from tableformat.parallel import resolve_parallelism
from tableformat.undo_store import held_paths

from .history import CachingStore, storage_history
from .model import KeepUpFigures, PartitionFigures, RuleFigures, StorageHistory, TableRetentionReport

log = logging.getLogger(__name__)

NEVER = 2**62
"""The maintainer's due time of an operation the table's options do not ask for."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _marks(result: OperationResult) -> tuple[int, int]:
    """(bytes, rows) a rule takes out of the latest snapshot without deleting them (partition drops, expired
    records; compaction replaces files with new ones, so it marks nothing reclaimable here)."""
    if isinstance(result, PartitionExpireResult):
        return result.bytes, result.rows
    if isinstance(result, RecordExpireResult):
        return result.bytes_reclaimable, result.expired_rows
    return 0, 0


def _rule(op: Operation[Any, Any, Any], ctx: TableContext, state: MaintainState | None, now_ms: int) -> RuleFigures:
    try:
        configured = op.wanted(ctx)
        cadence = op.cadence(ctx)
    except TableFormatError as exc:
        return RuleFigures(operation=op.name, summary=op.summary, configured=True, error=_one_line(exc))
    known = state.operations.get(op.name) if state is not None else None
    due: dict[str, Any] = {"interval_ms": cadence.interval_ms, "on_change": cadence.on_change}
    if known is not None and known.next_due_ms < NEVER:
        due.update(next_due_ms=known.next_due_ms, due_source="maintain state")
    else:
        due.update(next_due_ms=None, due_source="never run by tablefmt maintain: due on its first pass")
    if not configured:
        return RuleFigures(operation=op.name, summary=op.summary, configured=False, **due)
    reason = op.not_applicable(ctx)
    if reason:  # e.g. compaction of a primary-key table: tablefmt maintain skips it too
        return RuleFigures(operation=op.name, summary=op.summary, configured=True, not_applicable=reason, **due)
    try:
        result = run_operation(op, ctx, {}, dry_run=True, now_ms=now_ms)
    except Exception as exc:  # one rule's failure must not hide the others
        log.debug("dry run of %s failed", op.name, exc_info=True)
        return RuleFigures(operation=op.name, summary=op.summary, configured=True, error=_one_line(exc), **due)
    marks_bytes, marks_rows = _marks(result)
    return RuleFigures(
        operation=op.name,
        summary=op.summary,
        configured=True,
        result=result,
        frees_bytes=result.deleted_bytes,
        frees_files=len(result.deleted_paths),
        frees_usd_per_month=result.freed_usd_per_month,
        run_cost_usd=result.requests_usd,
        marks_bytes=marks_bytes,
        marks_rows=marks_rows,
        backlog=result.backlog,
        **due,
    )


def _partitions(ctx: TableContext, rules: tuple[RuleFigures, ...]) -> tuple[PartitionFigures, ...]:
    """``tablefmt partitions`` of the latest snapshot, marked with the rules that drop (or trim) each partition."""
    inspector = TableInspector(ctx)
    table = inspector.partitions()
    rows = table.to_pylist()
    fields = ctx.schema.partition_fields
    default = ctx.options.require(PARTITION_DEFAULT_NAME)
    dropped: dict[str, list[str]] = {}
    trimmed: dict[str, list[str]] = {}
    for rule in rules:
        result = rule.result
        if result is None:
            continue
        if isinstance(result, PartitionExpireResult):
            wanted = [dict(p) for p in result.expired_partitions]
            for row in rows:
                if display_values(row["values"] or {}, fields, default) in wanted:
                    dropped.setdefault(row["partition"], []).append(rule.operation)
        elif isinstance(result, RecordExpireResult):
            whole, part = set(result.dropped_files), set(result.rewritten_files)
            if not whole and not part:
                continue
            files = inspector.files().select(["partition", "file_path"]).to_pylist()
            by_partition: dict[str, list[str]] = {}
            for f in files:
                by_partition.setdefault(f["partition"], []).append(f["file_path"])
            for name, paths in by_partition.items():
                if all(p in whole for p in paths):
                    dropped.setdefault(name, []).append(rule.operation)
                elif any(p in whole or p in part for p in paths):
                    trimmed.setdefault(name, []).append(rule.operation)
    return tuple(
        PartitionFigures(
            partition=row["partition"],
            values=row["values"] or {},
            shown=display_values(row["values"] or {}, fields, default),
            record_count=row["record_count"],
            file_size_in_bytes=row["file_size_in_bytes"],
            file_count=row["file_count"],
            dropped_by=tuple(dropped.get(row["partition"], ())),
            trimmed_by=tuple(trimmed.get(row["partition"], ())),
        )
        for row in rows
    )


def _keep_up(
    ctx: TableContext,
    state: MaintainState | None,
    rules: tuple[RuleFigures, ...],
    now_ms: int,
    window_ms: int,
    settings: MaintainSettings,
) -> KeepUpFigures:
    """The maintainer's keep-up figures: its state's hours plus the snapshots it has not counted yet; for a table
    never maintained, the snapshot history alone with each rule's dry-run backlog."""
    latest = ctx.store.latest_snapshot_id()
    counted = state.counted_snapshot_id if state is not None else 0
    fresh, counted = count_ingest(ctx.store, counted, latest, now_ms, window_ms)
    if state is None:
        operations = {
            r.operation: OperationState(backlog=r.backlog, on_change=r.on_change) for r in rules if r.configured
        }
        state = MaintainState(latest_snapshot_id=latest, counted_snapshot_id=counted, operations=operations)
        source = "snapshot history"
    else:
        source = "maintain state"
    state = replace(state, hours=merge_hours(state.hours, fresh, now_ms, window_ms))
    keep_up = assess(state, now_ms, window_ms, operation_limits(ctx, OPERATIONS), settings.backlog_retry_ms)
    return KeepUpFigures(keep_up=keep_up, hours=state.hours, source=source, window_ms=window_ms)


def _maintain_state(ctx: TableContext, errors: list[str]) -> MaintainState | None:
    try:
        return ctx.store.read_maintain_state()
    except CorruptMetadataError as exc:
        errors.append(f"maintain state unreadable (treated as never maintained): {_one_line(exc)}")
        return None


def since_cutoff(since: dt.timedelta | int | str | None, now_ms: int) -> int | None:
    """The epoch ms ``since`` (a duration: ``7d``, ``12 h``, a timedelta or milliseconds) before ``now_ms``."""
    if since is None:
        return None
    span = duration_arg_ms(since, "since")  # at most 36500 d: the charts' dates stay in range
    if span <= 0:
        raise ValidationError(f"since must be a positive duration, got {since!r}")
    return now_ms - span


def table_report(
    ctx: TableContext,
    *,
    name: str | None = None,
    now_ms: int | None = None,
    since_ms: int | None = None,
    settings: MaintainSettings | None = None,
    parallelism: int | None = None,
) -> TableRetentionReport:
    """Every figure of one table's report (see the module doc). ``since_ms``: leave earlier points out of the
    charts and count keep-up from then (default: the maintainer's keep-up window). Never deletes or writes."""
    started = time.perf_counter()
    settings = settings or MaintainSettings()
    now = resolve_now(now_ms)
    window_ms = settings.keep_up_window_ms if since_ms is None else max(1, now - since_ms)
    store = CachingStore(ctx.io, ctx.layout)
    ctx = ctx.with_store(store)
    errors: list[str] = []
    workers = resolve_parallelism(ctx.options, ctx.io, parallelism)
    try:
        storage = storage_history(store, workers)
    except (TableFormatError, OSError) as exc:
        errors.append(f"storage history: {_one_line(exc)}")
        storage = StorageHistory()
    state = _maintain_state(ctx, errors)
    rules = tuple(_rule(op, ctx, state, now) for op in OPERATIONS)
    errors += [f"{r.operation}: {r.error}" for r in rules if r.error]
    try:
        partitions = _partitions(ctx, rules)
    except (TableFormatError, OSError) as exc:
        errors.append(f"partitions: {_one_line(exc)}")
        partitions = ()
    try:
        keep_up: KeepUpFigures | None = _keep_up(ctx, state, rules, now, window_ms, settings)
    except (TableFormatError, OSError) as exc:
        errors.append(f"keep-up: {_one_line(exc)}")
        keep_up = None
    orphans = next((r for r in rules if r.operation == "remove-orphans"), None)
    orphan_result = orphans.result if orphans is not None else None
    return TableRetentionReport(
        name=name or ctx.url(),
        location=ctx.url(),
        now_ms=now,
        since_ms=since_ms,
        storage=storage,
        partitions=partitions,
        partition_keys=tuple(ctx.schema.partition_keys),
        rules=rules,
        keep_up=keep_up,
        orphan_bytes=orphan_result.orphan_bytes if isinstance(orphan_result, OrphanResult) else None,
        orphan_files=orphan_result.orphan_files if isinstance(orphan_result, OrphanResult) else None,
        errors=tuple(errors),
        seconds=time.perf_counter() - started,
        row_count_kind=row_count_kind(ctx.schema),
        held_bytes=_held_bytes(ctx, errors),
    )


def _held_bytes(ctx: TableContext, errors: list[str]) -> int | None:
    try:
        return sum(held_paths(ctx.store.held_runs()).values())
    except (TableFormatError, OSError) as exc:
        errors.append(f"undo window: {_one_line(exc)}")
        return None


def failed_report(name: str, location: str, now_ms: int, since_ms: int | None, error: str) -> TableRetentionReport:
    """The report of a table that could not be opened."""
    return TableRetentionReport(
        name=name,
        location=location,
        now_ms=now_ms,
        since_ms=since_ms,
        storage=StorageHistory(),
        partitions=(),
        partition_keys=(),
        rules=(),
        keep_up=None,
        orphan_bytes=None,
        orphan_files=None,
        errors=(error,),
    )


def options_with(ctx: TableContext, overrides: Mapping[str, str]) -> TableContext:
    """The context with option overrides applied in memory (the maintainer's ``[tables]`` settings)."""
    return ctx.with_options(overrides)
