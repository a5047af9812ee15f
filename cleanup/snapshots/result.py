"""What a snapshot expiration reports: counts by file kind, what expired, and the text the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tableformat.units import human_bytes

from ..kernel import OperationResult, shown_paths


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpireResult(OperationResult):
    """What an expiration did (or, for a dry run, would do). Real runs report only files actually deleted."""

    expired_snapshots: int = 0
    expired_snapshot_ids: tuple[int, ...] = ()
    earliest_snapshot: int | None = None
    deleted_data_files: int = 0
    deleted_manifests: int = 0
    deleted_manifest_lists: int = 0
    deleted_changelog_files: int = 0
    deleted_changelog_manifests: int = 0
    deleted_changelog_manifest_lists: int = 0
    deleted_statistics_files: int = 0
    deleted_index_files: int = 0
    deleted_index_manifests: int = 0
    expired_tags: tuple[str, ...] = ()
    expired_consumers: tuple[str, ...] = ()
    expired_changelog_ids: tuple[int, ...] = ()
    """Long-lived changelogs (``changelog/changelog-<id>``) expired (decoupled lifecycle, changelog_expiry.py)."""
    skipped_external_files: tuple[str, ...] = ()
    completed_journals: tuple[str, ...] = ()
    """Plan ids of interrupted earlier runs that this run finished."""

    def headline(self) -> str:
        expired = "would expire" if self.dry_run else "expired"
        verb = "would delete" if self.dry_run else "deleted"
        tags = f" and tag(s) {', '.join(self.expired_tags)}" if self.expired_tags else ""
        tags += f" and {self.expired_changelogs} changelog(s)" if self.expired_changelogs else ""
        return (
            f"{self.operation or 'expire'}: {expired} {self.expired_snapshots} snapshot(s){tags}; {verb} "
            f"{len(self.deleted_paths)} file(s), {human_bytes(self.deleted_bytes)}"
        )

    def summary(self) -> tuple[str, ...]:
        """The text report: what expired, the files by kind, what was kept and why; a dry run's paths (the first
        :data:`SHOWN`)."""
        return (*_counts(self), *_details(self), *shown_paths(self.deleted_paths if self.dry_run else ()))

    def did_something(self) -> bool:
        return bool(self.expired_snapshots or self.expired_tags or self.expired_consumers or self.deleted_paths)

    @property
    def expired_changelogs(self) -> int:
        return len(self.expired_changelog_ids)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the CLI's ``--json`` object)."""
        return {
            "expired_snapshots": self.expired_snapshots,
            "expired_snapshot_ids": list(self.expired_snapshot_ids),
            "earliest_snapshot_id": self.earliest_snapshot,
            "deleted_data_files": self.deleted_data_files,
            "deleted_manifest_files": self.deleted_manifests,
            "deleted_manifest_list_files": self.deleted_manifest_lists,
            "deleted_changelog_files": self.deleted_changelog_files,
            "deleted_changelog_manifest_files": self.deleted_changelog_manifests,
            "deleted_changelog_manifest_list_files": self.deleted_changelog_manifest_lists,
            "deleted_statistics_files": self.deleted_statistics_files,
            "deleted_index_files": self.deleted_index_files,
            "deleted_index_manifest_files": self.deleted_index_manifests,
            "deleted_files": len(self.deleted_paths),
            "deleted_bytes": self.deleted_bytes,
            "dry_run": self.dry_run,
            "deleted_paths": list(self.deleted_paths),
            "backlog": self.backlog,
            "expired_tags": list(self.expired_tags),
            "expired_consumers": list(self.expired_consumers),
            "expired_changelogs": self.expired_changelogs,
            "expired_changelog_ids": list(self.expired_changelog_ids),
            "skipped_external_paths": list(self.skipped_external_files),
            "removed_dirs": list(self.removed_dirs),
            "completed_journals": list(self.completed_journals),
            "notes": list(self.notes),
            **self.window_json(),
            **self.cost_json(),
        }


def _counts(result: ExpireResult) -> tuple[str, ...]:
    verb = "would delete" if result.dry_run else "deleted"
    expired = "would expire" if result.dry_run else "expired"
    lines = [
        f"{expired} {result.expired_snapshots} snapshot(s); earliest snapshot is {result.earliest_snapshot}; "
        f"{verb} {result.deleted_data_files} data file(s), {result.deleted_manifests} manifest(s), "
        f"{result.deleted_manifest_lists} manifest list(s), {len(result.deleted_paths)} file(s) in all, "
        f"{human_bytes(result.deleted_bytes)}"
    ]
    attached = [
        f"{count} {kind}(s)"
        for count, kind in (
            (result.deleted_changelog_files, "changelog file"),
            (result.deleted_changelog_manifests, "changelog manifest"),
            (result.deleted_changelog_manifest_lists, "changelog manifest list"),
            (result.deleted_index_files, "index file"),
            (result.deleted_index_manifests, "index manifest"),
            (result.deleted_statistics_files, "statistics file"),
        )
        if count
    ]
    if attached:
        lines.append(f"including {', '.join(attached)}")
    return tuple(lines)


def _details(result: ExpireResult) -> tuple[str, ...]:
    expired = "would expire" if result.dry_run else "expired"
    lines = []
    if result.expired_tags:
        lines.append(f"{expired} tag(s): {', '.join(result.expired_tags)}")
    if result.expired_consumers:
        lines.append(f"{expired} consumer(s): {', '.join(result.expired_consumers)}")
    if result.expired_changelogs:
        ids = ", ".join(map(str, result.expired_changelog_ids))
        lines.append(f"{expired} {result.expired_changelogs} changelog(s): {ids}")
    if result.completed_journals:
        lines.append(f"finished {len(result.completed_journals)} interrupted expiration(s)")
    if result.skipped_external_files:
        lines.append(f"kept {len(result.skipped_external_files)} file(s) with external paths (never deleted)")
    lines += [f"note: {note}" for note in result.notes]
    return tuple(lines)
