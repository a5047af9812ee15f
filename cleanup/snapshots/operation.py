"""Snapshot expiration as a registered operation: journals left by interrupted runs are finished first, then the
new plan is carried out (``expire_snapshots`` is the one-call form the API and the CLI use)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from tableformat.context import TableContext
from tableformat.data_paths import require_data_inside_root
from tableformat.errors import MaintenanceError, ValidationError
from tableformat.io.metered import DELETE, LIST, PUT, batches, settling_requests
from tableformat.lazy_module import lazy_module
from tableformat.option_types import INT32_MAX
from tableformat.options import (
    FILE_OPERATION_THREAD_NUM,
    MAINTAIN_INTERVAL,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
)
from tableformat.parallel import Workers, executor

from ..kernel import Cadence, Operation, Parameter, Progress
from .config import ExpireConfig

if TYPE_CHECKING:
    from . import audit_reasons as reasons
    from . import changelog_expiry as changelog_expiring
    from . import execute as execution
    from . import journal as journal_files
    from . import metadata as metadata_reads
    from . import plan as planning
    from .planned import ExpirePlan
    from .result import ExpireResult
else:  # imported when the operation runs, not when the registry is read (start-up: docs/benchmarks.md)
    reasons = lazy_module("tableformat.cleanup.snapshots.audit_reasons")
    changelog_expiring = lazy_module("tableformat.cleanup.snapshots.changelog_expiry")
    execution = lazy_module("tableformat.cleanup.snapshots.execute")
    journal_files = lazy_module("tableformat.cleanup.snapshots.journal")
    metadata_reads = lazy_module("tableformat.cleanup.snapshots.metadata")
    planning = lazy_module("tableformat.cleanup.snapshots.plan")

log = logging.getLogger(__name__)

_ROOT_DIRS = ("snapshot/", "changelog/", "tag/")
"""Files of these directories are deleted in their own step (before the files the roots named)."""


@dataclass(frozen=True, slots=True)
class ExpirationRun:
    """Everything one run does: journals to finish (path, plan), stale journals to discard, and the new plan."""

    pending: tuple[tuple[str, ExpirePlan], ...]
    stale: tuple[str, ...]
    plan: ExpirePlan
    changelogs: ExpirePlan | None = None
    """Decoupled lifecycle: the changelog expiration of the long-lived changelogs present when planning (a real run
    plans it again after snapshot expiration when that wrote new ones)."""


class SnapshotExpiration(Operation[ExpireConfig, ExpirationRun, "ExpireResult"]):
    """Expire snapshots, tags past their time-retained and expired consumers, with the files only they used."""

    name = "expire"
    summary = "expire old snapshots and delete the files only they used"
    after_commit = True
    parameters: tuple[Parameter, ...] = (
        Parameter("retain_min", "int", "keep at least the newest N snapshots", SNAPSHOT_NUM_RETAINED_MIN),
        Parameter("retain_max", "int", "keep at most the newest N snapshots", SNAPSHOT_NUM_RETAINED_MAX),
        Parameter(
            "time_retained",
            "duration",
            "expire a snapshot once its successor is older than this",
            SNAPSHOT_TIME_RETAINED,
        ),
        Parameter("limit", "int", "at most N snapshots per run", SNAPSHOT_EXPIRE_LIMIT),
        Parameter("parallelism", "int", "threads for reads and deletes", FILE_OPERATION_THREAD_NUM),
    )

    limit_option = "snapshot.expire.limit"
    prunes_audit = True

    def audit_reasons(self, ctx: TableContext, plan: ExpirationRun, config: ExpireConfig) -> Callable[[str], str]:
        plans = [(journaled, True) for _, journaled in plan.pending] + [(plan.plan, False)]
        if plan.changelogs is not None:
            plans.append((plan.changelogs, False))
        return reasons.expiration_reasons(ctx.layout, plans, config)

    def cadence(self, ctx: TableContext) -> Cadence:
        """Every ``maintenance.check-interval`` (tags and snapshots age), and after every change."""
        return Cadence(interval_ms=ctx.options.require(MAINTAIN_INTERVAL), on_change=True)

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> ExpireConfig:
        config = ExpireConfig.resolve(ctx.options, **overrides)
        require_data_inside_root(ctx.options, ctx.url(), "expire snapshots of")
        return config

    def plan(self, ctx: TableContext, config: ExpireConfig, now_ms: int) -> ExpirationRun:
        """On object stores the pending journals are listed (and read) while the planner makes its first reads,
        which do not depend on them: one round trip less; the planner takes them once those reads are done."""
        with Workers(config.parallelism) as workers, executor(2 if ctx.io.is_object_store else 1, "journals") as pool:
            gathered = pool.submit(_journals, ctx, workers)

            def pending() -> list[ExpirePlan]:
                return [p for _, p in gathered.result()[0]]

            plan = planning.plan_expiration(ctx, config, now_ms, pending=pending, workers=workers)
            found, stale = gathered.result()
            changelogs = changelog_expiring.plan_changelog_expiration(ctx, config, now_ms, workers)
        return ExpirationRun(tuple(found), tuple(stale), plan, changelogs)

    def changes(self, plan: ExpirationRun) -> bool:
        changelogs = plan.changelogs is not None and not plan.changelogs.is_empty
        return bool(plan.pending or plan.stale or not plan.plan.is_empty or changelogs)

    def still_valid(self, ctx: TableContext, plan: ExpirationRun) -> bool:
        """The snapshot the plan keeps as the first (``end``) still holds what planning read: a rollback that ended
        between planning and the claim to a snapshot before it removed it (and a later commit may reuse its id), and
        the plan would then expire what the rollback kept. A rollback to ``end`` or later keeps everything the plan
        relies on: expiring below ``end`` then is what expiring before that rollback would have done."""
        new = plan.plan
        if new.is_empty or new.end is None:
            return True
        found = ctx.store.try_read_snapshot(new.end)
        wanted = dict(new.fingerprints).get(new.end)
        return found is not None and (wanted is None or found.base_manifest_list == wanted)

    def execution_requests(self, plan: ExpirationRun, result: ExpireResult) -> Mapping[str, int]:
        """Per plan carried out: its journal written and removed, EARLIEST moved; the snapshot, changelog and tag
        files deleted, the tags, branches and changelogs listed again; the existence of the other files settled
        (kernel/cost.py: a listing per directory of four or more, else a HEAD each), then they are deleted."""
        changelogs = plan.changelogs is not None and not plan.changelogs.is_empty
        plans = len(plan.pending) + (not plan.plan.is_empty) + changelogs
        roots = [path for path in result.deleted_paths if path.startswith(_ROOT_DIRS)]
        files = [path for path in result.deleted_paths if not path.startswith(_ROOT_DIRS)]
        needed = Counter({PUT: 2 * plans, DELETE: plans + batches(len(roots)) + batches(len(files)), LIST: 3 * plans})
        needed.update(settling_requests(files))
        return needed

    def preview(self, ctx: TableContext, plan: ExpirationRun) -> ExpireResult:
        results = []
        with Workers(1) as workers:
            for _, journaled in plan.pending:
                done = execution.planned_result(
                    execution._remaining(ctx, execution.protect_new_tags(ctx, journaled, workers), workers)
                )
                results.append(replace(done, completed_journals=(journaled.plan_id,)))
        results.append(execution.planned_result(plan.plan))
        if plan.changelogs is not None and not plan.changelogs.is_empty:  # the backlog stays the snapshot plan's
            results.append(replace(execution.planned_result(plan.changelogs), backlog=plan.plan.backlog))
        return execution._merge(results, dry_run=True, earliest=_earliest(ctx, plan.plan))

    def execute(
        self, ctx: TableContext, plan: ExpirationRun, config: ExpireConfig, progress: Progress | None
    ) -> ExpireResult:
        results = []
        hint = execution.EarliestHint.of(plan.plan)  # read by the planner: not read again
        with Workers(config.parallelism) as workers:
            for path in plan.stale:
                journal_files.remove_journal(
                    ctx, path
                )  # nothing it lists is deleted: its snapshots hold other content now
            for path, journaled in plan.pending:
                done = execution._complete(ctx, journaled, path, config, progress, workers, hint)
                results.append(replace(done, completed_journals=(journaled.plan_id,)))
            new = plan.plan
            if new.is_empty and new.end is not None:
                execution.write_missing_earliest(ctx, new.end, hint)
            result = execution.execute_expiration(
                ctx, new, config=config, progress=progress, workers=workers, hint=hint, fresh=True
            )
            results.append(result)
            changelogs = plan.changelogs
            if config.changelog_decoupled:  # planned again: snapshot expiration may have written long-lived changelogs
                changelogs = changelog_expiring.plan_changelog_expiration(ctx, config, new.now_ms, workers)
            if changelogs is not None and not changelogs.is_empty:
                done = execution.execute_expiration(ctx, changelogs, config=config, workers=workers, fresh=True)
                results.append(replace(done, backlog=result.backlog))  # the backlog stays the snapshot plan's
        return execution._merge(results, dry_run=False, earliest=_earliest(ctx, plan.plan))


def _journals(ctx: TableContext, workers: Workers) -> tuple[list[tuple[str, ExpirePlan]], list[str]]:
    """Pending journals (path, plan) to complete, and stale ones to discard."""
    try:
        journals = journal_files.list_journals(ctx)
    except OSError as exc:
        raise MaintenanceError(f"cannot list pending expiration journals: {exc}") from exc
    pending: list[tuple[str, ExpirePlan]] = []
    stale: list[str] = []
    for path in journals:
        journaled = journal_files.read_journal(ctx, path)
        if journaled is None:
            continue
        if execution._stale(ctx, journaled, metadata_reads.MetadataCache(ctx, workers)):
            log.warning("expiration journal %s no longer matches the table; it is discarded", path)
            stale.append(path)
        else:
            pending.append((path, journaled))
    return pending, stale


def _earliest(ctx: TableContext, plan: ExpirePlan) -> int | None:
    return plan.end if plan.end is not None else ctx.store.earliest_snapshot_id()


SNAPSHOT_EXPIRATION = SnapshotExpiration()


class TagDeletion(SnapshotExpiration):
    """``tag delete``: an expiration that expires no snapshot and deletes one tag with the files only it held (as
    Paimon's tag deletion does; deleting the tag file alone would leave them named by retained manifests' history,
    so no cleanup would ever delete them). Not registered: run by ``Table.delete_tag``, never scheduled."""

    name = "tag delete"
    summary = "delete a tag and the files only it held"
    parameters = (Parameter("tag", "text", "the tag to delete"),)
    prunes_audit = False

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> ExpireConfig:
        tag = overrides.get("tag")
        if not tag:
            raise ValidationError("tag delete needs the tag's name")
        kept = ExpireConfig.resolve(ctx.options, retain_min=INT32_MAX, retain_max=INT32_MAX)  # no snapshot expires
        require_data_inside_root(ctx.options, ctx.url(), "delete a tag of")
        return replace(kept, delete_tags=frozenset({str(tag)}), consumer_expiration_ms=None)

    def wanted(self, ctx: TableContext) -> bool:
        return False


TAG_DELETION = TagDeletion()
