"""Maintenance that runs after every successful commit: the registry's after-commit operations, in order."""

from __future__ import annotations

import logging
from typing import Any

from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.errors import TableBusyError, TableFormatError
from tableformat.options import WRITE_ONLY

from .kernel import Operation, OperationResult, run_operation
from .registry import after_commit_operations

log = logging.getLogger(__name__)


def own_operations(ctx: TableContext, now_ms: int, *, after_commit: bool) -> list[Operation[Any, Any, Any]]:
    """A table's own maintenance, in the registry's order: the after-commit operations that apply to the table and
    that its options want (``Operation.wanted``); right after a commit (``after_commit``), only those also due then
    (``Operation.due_after_commit``: partition expiration's check interval). The after-commit hook runs them, and
    so does ``tableformat.spark.maintain``. An operation that does not apply (record expiration on a primary-key
    table) is skipped, and logged when the options want it."""
    selected: list[Operation[Any, Any, Any]] = []
    for operation in after_commit_operations():
        if not operation.wanted(ctx):
            continue
        reason = operation.not_applicable(ctx)
        if reason:
            log.info(
                "%s%s skipped, not applicable: %s", operation.name, " after commit" if after_commit else "", reason
            )
        elif not after_commit or _due(operation, ctx, now_ms):
            selected.append(operation)
    return selected


def _due(operation: Operation[Any, Any, Any], ctx: TableContext, now_ms: int) -> bool:
    try:
        return operation.due_after_commit(ctx, now_ms)
    except TableFormatError as exc:  # e.g. a bad check interval: run it, and let the run report what it can
        log.warning("%s: cannot tell whether it is due (%s); running it", operation.name, exc)
        return True


def run_after_commit(ctx: TableContext, now_ms: int | None = None) -> list[OperationResult]:
    """Run every after-commit operation the table's options enable, unless ``write-only=true`` (then nothing).

    One operation's failure does not keep the later ones from running (a misconfigured partition expiration must
    not stop snapshot expiration); once all have run, the first error propagates to the caller
    (Table._after_commit), which logs it without failing the commit: the snapshot is already durable, and an
    interrupted expiration is finished by the next run through its journal.
    """
    if ctx.options.require(WRITE_ONLY):
        return []
    results: list[OperationResult] = []
    now = resolve_now(now_ms)
    errors: list[Exception] = []
    for operation in own_operations(ctx, now, after_commit=True):
        try:
            result = run_operation(operation, ctx, now_ms=now)
        except TableBusyError as exc:  # a rollback holds the table: nothing changed, the next commit runs it again
            log.info("%s after commit skipped: %s", operation.name, exc)
            continue
        except Exception as exc:  # the others still run; the first error is raised below
            log.warning("%s after commit failed: %s", operation.name, exc)
            errors.append(exc)
            continue
        if result.did_something():
            log.info("after commit: %s", result.headline())
        results.append(result)
    if errors:
        raise errors[0]
    return results
