"""Maintenance that runs after every successful commit: the registry's after-commit operations, in order."""

from __future__ import annotations

import logging

from tableformat.clock import resolve_now
from tableformat.context import TableContext
from tableformat.errors import TableBusyError
from tableformat.options import WRITE_ONLY

from .kernel import OperationResult, run_operation
from .registry import after_commit_operations

log = logging.getLogger(__name__)


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
    for operation in after_commit_operations():
        try:
            reason = operation.not_applicable(ctx)
            if reason:  # e.g. record expiration on a primary-key table: skipped, never a failure
                if operation.enabled(ctx, now):
                    log.info("%s after commit skipped, not applicable: %s", operation.name, reason)
                continue
            if not operation.enabled(ctx, now):
                continue
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
