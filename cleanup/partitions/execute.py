"""Carry out a partition expiration plan: one mark-delete OVERWRITE snapshot per batch through the Committer.

Nothing is physically deleted: the files stay for the snapshots and tags that still use them, and snapshot
expiration frees their bytes later. Each drop is guarded: it deletes only the files the plan saw, and a
partition that received files after planning (a concurrent append, overwrite or compaction) is left untouched
this run and reported as skipped. Every drop snapshot carries :data:`LAST_RUN_PROPERTY` (the run's time), which
later tablefmt commits carry forward: the after-commit check interval is judged from the latest snapshot alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.commit.committer import ChangeKind, CommitRequest, Committer, PlannedDrop
from tableformat.context import TableContext
from tableformat.options import PARTITION_DEFAULT_NAME
from tableformat.units import human_bytes

from ..kernel import OperationResult
from .plan import PartitionExpirePlan, PlannedPartition, SkippedPartition, display_values

COMMIT_USER_PREFIX = "tablefmt-partition-expiration-"
"""The commit user of every drop snapshot (followed by a per-run id), so history shows what expired partitions."""
LAST_RUN_PROPERTY = "tablefmt.partition-expiration.last-run-ms"
"""Snapshot property: the time (epoch ms) of the latest partition expiration run that dropped something."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionExpireResult(OperationResult):
    """What a partition expiration run marked deleted (or, in a dry run, would)."""

    expired_partitions: tuple[Mapping[str, str], ...] = ()
    """The dropped partitions, oldest first, values as users see them."""
    skipped_partitions: tuple[tuple[Mapping[str, str], str], ...] = ()
    """(partition, reason): partitions never dropped by this run although they might be old (no time, changed)."""
    snapshot_ids: tuple[int, ...] = ()
    """The drop snapshots (none in a dry run)."""
    files: int = 0
    rows: int = 0
    bytes: int = 0
    """Bytes of the files marked deleted: reclaimable once snapshot expiration removes the snapshots (and tags)
    that still use them."""

    def to_json(self) -> dict[str, Any]:
        document = OperationResult.to_json(self)
        document.update(
            expired_partitions=[dict(p) for p in self.expired_partitions],
            skipped_partitions=[{"partition": dict(p), "reason": r} for p, r in self.skipped_partitions],
            snapshot_ids=list(self.snapshot_ids),
            dropped_files=self.files,
            dropped_records=self.rows,
            reclaimable_bytes=self.bytes,
        )
        return document

    def summary(self) -> tuple[str, ...]:
        verb = "would drop" if self.dry_run else "dropped"
        lines = [
            f"expire-partitions: {verb} {len(self.expired_partitions)} partition(s): {self.files} file(s), "
            f"{self.rows} row(s), {human_bytes(self.bytes)} marked deleted"
            + (f" in snapshot(s) {', '.join(map(str, self.snapshot_ids))}" if self.snapshot_ids else "")
        ]
        lines += [f"  {_spec_text(p)}" for p in self.expired_partitions]
        lines += [f"skipped {_spec_text(p)}: {reason}" for p, reason in self.skipped_partitions]
        return tuple(lines + [f"note: {note}" for note in self.notes])


def _spec_text(partition: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in partition.items())


def _notes(plan: PartitionExpirePlan, marked: int) -> tuple[str, ...]:
    notes = []
    if plan.waiting:
        notes.append(f"{plan.waiting} more expired partition(s) wait for the next run (partition.expiration-max-num)")
    if marked:
        notes.append("the bytes are freed by snapshot expiration once no retained snapshot or tag uses the files")
    return tuple(notes)


def _result(
    plan: PartitionExpirePlan,
    dropped: list[PlannedPartition],
    skipped: list[SkippedPartition],
    snapshot_ids: tuple[int, ...],
    dry_run: bool,
) -> PartitionExpireResult:
    marked = sum(len(p.records) for p in dropped)
    return PartitionExpireResult(
        dry_run=dry_run,
        expired_partitions=tuple(p.display for p in dropped),
        skipped_partitions=tuple((s.display, s.reason) for s in skipped),
        snapshot_ids=snapshot_ids,
        files=marked,
        rows=sum(p.rows for p in dropped),
        bytes=sum(p.bytes for p in dropped),
        notes=_notes(plan, marked),
        backlog=plan.waiting + len(plan.expired) - len(dropped),
    )


def planned_result(plan: PartitionExpirePlan) -> PartitionExpireResult:
    """The dry run: exactly what :func:`execute_partition_expiration` drops if the table does not change."""
    return _result(plan, list(plan.expired), list(plan.skipped), (), dry_run=True)


def execute_partition_expiration(ctx: TableContext, plan: PartitionExpirePlan) -> PartitionExpireResult:
    """Commit one guarded drop snapshot per batch; report the partitions actually dropped."""
    schema = ctx.store.latest_schema()
    committer = Committer(ctx.store, schema)
    user = f"{COMMIT_USER_PREFIX}{uuid.uuid4()}"
    default_name = ctx.options.require(PARTITION_DEFAULT_NAME)
    dropped: list[PlannedPartition] = []
    skipped = list(plan.skipped)
    snapshot_ids: list[int] = []
    base = plan.base  # while the table holds only our own drops since planning, each batch commits as planned
    for number, batch in enumerate(plan.batches, start=1):
        request = CommitRequest(
            kind=ChangeKind.DROP,
            overwrite_scope=tuple(p.spec for p in batch),
            commit_user=user,
            commit_identifier=number,
            properties={LAST_RUN_PROPERTY: str(plan.now_ms)},
            planned=PlannedDrop(base, [r for p in batch for r in p.records]),  # guards the drop: only these files
        )
        outcome = committer.commit(request)
        base = outcome.snapshot if outcome.created and outcome.used_plan else None
        changed = [display_values(c, schema.partition_fields, default_name) for c in outcome.changed_partitions]
        for partition in batch:
            if partition.display in changed:
                skipped.append(SkippedPartition(partition.display, "files were added after planning; not dropped"))
            elif outcome.created:
                dropped.append(partition)
            else:
                skipped.append(SkippedPartition(partition.display, "its files were removed concurrently; not dropped"))
        if outcome.created and outcome.snapshot is not None:
            snapshot_ids.append(outcome.snapshot.id)
    return _result(plan, dropped, skipped, tuple(snapshot_ids), dry_run=False)
