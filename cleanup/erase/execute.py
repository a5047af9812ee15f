"""Carry out an erasure: the matching files are rewritten without their matching rows by the shared rewriter, one
guarded snapshot per batch (DELETE of exactly those files + ADD of the new ones; a file a concurrent commit removed
is left out and reported, rows a concurrent writer appends are never touched). Then, with ``purge``, snapshot
expiration runs with its retention overridden so that every snapshot older than the erasure's expires (and only
those: the erasure's snapshot and every later one are kept), deleting the old files at once unless a tag, a branch
or a consumer still holds them; those are named in ``pinned_by``.

The audit ledger (a ``.tablefmt/audit/`` record per deleting run) hooks in at :func:`execute_erase`'s end and
:func:`planned_result`: the result carries what a record needs (snapshots, rows, files, pins, purge, deadline) and
never the filter's values (they are the personal data erased).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from tableformat.context import TableContext
from tableformat.model.erasure import PendingErasure
from tableformat.model.manifest import ManifestEntry
from tableformat.model.snapshot import CommitKind
from tableformat.option_types import INT32_MAX
from tableformat.parallel import resolve_parallelism
from tableformat.units import iso_from_ms

from ..kernel import Progress
from ..kernel.parameters import coerce_overrides
from ..rewrite import (
    REPLANS,
    CommitSettings,
    RewriteOutcome,
    Rewriter,
    RewriteUnit,
    batches,
    replan_notes,
    run_replanning,
)
from ..snapshots import SNAPSHOT_EXPIRATION, ExpireResult
from .held import delete_held_matches, delete_unnamed, finish_pending, window_matches
from .pins import Pin, RootFiles, pins_text
from .plan import EraseConfig, ErasePlan, held_matches, plan_erase
from .predicate import EraseFilter
from .result import EraseResult
from .tags import TagRewrite, rewrite_tags, tags_holding

COMMIT_USER_PREFIX = "tablefmt-erase-"
"""The commit user of every snapshot an erasure writes (followed by a per-run id)."""
DEADLINE_PROPERTY = "tablefmt.erase.deadline-ms"
"""Snapshot property: when the files an erasure replaced must be gone (epoch ms)."""


@dataclass(frozen=True, slots=True)
class Purge:
    """What the purge's snapshot expiration did (or would do)."""

    snapshot_ids: tuple[int, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    deleted_bytes: int = 0
    notes: tuple[str, ...] = ()

    def plus(self, paths: Sequence[str], size: int, *notes: str) -> Purge:
        """This purge and the files ``paths`` (``size`` bytes) deleted (or, dry, to delete) besides, with ``notes``."""
        return Purge(self.snapshot_ids, (*self.deleted_paths, *paths), self.deleted_bytes + size, (*self.notes, *notes))


def _units(plan: ErasePlan) -> list[RewriteUnit]:
    return [RewriteUnit(f.entry.partition, f.entry.bucket, f.entry.total_buckets, (f.entry,)) for f in plan.files]


def _expire_overrides(ctx: TableContext, keep: int, expire: int) -> dict[str, int]:
    return coerce_overrides(
        SNAPSHOT_EXPIRATION.name,
        SNAPSHOT_EXPIRATION.parameters,
        {"retain_min": keep, "retain_max": keep, "limit": max(1, min(expire, INT32_MAX))},
    )


def _purge_notes(expired: ExpireResult, keep_from: int | None) -> tuple[str, ...]:
    finished = ("finished an interrupted expiration (its journal) first",) if expired.completed_journals else ()
    if not expired.expired_snapshot_ids:
        return finished
    ids = expired.expired_snapshot_ids
    return (
        *finished,
        f"purge expired snapshot(s) {min(ids)}..{max(ids)}, overriding snapshot.num-retained.min/max and "
        f"snapshot.time-retained for those only (snapshots from {keep_from} on are kept by the table's retention)",
    )


def purge_through(ctx: TableContext, keep_from: int, now_ms: int, progress: Progress | None, dry_run: bool) -> Purge:
    """Run snapshot expiration so that every snapshot before ``keep_from`` expires and ``keep_from`` and all later
    ones are kept; the expiration's own rules still keep what tags, branches and consumers hold."""
    latest = ctx.store.latest_snapshot_id()
    earliest = ctx.store.earliest_snapshot_id()
    if latest is None or earliest is None:
        return Purge()  # with nothing to expire the expiration still runs: it finishes an interrupted purge
    keep = latest - keep_from + 1
    overrides = _expire_overrides(ctx, keep, keep_from - earliest)
    config = SNAPSHOT_EXPIRATION.configure(ctx, overrides)
    run = SNAPSHOT_EXPIRATION.plan(ctx, config, now_ms)
    if dry_run:
        expired = SNAPSHOT_EXPIRATION.preview(ctx, run)
    else:
        expired = SNAPSHOT_EXPIRATION.execute(ctx, run, config, progress)
    return Purge(expired.expired_snapshot_ids, expired.deleted_paths, expired.deleted_bytes,
                 _purge_notes(expired, keep_from))  # fmt: skip


def with_held(ctx: TableContext, row_filter: EraseFilter, purge: Purge, *, dry_run: bool) -> Purge:
    """``purge`` plus the files the undo window holds that hold erased rows (held.py): listed, or deleted."""
    matches = window_matches(ctx, row_filter)
    if not matches.files:
        return purge
    failures: list[str] = []
    if dry_run:
        paths, size = [p for p, _ in matches.files], sum(s for _, s in matches.files)
    else:
        paths, size, failures = delete_held_matches(ctx, matches, resolve_parallelism(ctx.options, ctx.io, None))
    notes = [matches.note(None if dry_run else len(paths))]
    notes += [f"could not delete {len(failures)} held file(s) with erased rows: {failures[0]}"] if failures else []
    return purge.plus(paths, size, *notes)


def _rewrite_tags(ctx: TableContext, config: EraseConfig, known: set[str], marker: int, now_ms: int,
                  manifests: dict[str, list[ManifestEntry]]) -> TagRewrite:  # fmt: skip
    """Rewrite the tags holding erased rows (tags.py), recording their old files as a pending erasure due now
    first: a crash before those are deleted leaves them to ``tablefmt maintain``."""
    roots = RootFiles(ctx, manifests)
    tags = tags_holding(roots.holding(held_matches(ctx, config.filter, roots, roots.latest_names(), known=known)))
    if not tags:
        return TagRewrite()

    def record(replaced: tuple[str, ...]) -> None:
        ctx.store.write_pending_erasure(PendingErasure(marker, now_ms, replaced))

    return rewrite_tags(ctx, config.filter, tags, config.target_size, dry_run=False, before_writing=record)


def _tags_note(tagged: TagRewrite) -> str:
    return f"rewrote tag(s) {', '.join(tagged.tags)} without the erased rows" if tagged.tags else ""


def _with_freed(ctx: TableContext, paths: Sequence[str], purge: Purge, note: str = "") -> Purge:
    """``purge`` plus those of ``paths`` (old files of rewritten tags) that no root names any more, deleted now."""
    if not paths:
        return purge
    unnamed = delete_unnamed(ctx, paths, resolve_parallelism(ctx.options, ctx.io, None))
    return purge.plus(unnamed.deleted, unnamed.deleted_bytes, *([note] if note else []))


def _with_due(ctx: TableContext, now_ms: int, purge: Purge) -> Purge:
    """``purge`` plus the files of earlier erasures past their deadline that no root names any more (a run that
    stopped after rewriting a tag left its old files to this): deleted, their record gone once none is left."""
    due = [p for p in ctx.store.pending_erasures() if p.deadline_ms <= now_ms]
    if not due:
        return purge
    unnamed, _ = finish_pending(ctx, due, resolve_parallelism(ctx.options, ctx.io, None))
    return purge.plus(unnamed.deleted, unnamed.deleted_bytes)


def execute_erase(ctx: TableContext, plan: ErasePlan, config: EraseConfig, progress: Progress | None) -> EraseResult:
    """Rewrite in guarded batches, purge when asked; report what was committed and deleted."""
    deadline = plan.now_ms + config.deadline_ms
    settings = CommitSettings(
        commit_user=f"{COMMIT_USER_PREFIX}{uuid.uuid4()}",
        snapshot_kind=CommitKind.OVERWRITE,
        properties={DEADLINE_PROPERTY: str(deadline)},
    )
    rewriter = Rewriter(ctx, None, config.target_size, settings, plan.base_snapshot_id, keep_rows=config.filter.kept)
    outcome = RewriteOutcome()
    plans: list[ErasePlan] = []

    def run(current: ErasePlan) -> None:
        plans.append(current)
        rewriter.rebase(current.base_snapshot_id)
        for batch in batches(_units(current), config.commit_max_files):
            rewriter.rewrite(batch, outcome)

    lost_rewriting, abandoned, rounds = _rewrite_until_settled(ctx, plan, config, outcome, run)
    paths = {f.entry.identifier(): f.path for p in plans for f in p.files}
    rewritten = tuple(paths[e.identifier()] for e in outcome.replaced)
    purge, tagged = Purge(), TagRewrite()
    known = {e.file.file_name for e in outcome.replaced}
    manifests = {name: entries for p in plans for name, entries in p.manifests.items()}
    marker = max(outcome.snapshot_ids) if outcome.snapshot_ids else ctx.store.latest_snapshot_id()
    if config.purge:
        if config.include_tags and marker is not None:
            tagged = _rewrite_tags(ctx, config, known, marker, plan.now_ms, manifests)
        if marker is not None:
            purge = purge_through(ctx, marker, plan.now_ms, progress, dry_run=False)
        purge = with_held(ctx, config.filter, purge, dry_run=False)
        purge = _with_freed(ctx, tagged.replaced, purge, _tags_note(tagged))
        purge = _with_due(ctx, plan.now_ms, purge)
    roots = RootFiles(ctx, manifests)
    pins = list(roots.holding(held_matches(ctx, config.filter, roots, roots.latest_names(), known=known)))
    if pins and marker is not None and (outcome.snapshot_ids or tagged.tags):  # maintain completes it (deadline.py)
        files = tuple(sorted({*rewritten, *tagged.replaced}))
        ctx.store.write_pending_erasure(PendingErasure(marker, deadline, files))
    elif tagged.tags and marker is not None:
        ctx.store.delete_pending_erasure(marker)  # the tags' old files are gone
    lost = tuple(i for p in plans for i in p.lost_races) + lost_rewriting
    return EraseResult(
        snapshot_id=max(outcome.snapshot_ids) if outcome.snapshot_ids else None,
        snapshot_ids=tuple(outcome.snapshot_ids),
        erased_rows=outcome.rows_in - outcome.rows_out + tagged.erased_rows,
        rewritten_paths=rewritten,
        rewritten_bytes=sum(e.file.file_size for e in outcome.replaced),
        rewritten_tags=tagged.tags,
        written_paths=tuple(ctx.layout.relative(f.path) for f in outcome.written),
        pinned_by=tuple(pins),
        purged_snapshot_ids=purge.snapshot_ids,
        deleted_paths=purge.deleted_paths,
        deleted_bytes=purge.deleted_bytes,
        deadline_ms=deadline if pins else None,
        filter_description=config.filter.description,
        skipped_files=tuple((paths[u.files[0].identifier()], reason) for u, reason in abandoned),
        notes=_race_notes(rounds) + tagged.notes + _notes(replan_notes(lost), purge, pins, deadline if pins else None),
        backlog=len(abandoned),
    )


def _rewrite_until_settled(
    ctx: TableContext, plan: ErasePlan, config: EraseConfig, outcome: RewriteOutcome, run: Callable[[ErasePlan], None]
) -> tuple[tuple[int, ...], list[tuple[RewriteUnit, str]], int]:
    """Run the plan; while a concurrent commit replaced files it was rewriting (their units abandoned by the guarded
    commit), plan again on the latest snapshot and run that, at most :data:`REPLANS` more times: an erasure does not
    leave matching rows behind because of a race. Returns the snapshots lost while rewriting, the units still
    abandoned after the last round, and the extra rounds made."""
    lost: list[int] = []
    current, rounds = plan, 0
    while True:
        seen = len(outcome.abandoned)
        _final, lost_now = run_replanning(current, lambda: plan_erase(ctx, config, plan.now_ms), run)
        lost += lost_now
        fresh = outcome.abandoned[seen:]
        if not fresh or rounds >= REPLANS:
            return tuple(lost), fresh, rounds
        rounds += 1
        current = plan_erase(ctx, config, plan.now_ms)


def _race_notes(rounds: int) -> tuple[str, ...]:
    if not rounds:
        return ()
    return (
        f"a concurrent commit replaced files this erasure was rewriting; it planned again {rounds} time(s) on the "
        "latest snapshot and erased the rows from the files that replaced them",
    )


def _notes(replans: tuple[str, ...], purge: Purge, pins: Sequence[Pin], deadline: int | None) -> tuple[str, ...]:
    notes = [*replans, *purge.notes]
    if deadline is not None:
        texts = pins_text(pins)
        holders = ", ".join(texts[:5]) + (", ..." if len(texts) > 5 else "")
        notes.append(
            f"erased rows are still held by {holders}; erase.deadline: they must be gone by {iso_from_ms(deadline)} "
            "(erase --purge expires the snapshots; tags and branches must be deleted by their owners)"
        )
    return tuple(notes)


def planned_result(ctx: TableContext, plan: ErasePlan) -> EraseResult:
    """The dry run: exactly the files the real run rewrites, the rows it erases, the snapshots and data files its
    purge removes and the roots left holding erased rows, if the table does not change meanwhile. (The purge's
    manifests and manifest lists are those of the snapshots expired; the erasure's own snapshot, not yet written,
    changes which manifests the latest snapshot shares.)"""
    config = plan.config
    roots = RootFiles(ctx, dict(plan.manifests))  # the plan's own mapping stays as planned
    planned = {f.entry.file.file_name for f in plan.files}
    names = held_matches(ctx, config.filter, roots, roots.latest_names(), known=planned)
    holders = roots.holding(names)
    pins = list(holders)
    purge = Purge()
    if config.purge and plan.base_snapshot_id is not None:
        keep_from = plan.base_snapshot_id + (1 if plan.files else 0)
        purge = _planned_purge(ctx, keep_from, plan, holders)
        purged = set(purge.snapshot_ids)
        pins = [p for p in pins if not (p.kind == "snapshot" and p.snapshot_id in purged)]
        held = {p.snapshot_id for p in pins if p.kind == "snapshot"}
        pins = [p for p in pins if p.kind != "consumer" or p.snapshot_id in held]
    tagged = TagRewrite()
    if config.purge:
        purge = with_held(ctx, config.filter, purge, dry_run=True)
        if config.include_tags:
            tagged, pins, purge = _planned_tags(ctx, config, holders, pins, purge)
    deadline = plan.now_ms + config.deadline_ms if pins else None
    return EraseResult(
        dry_run=True,
        rewritten_tags=tagged.tags,
        erased_rows=plan.erased_rows,
        rewritten_paths=tuple(f.path for f in plan.files),
        rewritten_bytes=sum(f.entry.file.file_size for f in plan.files),
        pinned_by=tuple(pins),
        purged_snapshot_ids=purge.snapshot_ids,
        deleted_paths=purge.deleted_paths,
        deleted_bytes=purge.deleted_bytes,
        deadline_ms=deadline,
        filter_description=config.filter.description,
        notes=tagged.notes + _notes(replan_notes(plan.lost_races), purge, pins, deadline),
    )


def _planned_tags(
    ctx: TableContext, config: EraseConfig, holders: Mapping[Pin, frozenset[str]], pins: list[Pin], purge: Purge
) -> tuple[TagRewrite, list[Pin], Purge]:
    """The tags the real run rewrites, the pins left without them, and the purge plus the tags' old files that no
    remaining pin names (deleted by the real run once the tags no longer name them)."""
    tagged = rewrite_tags(ctx, config.filter, tags_holding(holders), config.target_size, dry_run=True)
    left = [p for p in pins if not (p.kind == "tag" and p.name in tagged.tags)]
    still = {name for p in left for name in holders.get(p, frozenset())}
    known = set(purge.deleted_paths)
    freed = [path for path in tagged.replaced if path.rsplit("/", 1)[-1] not in still and path not in known]
    size = sum(ctx.io.file_size(ctx.layout.join(path)) for path in freed)
    return tagged, left, purge.plus(freed, size)


def _planned_purge(ctx: TableContext, keep_from: int, plan: ErasePlan, holders: Mapping[Pin, frozenset[str]]) -> Purge:
    """The purge the real run makes once its snapshot ``keep_from`` exists: the expiration planned now keeping the
    latest snapshot, plus the latest snapshot itself and the rewritten files when nothing keeps them."""
    latest = plan.base_snapshot_id
    assert latest is not None
    now = purge_through(ctx, min(keep_from, latest), plan.now_ms, None, dry_run=True)
    if keep_from <= latest:
        return now
    consumers = [c.next_snapshot for c in ctx.store.consumers()]
    earliest = ctx.store.earliest_snapshot_id() or latest
    reaches = set(now.snapshot_ids) == set(range(earliest, latest)) and not any(n <= latest for n in consumers)
    if not reaches:
        return now
    kept = {name for pin, names in holders.items() if pin.kind in ("tag", "branch", "changelog") for name in names}
    files = [f for f in plan.files if f.entry.file.file_name not in kept]
    metadata = _latest_snapshot_files(ctx, latest)
    sizes = sum(ctx.io.file_size(ctx.layout.join(path)) for path in metadata)
    return Purge(
        (*now.snapshot_ids, latest),
        (*now.deleted_paths, *metadata, *(f.path for f in files)),
        now.deleted_bytes + sizes + sum(f.entry.file.file_size for f in files),
        _purge_notes(ExpireResult(expired_snapshot_ids=(*now.snapshot_ids, latest)), keep_from),
    )


def _latest_snapshot_files(ctx: TableContext, latest: int) -> tuple[str, ...]:
    """The files expiring the (current) latest snapshot deletes besides data files: its snapshot file, and its
    manifest lists unless a tag or a branch names the same snapshot (and so the same lists)."""
    snapshot = ctx.store.read_snapshot(latest)
    paths = [ctx.layout.relative(ctx.layout.snapshot_file(latest))]
    tagged = any(tag.snapshot.id == latest for tag in ctx.store.tags()) or ctx.store.branches_holding(snapshot)
    if not tagged:
        paths += [ctx.layout.relative(ctx.layout.manifest_file(name)) for name in snapshot.manifest_lists()]
    return tuple(paths)
