"""Long-lived changelogs: what a snapshot expiration leaves of an expired snapshot when the changelog lifecycle is
decoupled (Paimon's ``changelogDecoupled``: a ``changelog.*`` retention above the snapshot one, config.py).

Paimon (``ExpireSnapshotsImpl``, ``SnapshotDeletion``) then writes ``changelog/changelog-<id>``, a copy of the
snapshot's JSON, for every expired snapshot just before deleting its snapshot file, moves ``changelog/LATEST``, and
keeps what the changelog needs: with a changelog manifest list (``changelog-producer`` input, lookup,
full-compaction) that list, its manifests and the changelog files they ADD; with ``changelog-producer=none`` (the
delta's data files are the changelog) its base and delta manifest lists with their manifests and data files.
tablefmt keeps exactly what such a root names, as for every other root (attached.py, start.py): a root with a
changelog list protects its changelog (and its statistics and index files), one of ``changelog-producer=none``
without a list protects like a branch root (its lists, manifests and live data files), and one of a changelog
producer without a list (a compaction's) protects only its statistics and index files. The copies are written
before any snapshot file is deleted (the plan's journal lists them), so a run that stopped is finished by the next:
a snapshot already gone has its copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tableformat.context import TableContext
from tableformat.errors import MaintenanceError
from tableformat.layout import EARLIEST, LATEST
from tableformat.model.snapshot import Snapshot
from tableformat.options import CHANGELOG_PRODUCER

from ..roots import keeps_whole
from .config import ExpireConfig
from .planned import ExpirePlan, PlannedFile


def produces_changelog(ctx: TableContext) -> bool:
    return ctx.options.require(CHANGELOG_PRODUCER) != "none"


@dataclass(frozen=True, slots=True)
class NewChangelogs:
    """The long-lived changelogs one expiration leaves (none unless decoupled)."""

    ids: tuple[int, ...] = ()
    whole: tuple[Snapshot, ...] = ()
    """Kept like a branch root (keeps_whole)."""
    changelog_only: tuple[Snapshot, ...] = ()
    """Keep their changelog manifest list, its manifests and files."""

    @classmethod
    def of(cls, config: ExpireConfig, expired: Sequence[Snapshot]) -> NewChangelogs:
        if not config.changelog_decoupled:
            return cls()
        whole = tuple(s for s in expired if keeps_whole(s, config.produce_changelog))
        return cls(
            ids=tuple(s.id for s in expired),
            whole=whole,
            changelog_only=tuple(s for s in expired if s.changelog_manifest_list and s not in whole),
        )


def write_changelogs(ctx: TableContext, ids: Sequence[int]) -> None:
    """``changelog/changelog-<id>`` for each id whose snapshot file is still there (before the snapshot files go;
    one written by a run that stopped is left as is), then ``changelog/LATEST`` (and EARLIEST when missing)."""
    if not ids:
        return
    try:
        for changelog_id in sorted(ids):
            ctx.store.write_changelog(changelog_id)
    except OSError as exc:
        raise MaintenanceError(
            f"could not write long-lived changelog {changelog_id}, no snapshot was deleted (the journal is kept; the "
            f"next expiration finishes): {exc}"
        ) from exc
    ctx.store.write_changelog_hint(LATEST, max(ids))
    if ctx.store.read_changelog_hint(EARLIEST) is None:
        ctx.store.write_changelog_hint(EARLIEST, min(ids))


def delete_changelogs(
    ctx: TableContext, plan: ExpirePlan, delete: Callable[[Sequence[PlannedFile]], list[str]]
) -> set[str]:
    """A changelog expiration's step before its files go: ``changelog/EARLIEST`` moves to the first changelog kept,
    then the expired ``changelog/changelog-<id>`` files are deleted, ascending (``delete``); the paths deleted."""
    if not plan.changelog_root_files:
        return set()
    if plan.changelog_end is not None:
        ctx.store.write_changelog_hint(EARLIEST, plan.changelog_end)
    return set(delete(plan.changelog_root_files))
