"""Carrying out an undo plan, holding the table like a rollback (see the package docstring for the order)."""

from __future__ import annotations

import dataclasses

from tableformat.claims import ROLLBACK, TableClaim
from tableformat.clock import resolve_now
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import NewDataFile
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import CorruptMetadataError, UndoRefusedError
from tableformat.io.guarded import GuardedFileIO
from tableformat.layout import EARLIEST, LATEST
from tableformat.model.audit import RESTORED, RETIRED
from tableformat.model.manifest import ManifestEntry
from tableformat.model.undo import ReleasedList

from ..kernel.audit import AuditedRun, unguarded
from ..kernel.deferral import deferring
from .plan import UNDO, UndoPlan, plan_undo
from .result import UndoResult


def preview(plan: UndoPlan, *, dry_run: bool = True) -> UndoResult:
    """What executing ``plan`` restores (the dry-run result, and the real one once done)."""
    files = [path for path, _ in plan.kept] + [path for path, _ in plan.readd_paths]
    return UndoResult(
        dry_run=dry_run,
        operation=UNDO,
        undone=plan.run_id,
        undone_operation=plan.operation,
        restored_snapshots=plan.snapshots,
        restored_tags=plan.tags,
        restored_files=tuple(files),
        restored_bytes=sum(size for _, size in plan.kept) + sum(size for _, size in plan.readd_paths),
        restored_metadata=plan.copies,
        removed_files=plan.remove_paths,
    )


def undo_run(ctx: TableContext, run_id: str, *, dry_run: bool = False, now_ms: int | None = None) -> UndoResult:
    """Undo run ``run_id`` (``tablefmt undo``): plan, then (unless ``dry_run``) execute holding a rollback claim;
    UndoRefusedError (nothing changed) where it cannot be exact, TableBusyError while maintenance runs."""
    now = resolve_now(now_ms)
    plan = plan_undo(ctx, run_id, now)
    if dry_run:
        return preview(plan)
    run = AuditedRun.start(UNDO, ctx, {"run": run_id}, now)
    run.record.undoes = run_id
    claim = TableClaim(unguarded(ctx.store), ROLLBACK, UNDO, owner=run.run_id)
    claim.acquire()
    try:
        plan = plan_undo(ctx, run_id, now)  # again, holding the table: a purge or another undo may have run
        reason = f"undo of run {run_id} ({plan.operation})"
        run.reasons = lambda path: reason
        with run.recording(), deferring(None):
            noting = run.noting(ctx)
            result = execute_undo(noting.with_io(GuardedFileIO(noting.io, claim.check)), plan, run.run_id)
            run.record.add_all([*plan.kept, *plan.readd_paths], run.reasons, RESTORED)
            run.record.add_all([(path, 0) for path in plan.remove_paths], run.reasons, RETIRED)
            run.finished((), ())
        return dataclasses.replace(result, run_id=run.run_id)
    finally:
        claim.release()


def execute_undo(ctx: TableContext, plan: UndoPlan, undo_run_id: str) -> UndoResult:
    """Release, write back, commit the reversal, then remove the run's window (package docstring)."""
    store = ctx.store
    window = unguarded(store)
    if plan.kept:
        window.write_released(plan.run_id, ReleasedList(undo_run_id, tuple(path for path, _ in plan.kept)))
    for other, paths in plan.holding:
        window.write_released(other, ReleasedList(undo_run_id, paths))
    for rel in plan.copies:
        if not store.restore_saved(plan.run_id, rel):
            raise UndoRefusedError(f"cannot finish the undo of run {plan.run_id}: {rel} was written meanwhile")
    if plan.snapshots:
        earliest, latest = store.read_hint(EARLIEST), store.read_hint(LATEST)
        if earliest is None or earliest > plan.snapshots[0]:
            store.write_hint(EARLIEST, plan.snapshots[0])
        if latest is not None and latest < plan.snapshots[-1]:  # an undone rollback: the newer snapshots are back
            store.write_hint(LATEST, plan.snapshots[-1])
    snapshot_id = _reverse(ctx, plan) if plan.readd or plan.remove else None
    notes: tuple[str, ...] = ()
    try:
        for held in window.held_runs(plan.run_id) if plan.window is not None else ():
            window.delete_undo_files(held)
    except (OSError, CorruptMetadataError) as exc:  # everything is back: the run's window is only left over
        notes = (
            f"everything is back, but the run's undo window could not be removed ({exc}); its files stay released "
            "(no purge deletes them) and running this undo again removes it",
        )
    return dataclasses.replace(preview(plan, dry_run=False), snapshot_id=snapshot_id, notes=notes)


def _reverse(ctx: TableContext, plan: UndoPlan) -> int | None:
    """One commit putting back what the run took out and taking out what it added (only while those are live)."""
    codec = ctx.store.partition_codec(ctx.schema)
    paths = DataPaths(ctx.schema, codec)
    new_files = [
        _new_file(ctx, paths, entry, path, codec.values(entry.partition))
        for entry, (path, _) in zip(plan.readd, plan.readd_paths, strict=True)
    ]
    request = CommitRequest(
        kind=ChangeKind.REPLACE if plan.remove else ChangeKind.APPEND,
        new_files=new_files,
        replaced_files=plan.remove,
        properties={"tablefmt.undo-of": plan.run_id},
    )
    result = Committer(ctx.store, ctx.schema).commit(request)
    if result.missing_files:
        raise UndoRefusedError(
            f"cannot undo run {plan.run_id}: {len(result.missing_files)} file(s) it added were replaced meanwhile; "
            "nothing was committed"
        )
    return result.snapshot.id if result.snapshot is not None else None


def _new_file(
    ctx: TableContext, paths: DataPaths, entry: ManifestEntry, path: str, values: dict[str, object]
) -> NewDataFile:
    """The file a run took out, as a writer hands a file it wrote to the committer."""
    in_order = tuple(values[key] for key in ctx.schema.partition_keys)
    return NewDataFile(
        partition=entry.partition,
        partition_values=in_order,
        partition_path=paths.partition_dir(in_order),
        bucket=entry.bucket,
        total_buckets=entry.total_buckets,
        meta=entry.file,
        path=ctx.layout.join(path),
    )
