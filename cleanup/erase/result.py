"""What an erasure reports (``tablefmt erase --json``; docs/json.md, section ``erase``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tableformat.units import human_bytes, time_pair

from ..kernel import OperationResult
from ..kernel.result import shown_paths
from .pins import Pin, pins_json, pins_text


@dataclass(frozen=True, slots=True, kw_only=True)
class EraseResult(OperationResult):
    """What an erasure did (or, in a dry run, would do). ``deleted_paths`` are the files the purge deleted."""

    snapshot_id: int | None = None
    """The (last) snapshot the erasure committed; None in a dry run or when nothing matched."""
    snapshot_ids: tuple[int, ...] = ()
    """Every snapshot it committed (one per guarded batch of ``compaction.commit.max-files`` files)."""
    erased_rows: int = 0
    rewritten_paths: tuple[str, ...] = ()
    """Live files that held matching rows, replaced by files without them."""
    rewritten_bytes: int = 0
    written_paths: tuple[str, ...] = ()
    """The new files (none in a dry run: their names are chosen when written)."""
    pinned_by: tuple[Pin, ...] = ()
    """Roots that still reference a rewritten file after the run (so still hold erased rows)."""
    purged_snapshot_ids: tuple[int, ...] = ()
    """Snapshots the purge expired (none without ``purge``)."""
    deadline_ms: int | None = None
    """When the old files must be gone (``erase.deadline`` after the run); None once the purge left nothing pinned."""
    rewritten_tags: tuple[str, ...] = ()
    """Tags rewritten without the erased rows (``include_tags``)."""
    filter_description: str = ""
    skipped_files: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        document = OperationResult.to_json(self)
        document.update(
            snapshot_id=self.snapshot_id,
            snapshot_ids=list(self.snapshot_ids),
            erased_rows=self.erased_rows,
            rewritten_files=len(self.rewritten_paths),
            rewritten_paths=list(self.rewritten_paths),
            rewritten_bytes=self.rewritten_bytes,
            rewritten_tags=list(self.rewritten_tags),
            written_files=len(self.written_paths),
            written_paths=list(self.written_paths),
            pinned_by=pins_json(self.pinned_by),
            purged_snapshots=len(self.purged_snapshot_ids),
            purged_snapshot_ids=list(self.purged_snapshot_ids),
            **time_pair("deadline", self.deadline_ms),
            skipped=[{"path": f, "reason": r} for f, r in self.skipped_files],
        )
        return document

    def summary(self) -> tuple[str, ...]:
        verb = "would erase" if self.dry_run else "erased"
        lines = [
            f"erase: {verb} {self.erased_rows} row(s) from {len(self.rewritten_paths)} file(s) "
            f"({human_bytes(self.rewritten_bytes)}) into {len(self.written_paths)} new file(s)"
            + ("" if self.snapshot_id is None else f" (snapshot {self.snapshot_id})")
        ]
        lines += shown_paths(self.rewritten_paths, "rewritten" if not self.dry_run else "to rewrite")
        if self.purged_snapshot_ids or self.deleted_paths:
            purged = "would purge" if self.dry_run else "purged"
            lines.append(
                f"{purged} {len(self.purged_snapshot_ids)} snapshot(s), {len(self.deleted_paths)} file(s), "
                f"{human_bytes(self.deleted_bytes)}"
            )
        if self.rewritten_tags:
            verb = "would rewrite" if self.dry_run else "rewrote"
            lines.append(f"{verb} tag(s) {', '.join(self.rewritten_tags)} without the erased rows")
        lines += [f"still held by {text}" for text in pins_text(self.pinned_by)]
        lines += [f"skipped {path}: {reason}" for path, reason in self.skipped_files]
        return tuple(lines + [f"note: {note}" for note in self.notes])

    def did_something(self) -> bool:
        return bool(self.rewritten_paths or self.deleted_paths)
