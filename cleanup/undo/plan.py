"""Planning an undo: what to write back for one run, or one line saying why it cannot be exact (nothing written)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tableformat.audit import AuditQuery, audit_runs, iso, started_ms_of
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, UndoRefusedError
from tableformat.layout import SNAPSHOT_DIR, SNAPSHOT_PREFIX, TAG_DIR, TAG_PREFIX, parse_id
from tableformat.live_set import live_entries
from tableformat.model.audit import COMPLETED, AuditRun
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.model.undo import HeldRun

from ..kernel.audit import unguarded
from ..kernel.purge import PURGE

UNDO = "undo"
"""The operation name of an undo in the audit ledger."""
NEVER_UNDONE = {"erase": "an erasure is never undone (the erased rows must stay gone)", UNDO: "", PURGE: ""}


@dataclass(frozen=True, slots=True)
class UndoPlan:
    """Everything an undo of run ``run_id`` writes, decided before anything is written."""

    run_id: str
    operation: str
    copies: tuple[str, ...] = ()
    """Saved metadata files to write back (relative to the table root), snapshots ascending first."""
    snapshots: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    kept: tuple[tuple[str, int], ...] = ()
    """Files the window kept for the run (released by the undo: back in the table with its snapshots)."""
    readd: tuple[ManifestEntry, ...] = ()
    """Files the run's commits took out, put back by the reversal commit."""
    remove: tuple[ManifestEntry, ...] = ()
    """Files the run's commits added (compaction's output, rewritten files), taken out by the reversal commit."""
    readd_paths: tuple[tuple[str, int], ...] = ()
    remove_paths: tuple[str, ...] = ()
    holding: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(run id, paths): later runs whose windows hold files the reversal puts back (released by the undo)."""
    window: HeldRun | None = None


def _refuse(run_id: str, why: str) -> UndoRefusedError:
    return UndoRefusedError(f"cannot undo run {run_id}: {why}; nothing was changed")


def _recorded(ctx: TableContext, run_id: str) -> tuple[AuditRun | None, list[AuditRun]]:
    """(the run's record, the undos recorded of it): both started at or after the run, so only records named from
    its start on are read (the ledger's names sort by start)."""
    runs = [summary.run for summary in audit_runs(unguarded(ctx.store), AuditQuery(since_ms=started_ms_of(run_id)))]
    own = next((run for run in runs if run.run_id == run_id), None)
    return own, [run for run in runs if run.undoes == run_id and run.outcome == COMPLETED]


def plan_undo(ctx: TableContext, run_id: str, now_ms: int) -> UndoPlan:
    """What undoing ``run_id`` writes; UndoRefusedError (one line) where the result would not be exact."""
    store = unguarded(ctx.store)
    try:
        record, undos = _recorded(ctx, run_id)
        found = store.held_runs(run_id)
    except (CorruptMetadataError, OSError) as exc:
        raise _refuse(run_id, f"its record or undo window cannot be read ({exc})") from exc
    window = found[0] if found else None
    operation = record.operation if record is not None else "unrecorded"
    _check_run(run_id, record, undos, window, now_ms)
    plan = UndoPlan(run_id, operation, window=window)
    if window is not None:
        plan = _metadata(ctx, plan, window)
    if record is not None and record.snapshot_ids and record.counts.retired_files:
        plan = _reversal(ctx, plan, record)
    if not (plan.copies or plan.kept or plan.readd or plan.remove or (window is not None and window.released_by)):
        raise _refuse(run_id, f"nothing it took ({operation}) can be given back: {_why_not(record)}")
    return plan


def _why_not(record: AuditRun | None) -> str:
    if record is not None and record.counts.deleted_files and not record.counts.deferred_files:
        return "it deleted its files at once (maintenance.undo-window was 0)"
    if record is not None and record.counts.retired_files and not record.snapshot_ids:
        return "its record does not name the snapshots it committed"
    return "it is restored already, or it changed nothing an undo can reverse"


def _check_run(
    run_id: str, record: AuditRun | None, undos: list[AuditRun], window: HeldRun | None, now_ms: int
) -> None:
    if record is None and window is None:
        raise _refuse(run_id, "no such run in the audit ledger or the undo window")
    if record is not None:
        if record.operation in NEVER_UNDONE:
            raise _refuse(run_id, NEVER_UNDONE[record.operation] or f"a {record.operation} run is not undone")
        if record.outcome != COMPLETED and record.finished_ms is None:
            raise _refuse(run_id, f"it ended {record.outcome} without recording what it took")
    if undos and (window is None or not window.released_by):
        raise _refuse(run_id, f"it was undone already by run {undos[-1].run_id}")
    took = record is not None and (record.counts.deferred_files or record.undo_until_ms is not None)
    if window is None and took:
        raise _refuse(
            run_id, f"its undo window ended at {iso(record.undo_until_ms if record else None)}; what it took is deleted"
        )
    if window is not None and window.is_due(now_ms) and not window.released_by:
        raise _refuse(run_id, f"its undo window ended at {iso(window.due_ms)}; what it took is being deleted")


def _metadata(ctx: TableContext, plan: UndoPlan, window: HeldRun) -> UndoPlan:
    """The saved copies to write back (those back already, with the same bytes, are left out) and the kept files."""
    store = unguarded(ctx.store)
    copies, snapshots, tags, snapshot_paths = [], [], [], []
    for rel in window.saved:
        saved = store.read_saved(plan.run_id, rel)
        try:
            now = store.io.read_bytes(ctx.layout.join(rel))
        except FileNotFoundError:
            now = None
        if now is not None and now != saved:
            raise _refuse(plan.run_id, f"{rel} exists again with other content (a newer commit or rollback reused it)")
        directory, _, name = rel.rpartition("/")
        if directory == SNAPSHOT_DIR:
            snapshots.append(parse_id(name, SNAPSHOT_PREFIX) or 0)
            snapshot_paths.append(rel)
        if directory == TAG_DIR:
            tags.append(name[len(TAG_PREFIX) :])
        if now is None:
            copies.append(rel)
    earliest, latest = store.earliest_snapshot_id(), store.latest_snapshot_id()
    restoring = [i for i, rel in zip(snapshots, snapshot_paths) if rel in copies]
    if restoring and latest is not None and min(restoring) > latest + 1:
        raise _refuse(plan.run_id, f"the table's latest snapshot is {latest}, below the first it would restore")
    if snapshots and earliest is not None and max(snapshots) + 1 < earliest and min(snapshots) < earliest:
        raise _refuse(
            plan.run_id,
            f"snapshots {max(snapshots) + 1}..{earliest - 1} were expired by a later run; undo that run first "
            "(tablefmt audit lists the runs)",
        )
    kept = sorted(window.held.items())
    present, failed = store.io.existing_files([ctx.layout.join(path) for path, _ in kept])
    if failed or len(present) < len(kept):
        gone = sorted({ctx.layout.join(p) for p, _ in kept} - set(present))
        raise _refuse(
            plan.run_id,
            f"{len(gone) or len(failed)} file(s) the window kept are gone or unreadable (first: {(gone or failed)[0]})",
        )
    ordered = sorted(copies, key=lambda rel: (not rel.startswith(SNAPSHOT_DIR + "/"), _snapshot_order(rel)))
    return replace(
        plan, copies=tuple(ordered), snapshots=tuple(sorted(snapshots)), tags=tuple(sorted(tags)), kept=tuple(kept)
    )


def _snapshot_order(rel: str) -> tuple[int, str]:
    return (parse_id(rel.rpartition("/")[2], SNAPSHOT_PREFIX) or 0, rel)


def _reversal(ctx: TableContext, plan: UndoPlan, record: AuditRun) -> UndoPlan:
    """The commit that reverses the run's commits: what they took out goes back in, what they added goes out.
    Refused when a file to put back is gone, or when a file the run added is no longer live (a later commit built on
    it). A reversal committed already (an undo that stopped before it finished) is not planned again."""
    store = unguarded(ctx.store)
    paths = DataPaths(ctx.schema, store.partition_codec(ctx.schema))
    added: dict[tuple[object, ...], ManifestEntry] = {}
    taken: dict[tuple[object, ...], ManifestEntry] = {}
    for snapshot_id in record.snapshot_ids:
        snapshot = store.try_read_snapshot(snapshot_id)
        if snapshot is None:
            raise _refuse(plan.run_id, f"snapshot {snapshot_id} it committed was expired since")
        for meta in store.read_manifest_list(snapshot.delta_manifest_list):
            for entry in store.read_manifest(meta.file_name):
                key = entry.identifier()
                if entry.file.external_path:
                    raise _refuse(plan.run_id, f"file {entry.file.file_name} has an external path")
                if entry.kind == FileKind.ADD:
                    added[key] = entry
                elif key in added:
                    del added[key]  # added and taken out by the same run: nothing to reverse
                else:
                    taken[key] = entry
    latest = store.latest_snapshot()
    live = {e.identifier() for e in live_entries(store, latest, store.partition_codec(ctx.schema))} if latest else set()
    readd = [e for k, e in taken.items() if k not in live]
    remove = [e for k, e in added.items() if k in live]
    if not readd and not remove:
        return plan  # reversed already
    if len(readd) < len(taken) or len(remove) < len(added):
        raise _refuse(plan.run_id, "files it added or took out were changed by a later commit")
    readd_paths = [(paths.of_entry(e), e.file.file_size) for e in readd]
    present, failed = store.io.existing_files([ctx.layout.join(p) for p, _ in readd_paths])
    if failed or len(present) < len(readd_paths):
        raise _refuse(plan.run_id, f"{len(readd_paths) - len(present)} file(s) it took out are deleted already")
    wanted = {p for p, _ in readd_paths}
    holding = tuple(
        (held.run_id, tuple(sorted(wanted.intersection(held.held))))
        for held in store.held_runs()
        if held.run_id != plan.run_id and wanted.intersection(held.held)
    )
    return replace(
        plan,
        readd=tuple(readd),
        remove=tuple(remove),
        readd_paths=tuple(readd_paths),
        remove_paths=tuple(paths.of_entry(e) for e in remove),
        holding=holding,
    )
