"""Roll a table back to an earlier snapshot, with Paimon's semantics (Java ``Table.rollbackTo`` /
``RollbackHelper.cleanLargerThan``, pypaimon 2.1.0 ``FileStoreTable.rollback_to``).

* The target is a snapshot id (if that snapshot was expired but a tag holds it, the tag), a tag, or the newest
  snapshot committed at or before a time (``rollback_to_timestamp``). A target that does not exist is an error and
  nothing changes.
* Every snapshot newer than the target and every tag of a newer snapshot is removed; ``LATEST`` names the target.
  Rolling back to a tag whose snapshot was expired writes the tag's snapshot back as ``snapshot-N`` and points
  ``EARLIEST`` at it. The next commit takes id target+1 again (ids are reused, as in Paimon).
* Refused, with nothing changed, while something still needs what would be removed: a branch created from a
  snapshot or tag that would go (Paimon refuses to delete such a tag too), a consumer that has already read past
  the target, or an interrupted expiration (its journal must be finished first); and while any maintenance run
  (expiration, orphan cleanup, partition or record expiry, compaction, tag deletion) holds the table: a rollback
  holds the table alone (tableformat/claims.py), so no maintenance run overlaps it.
* Only metadata is deleted: snapshot files (newest first, so the remaining ones stay a contiguous run and a crash
  leaves a table a re-run finishes) and tag files. Data files, manifests and manifest lists of the removed
  snapshots are left to orphan cleanup (``remove-orphans``), which deletes exactly those no snapshot, tag or branch
  still references once they are older than its age guard. So no file of a retained snapshot, tag or branch is
  ever deleted by a rollback.

Stop writers first: a commit that lands while the rollback runs builds on a snapshot being removed. It is detected
afterwards and reported (it is kept, never deleted behind its writer's back).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from tableformat.audit import RunRecord, file_size_or_zero, recorded
from tableformat.claims import ROLLBACK, TableClaim
from tableformat.errors import SnapshotNotFoundError, TableBusyError, ValidationError
from tableformat.layout import EARLIEST, LATEST
from tableformat.model.snapshot import Snapshot, Tag
from tableformat.model.undo import HeldList
from tableformat.options import UNDO_WINDOW, TableOptions
from tableformat.store import MetadataStore

ORPHAN_NOTE = (
    "files only the removed snapshots and tags used are left for `tablefmt remove-orphans` (deleted once older "
    "than orphan-files.older-than)"
)


class RollbackRefusedError(ValidationError):
    """Something still needs a snapshot or tag the rollback would remove; nothing was changed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackResult:
    """What a rollback did (or, in a dry run, would do)."""

    dry_run: bool
    target: int
    """The snapshot id the table is rolled back to."""
    target_label: str
    """How the target was named: 'snapshot 5', 'tag release', 'time 2026-11-24T10:00:00+00:00 (snapshot 5)'."""
    previous_latest: int | None
    removed_snapshots: tuple[int, ...] = ()
    removed_tags: tuple[str, ...] = ()
    restored_from_tag: bool = False
    """The target snapshot had been expired and was written back from its tag."""
    concurrent_snapshots: tuple[int, ...] = ()
    """Snapshots newer than the target that a writer committed while the rollback ran (kept, see notes)."""
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "target_snapshot_id": self.target,
            "target_label": self.target_label,
            "previous_latest_snapshot_id": self.previous_latest,
            "removed_snapshot_ids": list(self.removed_snapshots),
            "removed_tags": list(self.removed_tags),
            "restored_from_tag": self.restored_from_tag,
            "concurrent_snapshot_ids": list(self.concurrent_snapshots),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class _Target:
    snapshot: Snapshot
    label: str
    tag: Tag | None
    """The tag the snapshot comes from when its own file is gone (written back by the rollback)."""


def _resolve(store: MetadataStore, snapshot_id: int | None, tag: str | None, time_ms: int | None) -> _Target:
    given = [x for x in (snapshot_id, tag, time_ms) if x is not None]
    if len(given) != 1:
        raise ValidationError("give exactly one rollback target: a snapshot id, a tag or a time")
    if tag is not None:
        try:
            found = store.read_tag(tag)
        except SnapshotNotFoundError:
            raise SnapshotNotFoundError(f"tag {tag!r} does not exist; nothing was changed") from None
        own = store.try_read_snapshot(found.snapshot.id)
        usable = own is not None and own.same_state(found.snapshot)
        return _Target(found.snapshot, f"tag {tag}", None if usable else found)
    if snapshot_id is not None:
        own = store.try_read_snapshot(snapshot_id)
        if own is not None:
            return _Target(own, f"snapshot {snapshot_id}", None)
        for candidate in store.tags():  # expired, but a tag holds it: Paimon rolls back to that tag
            if candidate.snapshot.id == snapshot_id:
                return _Target(candidate.snapshot, f"snapshot {snapshot_id} (from tag {candidate.name})", candidate)
        raise SnapshotNotFoundError(
            f"snapshot {snapshot_id} does not exist (never committed, or expired and not tagged); nothing was changed"
        )
    assert time_ms is not None
    chosen: Snapshot | None = None
    for sid in store.snapshot_ids():
        snapshot = store.try_read_snapshot(sid)
        if snapshot is not None and snapshot.time_millis <= time_ms:
            chosen = snapshot
    if chosen is None:
        when = dt.datetime.fromtimestamp(time_ms / 1000, dt.timezone.utc).isoformat()
        raise SnapshotNotFoundError(f"no snapshot committed at or before {when}; nothing was changed")
    when = dt.datetime.fromtimestamp(time_ms / 1000).astimezone().isoformat(timespec="seconds")
    return _Target(chosen, f"time {when} (snapshot {chosen.id})", None)


def _refusals(store: MetadataStore, target: Snapshot, newer: list[Snapshot], tags: list[Tag]) -> list[str]:
    """Why the rollback may not run now (empty: it may)."""
    problems = []
    if store.expire_journals():
        problems.append("an interrupted expiration is pending; run `tablefmt expire` first")
    for snapshot in [*newer, *(t.snapshot for t in tags)]:
        users = store.branches_holding(snapshot)
        if users:
            what = next((f"tag {t.name!r}" for t in tags if t.snapshot is snapshot), f"snapshot {snapshot.id}")
            problems.append(f"branch {', '.join(users)} was created from {what}; delete the branch first")
    for consumer in store.consumers():
        if consumer.next_snapshot > target.id + 1:
            problems.append(
                f"consumer {consumer.consumer_id!r} has read up to snapshot {consumer.next_snapshot - 1}, past the "
                "target; delete or reset it first"
            )
    return problems


def rollback(
    store: MetadataStore,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
    time_ms: int | None = None,
    dry_run: bool = False,
) -> RollbackResult:
    """Roll back to a snapshot, a tag or a time (exactly one); see the module docstring for the rules."""
    if dry_run:
        return _rollback(store, snapshot_id, tag, time_ms, dry_run=True)
    asked = {"snapshot_id": snapshot_id, "tag": tag, "time_ms": time_ms}
    record = RunRecord("rollback", TableOptions(store.latest_schema().options), asked)
    claim = TableClaim(store, ROLLBACK, "rollback", owner=record.run_id)
    try:
        claim.acquire()
    except TableBusyError as exc:
        raise TableBusyError(f"rollback refused: {exc}") from None
    try:
        with recorded(record, store):
            return _rollback(claim.guarded_store(), snapshot_id, tag, time_ms, dry_run=False, record=record)
    finally:
        claim.release()


def _keep_for_undo(store: MetadataStore, record: RunRecord, newer: list[Snapshot], newer_tags: list[Tag]) -> None:
    """With ``maintenance.undo-window`` above 0: save a copy of every snapshot and tag file the rollback removes
    under ``.tablefmt/undo/<run id>/saved/`` (after an empty held list that dates the window), so that ``tablefmt
    undo`` can write them back and orphan cleanup keeps what they reference until the window ends (docs/undo.md)."""
    window = TableOptions(store.latest_schema().options).get(UNDO_WINDOW) or 0
    if window <= 0 or not (newer or newer_tags):
        return
    due = record.started_ms + window
    store.write_held(HeldList(record.run_id, due, (), "rollback"), 1)
    layout = store.layout
    for path in [layout.snapshot_file(s.id) for s in newer] + [layout.tag_file(t.name) for t in newer_tags]:
        store.save_copy(record.run_id, layout.relative(path))
    record.undo_until_ms = due


def _rollback(
    store: MetadataStore,
    snapshot_id: int | None,
    tag: str | None,
    time_ms: int | None,
    *,
    dry_run: bool,
    record: RunRecord | None = None,
) -> RollbackResult:
    target = _resolve(store, snapshot_id, tag, time_ms)
    goal = target.snapshot
    previous_latest = store.latest_snapshot_id()
    newer = [s for s in (store.try_read_snapshot(i) for i in store.snapshot_ids() if i > goal.id) if s is not None]
    newer_tags = [t for t in store.tags() if t.snapshot.id > goal.id]
    problems = _refusals(store, goal, newer, newer_tags)
    if problems:
        raise RollbackRefusedError(f"rollback to {target.label} refused, nothing was changed: {'; '.join(problems)}")
    notes = [ORPHAN_NOTE] if newer or newer_tags else [f"the table is already at {target.label}; nothing to remove"]
    result = RollbackResult(
        dry_run=dry_run,
        target=goal.id,
        target_label=target.label,
        previous_latest=previous_latest,
        removed_snapshots=tuple(s.id for s in newer),
        removed_tags=tuple(t.name for t in newer_tags),
        restored_from_tag=target.tag is not None,
        notes=tuple(notes),
    )
    if dry_run:
        return result
    if target.tag is not None:
        store.write_snapshot_if_absent(goal)  # its own file was expired: the tag holds the same snapshot
    why = f"rolled back to {target.label}"
    layout = store.layout
    if record is not None:
        _keep_for_undo(store, record, newer, newer_tags)
    for snapshot in reversed(newer):  # newest first: the remaining snapshots stay one contiguous run
        path = layout.snapshot_file(snapshot.id)
        size = file_size_or_zero(store, path) if record is not None else 0
        if store.delete_snapshot(snapshot.id) and record is not None:
            record.add(layout.relative(path), size, f"{why}: snapshot {snapshot.id} is newer")
    for gone in newer_tags:
        path = layout.tag_file(gone.name)
        size = file_size_or_zero(store, path) if record is not None else 0
        if store.delete_tag(gone.name) and record is not None:
            record.add(layout.relative(path), size, f"{why}: tag {gone.name} is of snapshot {gone.snapshot.id}")
    store.write_hint(LATEST, goal.id)
    if target.tag is not None and (store.earliest_snapshot_id() or goal.id) >= goal.id:
        store.write_hint(EARLIEST, goal.id)
    late = tuple(i for i in store.snapshot_ids() if i > goal.id)
    if late:
        notes.append(
            f"snapshot(s) {', '.join(map(str, late))} were committed while the rollback ran and were kept; they may "
            "hold rolled-back data: stop writers and roll back again"
        )
        return replace(result, concurrent_snapshots=late, notes=tuple(notes))
    return result
