"""What an undo reports (``tablefmt undo --json``: ``restored_snapshots``, ``restored_tags``, ``restored_files``,
``dry_run``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tableformat.units import human_bytes

from ..kernel import OperationResult, shown_paths


@dataclass(frozen=True, slots=True, kw_only=True)
class UndoResult(OperationResult):
    """Undo of run ``undone``: what is back (or, dry, would be)."""

    undone: str
    undone_operation: str = ""
    restored_snapshots: tuple[int, ...] = ()
    restored_tags: tuple[str, ...] = ()
    restored_files: tuple[str, ...] = ()
    """Files back in the table: those the window kept, and those the reversal commit adds back."""
    restored_bytes: int = 0
    restored_metadata: tuple[str, ...] = ()
    """Every metadata file written back (snapshots, tags, changelogs, consumers), relative to the table root."""
    removed_files: tuple[str, ...] = ()
    """Files the run had added (e.g. compaction's output) that the reversal commit takes out of the table."""
    snapshot_id: int | None = None
    """The reversal commit, when there was one."""

    def summary(self) -> tuple[str, ...]:
        verb = "would restore" if self.dry_run else "restored"
        lines = [
            f"undo: {verb} {len(self.restored_snapshots)} snapshot(s), {len(self.restored_tags)} tag(s), "
            f"{len(self.restored_files)} file(s), {human_bytes(self.restored_bytes)} of run {self.undone} "
            f"({self.undone_operation})"
        ]
        if self.restored_snapshots:
            lines.append(f"snapshots: {', '.join(map(str, self.restored_snapshots))}")
        if self.restored_tags:
            lines.append(f"tags: {', '.join(self.restored_tags)}")
        if self.snapshot_id is not None:
            lines.append(f"committed snapshot {self.snapshot_id} putting back {len(self.restored_files)} file(s)")
        lines += shown_paths(self.removed_files, "taken out again (added by the run)")
        return (*lines, *(f"note: {note}" for note in self.notes))

    def did_something(self) -> bool:
        return bool(self.restored_metadata or self.restored_files or self.removed_files)

    def to_json(self) -> dict[str, Any]:
        return {
            "undone": self.undone,
            "undone_operation": self.undone_operation,
            "restored_snapshots": list(self.restored_snapshots),
            "restored_tags": list(self.restored_tags),
            "restored_files": len(self.restored_files),
            "restored_paths": list(self.restored_files),
            "restored_bytes": self.restored_bytes,
            "restored_metadata": list(self.restored_metadata),
            "removed_paths": list(self.removed_files),
            "snapshot_id": self.snapshot_id,
            "dry_run": self.dry_run,
            "run_id": self.run_id or None,
            "notes": list(self.notes),
        }
