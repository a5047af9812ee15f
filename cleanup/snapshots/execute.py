"""Snapshot expiration: ``expire_snapshots`` = complete pending journals, ``plan_expiration``, ``execute_expiration``.

Execution order, designed so that a crash at any point followed by a re-run finishes the job and so that no
reader of a retained snapshot or tag ever meets a missing file:

1. write the journal (the exact plan) under ``expire-journal/``; if that fails nothing is deleted;
2. advance ``snapshot/EARLIEST`` to the plan's end (never backwards). On object stores steps 1 and 2 go out
   together: nothing is deleted before both are answered, and either may land without the other (elsewhere 1, then
   2, as before). EARLIEST without the journal is a hint ahead of the first snapshot: readers and planners check that
   the snapshot before the hint is gone and otherwise list (G11), so the next run plans from the real first
   snapshot and expires the same range again; the journal without EARLIEST is the state a crash between the two
   always left (the re-run completes the journal and advances EARLIEST). Neither deletes a file;
3. delete expired consumer files (re-checked: a consumer updated since planning is kept);
4. delete the expired snapshot files, ascending: from here on nobody can start reading them, and a reader gets
   "snapshot does not exist" rather than a missing data file;
5. delete expired tag files (only if the tag still holds the planned snapshot);
6. re-read the tag set: files of a tag created since planning on an expired snapshot are dropped from the plan;
   an unreadable tag stops the run (the journal stays, a re-run retries);
7. delete data files (and their extra files), manifests and manifest lists, in one step (batches in parallel; on
   S3 one listing per directory settles which exist, asked when step 4 starts, see _data_step; then DeleteObjects
   of up to 1,000 keys). Nothing references them any more once step 4 is done, so their order among themselves
   does not matter: a crash leaves the journal, which lists each by path;
8. remove empty partition/bucket directories (optional, never on object stores, never recursive);
9. remove the journal.

A later run first completes every journal it finds (after the same tag re-check), counting its snapshots against
its own limit, then plans from the state the journal left. A journal whose snapshots no longer match the table
(ids reused after a rollback) is discarded without deleting anything.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace

from tableformat.context import TableContext
from tableformat.errors import CorruptMetadataError, MaintenanceError, SnapshotNotFoundError
from tableformat.layout import EARLIEST, TAG_PREFIX
from tableformat.model.snapshot import Tag
from tableformat.parallel import Workers, executor

from ..kernel import Deleter, Progress
from ..kernel.deferral import current_deferral
from ..roots import Root
from .attached import AttachedFiles, Referenced, without_referenced
from .changelog import delete_changelogs, write_changelogs
from .config import ExpireConfig
from .journal import remove_journal, write_journal
from .metadata import DataPaths, MetadataCache, TagRef
from .planned import Attached, ExpirePlan, PlannedFile, branch_ref
from .result import ExpireResult
from .start import branch_roots

log = logging.getLogger(__name__)


def _counted(result: ExpireResult, attached: Attached) -> ExpireResult:
    """The result with the counts of the attached files (those deleted, or for a dry run those planned)."""
    return replace(
        result,
        deleted_changelog_files=len(attached.changelog_files),
        deleted_changelog_manifests=len(attached.changelog_manifests),
        deleted_changelog_manifest_lists=len(attached.changelog_manifest_lists),
        deleted_statistics_files=len(attached.statistics_files),
        deleted_index_files=len(attached.index_files),
        deleted_index_manifests=len(attached.index_manifests),
    )


def _merge(results: Sequence[ExpireResult], *, dry_run: bool, earliest: int | None) -> ExpireResult:
    return ExpireResult(
        deleted_changelog_files=sum(r.deleted_changelog_files for r in results),
        deleted_changelog_manifests=sum(r.deleted_changelog_manifests for r in results),
        deleted_changelog_manifest_lists=sum(r.deleted_changelog_manifest_lists for r in results),
        deleted_statistics_files=sum(r.deleted_statistics_files for r in results),
        deleted_index_files=sum(r.deleted_index_files for r in results),
        deleted_index_manifests=sum(r.deleted_index_manifests for r in results),
        expired_snapshots=sum(r.expired_snapshots for r in results),
        expired_snapshot_ids=tuple(i for r in results for i in r.expired_snapshot_ids),
        earliest_snapshot=earliest,
        deleted_data_files=sum(r.deleted_data_files for r in results),
        deleted_manifests=sum(r.deleted_manifests for r in results),
        deleted_manifest_lists=sum(r.deleted_manifest_lists for r in results),
        deleted_bytes=sum(r.deleted_bytes for r in results),
        dry_run=dry_run,
        deleted_paths=tuple(p for r in results for p in r.deleted_paths),
        expired_tags=tuple(t for r in results for t in r.expired_tags),
        expired_consumers=tuple(c for r in results for c in r.expired_consumers),
        expired_changelog_ids=tuple(i for r in results for i in r.expired_changelog_ids),
        skipped_external_files=tuple(sorted({p for r in results for p in r.skipped_external_files})),
        removed_dirs=tuple(d for r in results for d in r.removed_dirs),
        completed_journals=tuple(j for r in results for j in r.completed_journals),
        notes=tuple(n for r in results for n in r.notes),
        backlog=results[-1].backlog if results else 0,  # the new plan's: journals carried are done
    )


def planned_result(plan: ExpirePlan) -> ExpireResult:
    """The dry-run result: exactly the plan's lists."""
    paths = [f.path for f in plan.consumer_files + plan.snapshot_files + plan.changelog_root_files + plan.tag_files]
    paths += [path for path, _ in _data_step(plan)]
    result = ExpireResult(
        expired_snapshots=len(plan.expired_snapshots),
        expired_snapshot_ids=plan.expired_snapshots,
        earliest_snapshot=plan.end,
        deleted_data_files=len(plan.data_files),
        deleted_manifests=len(plan.manifests),
        deleted_manifest_lists=len(plan.manifest_lists),
        deleted_bytes=sum(f.size for f in plan.files()),
        dry_run=True,
        deleted_paths=tuple(paths),
        expired_tags=tuple(t.name for t in plan.expired_tags),
        expired_consumers=plan.expired_consumers,
        expired_changelog_ids=plan.expired_changelogs,
        skipped_external_files=plan.skipped_external,
        notes=(plan.note,) if plan.note else (),
        backlog=plan.backlog,
    )
    return _counted(result, plan.attached)


# --- deleting ----------------------------------------------------------------------------------------------------
def _delete(
    deleter: Deleter, files: Sequence[PlannedFile], *, ordered: bool = False, listed: bool = False
) -> list[str]:
    return deleter.delete([(f.path, f.size) for f in files], ordered=ordered, listed=listed)


def _stop_on_failures(ctx: TableContext, deleter: Deleter, journal: str) -> None:
    if deleter.failures:
        raise MaintenanceError(
            f"expiration could not delete {len(deleter.failures)} file(s), first: {deleter.failures[0]}; the journal "
            f"{ctx.io.url(journal)} stays and a re-run finishes the job"
        ) from deleter.first_error


@dataclass(slots=True)
class EarliestHint:
    """The EARLIEST hint as this run knows it: read once per run (by the planner, else on first use), then kept
    up to date with what the run writes. Only moved forward."""

    value: int | None = None
    known: bool = False

    @classmethod
    def of(cls, plan: ExpirePlan) -> EarliestHint:
        return cls(plan.earliest_hint, plan.earliest_hint_read)

    def advance(self, ctx: TableContext, end: int) -> None:
        if not self.known:
            self.value, self.known = ctx.store.read_hint(EARLIEST), True
        if self.value is None or self.value < end:
            ctx.store.write_hint(EARLIEST, end)
            self.value = end


def _live_consumers(ctx: TableContext, plan: ExpirePlan) -> list[PlannedFile]:
    """Planned consumer files whose consumer is still expired (one updated since planning is kept)."""
    if not plan.consumer_files or plan.consumer_cutoff_ms is None:
        return []
    still = {
        ctx.layout.relative(ctx.layout.consumer_file(c.consumer_id))
        for c in ctx.store.consumers()
        if c.modified_ms is not None and c.modified_ms < plan.consumer_cutoff_ms
    }
    return [f for f in plan.consumer_files if f.path in still]


@dataclass(frozen=True, slots=True)
class RootsNow:
    """The tags and branch roots present after the snapshot files went (step 6 of the module docstring)."""

    unchanged: frozenset[str]
    """Tags the plan read whose listing version is the same now (the same bytes: not read again)."""
    read: tuple[Tag, ...]
    """Every other tag present, read now."""
    branches: tuple[Root, ...]
    """Branch roots read now: new, or listed with another version than planning read."""
    unchanged_branches: tuple[TagRef, ...] = ()
    """Branch roots the plan read, listed with the same version now (the same bytes: not read again)."""


def roots_now(ctx: TableContext, plan: ExpirePlan, workers: Workers, *, branches: bool = True) -> RootsNow:
    """List the tags (and, with ``branches``, read every branch root) now, at once on object stores; only tags new
    or rewritten since planning are read. Unreadable metadata stops the run (the journal stays)."""
    seen = {name: version for name, version in plan.tag_versions if version}
    cache = MetadataCache(ctx, workers)

    def tags() -> tuple[frozenset[str], tuple[Tag, ...]]:
        for attempt in range(2):
            versions = {info.name[len(TAG_PREFIX) :]: info.version for info in ctx.store.tag_infos()}
            unchanged = frozenset(name for name, version in versions.items() if seen.get(name) == version)
            try:
                return unchanged, tuple(cache.read_all(ctx.store.read_tag, sorted(versions.keys() - unchanged), 1))
            except SnapshotNotFoundError:  # deleted between listing and reading: list again once
                if attempt:
                    raise
        raise AssertionError("unreachable")

    found: tuple[list[Root], set[str]] = ([], set())
    try:
        with executor(2 if branches and cache.parallel else 1, "tablefmt-recheck") as pool:
            listed = pool.submit(tags)
            found = branch_roots(ctx, dict(plan.branch_versions)) if branches else found
            unchanged, read = listed.result()
    except (CorruptMetadataError, OSError, SnapshotNotFoundError) as exc:
        raise MaintenanceError(f"cannot re-check tags and branches before deleting; a re-run continues: {exc}") from exc
    same = tuple(ref for ref in plan.protecting_branch_roots if ref.name in found[1])
    return RootsNow(unchanged, read, tuple(found[0]), same)


def _unchanged_tags(plan: ExpirePlan, now: RootsNow) -> list[PlannedFile]:
    """Planned tag files that still hold the planned snapshot (a re-created tag is kept)."""
    read = {tag.name: TagRef.of(tag) for tag in now.read}
    return [
        planned
        for ref, planned in zip(plan.expired_tags, plan.tag_files)
        if ref.name in now.unchanged or read.get(ref.name) == ref
    ]


def _deletes_files(plan: ExpirePlan) -> bool:
    return bool(plan.step_files())


def protect_new_tags(ctx: TableContext, plan: ExpirePlan, workers: Workers, now: RootsNow | None = None) -> ExpirePlan:
    """The plan minus files of roots that appeared after planning: tags created on a snapshot older than the plan's
    end, and any new snapshot or tag of any branch (a branch created meanwhile from an expiring snapshot or tag).
    ``now``: the roots as listed after the snapshot files went (default: listed here)."""
    if not _deletes_files(plan):
        return plan
    now = now or roots_now(ctx, plan, workers)
    tags, branches = now.read, now.branches  # tags the plan read, unchanged, are known by definition
    known = set(plan.protecting_tags) | set(plan.expired_tags)
    new_tags = [t for t in tags if TagRef.of(t) not in known and (plan.end is None or t.snapshot.id < plan.end)]
    new = [(f"tag {t.name!r}", t.snapshot) for t in new_tags]
    known_branch = set(plan.protecting_branch_roots)
    new += [(root.label, root.snapshot) for root in branches if branch_ref(root) not in known_branch]
    if not new:
        return plan
    cache = MetadataCache(ctx, workers)
    paths = DataPaths(ctx)
    wanted = {f.path for f in plan.data_files}
    planned_lists = {f.path.rsplit("/", 1)[-1] for f in (*plan.manifest_lists, *plan.attached.changelog_manifest_lists)}
    keep_lists: set[str] = set()
    keep_manifests: set[str] = set()
    protected: set[str] = set()
    attached, named = AttachedFiles(ctx, cache, paths), Referenced()
    for label, snapshot in new:
        lists = set(snapshot.manifest_lists())
        keep_lists |= lists
        named.add(Referenced(lists=lists, statistics={snapshot.statistics} if snapshot.statistics else set()))
        named.add(Referenced(index_manifests={snapshot.index_manifest} if snapshot.index_manifest else set()))
        try:
            keep_manifests |= {m.file_name for m in cache.manifests_of(snapshot)}
            protected |= cache.live_paths(snapshot, wanted, paths, None)
            named.add(attached.referenced([snapshot]))
        except (CorruptMetadataError, OSError) as exc:
            if lists & planned_lists:
                log.error(
                    "%s was created on expired snapshot %d during expiration; it is broken: %s", label, snapshot.id, exc
                )
                continue
            raise MaintenanceError(f"cannot read {label} before deleting data, stopping: {exc}") from exc
        log.warning("%s on snapshot %d appeared during expiration; its files are kept", label, snapshot.id)

    def keep(planned: PlannedFile, names: set[str]) -> bool:
        return planned.path.rsplit("/", 1)[-1] not in names

    return replace(
        plan,
        data_files=tuple(f for f in plan.data_files if f.path not in protected),
        manifests=tuple(f for f in plan.manifests if keep(f, keep_manifests)),
        manifest_lists=tuple(f for f in plan.manifest_lists if keep(f, keep_lists)),
        protecting_tags=plan.protecting_tags + tuple(TagRef.of(t) for t in new_tags),
        protecting_branch_roots=now.unchanged_branches + tuple(branch_ref(root) for root in branches),
        attached=without_referenced(plan.attached, named),
    )


def _journal_and_hint(
    ctx: TableContext, plan: ExpirePlan, journal: str | None, hint: EarliestHint, pool: Executor
) -> str:
    """Steps 1 and 2 of the module docstring: the journal (unless ``journal`` names one already written) and the
    EARLIEST hint, on object stores both at once (``pool``), elsewhere the journal first; both answered before the
    undo window's pending list (if any) is written and this returns."""
    if not ctx.io.is_object_store:
        if journal is None:
            journal = _write_journal(ctx, plan)
        if plan.end is not None:
            hint.advance(ctx, plan.end)
        _protect_held(ctx, plan)
        return journal
    moved = pool.submit(hint.advance, ctx, plan.end) if plan.end is not None else None
    if journal is None:
        try:
            journal = _write_journal(ctx, plan)
        except MaintenanceError:
            if moved is not None:
                moved.exception()  # answered (the hint may have moved: harmless, see the module docstring)
            raise
    if moved is not None:
        moved.result()
    _protect_held(ctx, plan)
    return journal


def _write_journal(ctx: TableContext, plan: ExpirePlan) -> str:
    try:
        return write_journal(ctx, plan)
    except OSError as exc:
        raise MaintenanceError(f"could not write the expiration journal, nothing was deleted: {exc}") from exc


def _complete(
    ctx: TableContext,
    plan: ExpirePlan,
    journal: str | None,
    config: ExpireConfig,
    progress: Progress | None,
    workers: Workers,
    hint: EarliestHint,
    *,
    fresh: bool = False,
) -> ExpireResult:
    """Steps 1-9 of the module docstring (``journal``: the journal of a plan journaled earlier, else None: step 1
    is done here). ``fresh``: planned in this run, so its snapshot files were read moments ago (they are deleted
    without asking the store first whether they exist; tags and consumers are re-read just before deletion)."""
    deleter = Deleter(
        ctx.io, ctx.layout, workers.threads, progress=progress, total=plan.file_count(), label="expiration deleted"
    )
    ahead = ctx.io.bulk_delete and _deletes_files(plan)  # the existence question goes out early, see _data_step
    with executor(2 if ahead or ctx.io.is_object_store else 1, "tablefmt-existence") as pool:  # one task at a time
        journal = _journal_and_hint(ctx, plan, journal, hint, pool)
        consumers = _delete(deleter, _live_consumers(ctx, plan), listed=True)
        asked = pool.submit(deleter.ask_existence, _data_step(plan)) if ahead else None
        write_changelogs(ctx, plan.changelog_roots)  # decoupled: before the snapshot files go
        snapshots = _delete(deleter, plan.snapshot_files, ordered=True, listed=fresh)
        changelogs = delete_changelogs(ctx, plan, lambda files: _delete(deleter, files, ordered=True, listed=fresh))
        deletes = _deletes_files(plan)
        now = roots_now(ctx, plan, workers, branches=deletes) if plan.tag_files or deletes else None
        tags = _delete(deleter, _unchanged_tags(plan, now), listed=True) if now is not None else []
        _stop_on_failures(ctx, deleter, journal)
        plan = protect_new_tags(ctx, plan, workers, now)
        existence = asked.result() if asked is not None else None
    gone = set(deleter.delete(_data_step(plan), existence=existence))
    _stop_on_failures(ctx, deleter, journal)
    data, manifests, lists = (
        [f for f in files if f.path in gone] for files in (plan.data_files, plan.manifests, plan.manifest_lists)
    )
    removed = deleter.remove_empty_dirs(plan.empty_dir_candidates) if config.clean_empty_dirs else []
    remove_journal(ctx, journal)
    tag_names = {f.path: r.name for r, f in zip(plan.expired_tags, plan.tag_files)}
    snapshot_ids = {f.path: i for i, f in zip(plan.expired_snapshots, plan.snapshot_files)}
    result = ExpireResult(
        expired_snapshots=len(snapshots),
        expired_snapshot_ids=tuple(sorted(snapshot_ids[p] for p in snapshots)),
        earliest_snapshot=plan.end,
        deleted_data_files=len(data),
        deleted_manifests=len(manifests),
        deleted_manifest_lists=len(lists),
        deleted_bytes=deleter.deleted_bytes,
        deleted_paths=tuple(deleter.deleted),
        expired_tags=tuple(sorted(tag_names[p] for p in tags)),
        expired_consumers=tuple(sorted(p.rsplit("/", 1)[-1][len("consumer-") :] for p in consumers)),
        expired_changelog_ids=tuple(
            i for i, f in zip(plan.expired_changelogs, plan.changelog_root_files) if f.path in changelogs
        ),
        skipped_external_files=plan.skipped_external,
        removed_dirs=tuple(removed),
        notes=tuple(n for n in (plan.note, _absent_note(deleter)) if n),
        backlog=plan.backlog,
    )
    return _counted(result, plan.attached.keeping(lambda f: f.path in gone))


def _protect_held(ctx: TableContext, plan: ExpirePlan) -> None:
    """Inside an undo window: list step 7's files as pending before the snapshots naming them go, so that orphan
    cleanup never meets them unreferenced and not yet held (cleanup/kernel/deferral.py)."""
    deferral = current_deferral()
    if deferral is not None and _deletes_files(plan):
        deferral.protect(ctx.layout.root, _data_step(plan))


def _data_step(plan: ExpirePlan) -> list[tuple[str, int]]:
    """Step 7's files: data files with their extra files, manifests and manifest lists, and the attached files
    (changelog files with their extra files, changelog manifests and lists, statistics files).

    On object stores, which of them exist (one listing per directory) is asked when step 4 starts, alongside steps
    4-6, and the answer is used by step 7: it is a read, so it changes no order of writes and deletes the journal
    argument rests on; it only says which files existed before this run deleted them (for the report). Asked once the
    journal and EARLIEST are answered, as the snapshot files' DeleteObjects goes out, its listings are answered (and
    their XML parsed) while the store deletes the snapshot files, not while the snapshot delete waits for the client.
    A file another run deletes between the question and step 7 is reported by both runs, the window
    docs/reliability.md names for every S3 delete, here from the question on."""
    files = []
    for planned in plan.step_files():
        files.append((planned.path, planned.size))
        files += [(extra, 0) for extra in planned.extras]
    return files


def _absent_note(deleter: Deleter) -> str:
    if not deleter.absent:
        return ""
    return f"{len(deleter.absent)} planned file(s) were already gone (another run or a crashed one deleted them)"


def execute_expiration(
    ctx: TableContext,
    plan: ExpirePlan,
    *,
    config: ExpireConfig | None = None,
    progress: Progress | None = None,
    workers: Workers | None = None,
    hint: EarliestHint | None = None,
    fresh: bool = False,
) -> ExpireResult:
    """Journal the plan, then delete exactly its files (minus files of tags that appeared meanwhile). ``hint``: the
    EARLIEST hint as this run knows it (default: the plan's); ``fresh``: the plan was made in this run, moments ago
    (see ``_complete``)."""
    config = config or ExpireConfig.resolve(ctx.options)
    if workers is None:
        with Workers(config.parallelism) as own:
            return execute_expiration(ctx, plan, config=config, progress=progress, workers=own, hint=hint, fresh=fresh)
    if plan.is_empty:
        return ExpireResult(earliest_snapshot=plan.end, notes=(plan.note,) if plan.note else ())
    return _complete(ctx, plan, None, config, progress, workers, hint or EarliestHint.of(plan), fresh=fresh)


def _remaining(ctx: TableContext, plan: ExpirePlan, workers: Workers) -> ExpirePlan:
    """A pending plan restricted to files that still exist (what completing it would actually delete)."""
    every = [f.path for f in plan.files()] + [e for f in plan.step_files() for e in f.extras]
    found = workers.map_chunked(lambda p: ctx.io.exists(ctx.layout.join(p)), every, 64)
    present = {path for path, there in zip(every, found) if there}
    snapshots = [(i, f) for i, f in zip(plan.expired_snapshots, plan.snapshot_files) if f.path in present]
    tags = [(r, f) for r, f in zip(plan.expired_tags, plan.tag_files) if f.path in present]
    return replace(
        plan,
        expired_snapshots=tuple(i for i, _ in snapshots),
        snapshot_files=tuple(f for _, f in snapshots),
        expired_tags=tuple(r for r, _ in tags),
        tag_files=tuple(f for _, f in tags),
        expired_changelogs=tuple(
            i for i, f in zip(plan.expired_changelogs, plan.changelog_root_files) if f.path in present
        ),
        changelog_root_files=_present(plan.changelog_root_files, present),
        consumer_files=tuple(f for f in plan.consumer_files if f.path in present),
        expired_consumers=tuple(c for c, f in zip(plan.expired_consumers, plan.consumer_files) if f.path in present),
        data_files=_present(plan.data_files, present),
        manifests=_present(plan.manifests, present),
        manifest_lists=_present(plan.manifest_lists, present),
        attached=plan.attached.keeping(lambda f: f.path in present),
    )


def _present(files: tuple[PlannedFile, ...], present: set[str]) -> tuple[PlannedFile, ...]:
    """The files present (with their extra files present)."""
    return tuple(replace(f, extras=tuple(e for e in f.extras if e in present)) for f in files if f.path in present)


def _stale(ctx: TableContext, plan: ExpirePlan, cache: MetadataCache) -> bool:
    """True if a snapshot the journal names now holds different content (ids reused after a rollback)."""
    try:
        for snapshot_id, base_list in plan.fingerprints:
            found = cache.read_snapshot_file(snapshot_id)
            if found is not None and found[0].base_manifest_list != base_list:
                return True
    except (CorruptMetadataError, OSError) as exc:
        raise MaintenanceError(f"cannot check the pending expiration journal {plan.plan_id}: {exc}") from exc
    return False


def write_missing_earliest(ctx: TableContext, earliest: int, hint: EarliestHint) -> None:
    """Paimon PR #3398: with nothing to expire, still write EARLIEST if it is missing (pypaimon relies on it)."""
    if not hint.known:
        hint.value, hint.known = ctx.store.read_hint(EARLIEST), True
    if hint.value is None:
        ctx.store.write_hint(EARLIEST, earliest)
        hint.value = earliest
