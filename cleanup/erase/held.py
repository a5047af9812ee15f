"""Erased rows in files the undo window holds (docs/undo.md): a purge deletes them too, at once.

Files an earlier maintenance run deferred (``maintenance.undo-window``) are referenced by no snapshot, so the
erasure's rewrite and its snapshot expiration never meet them, yet they may hold the rows being erased. ``erase
--purge`` reads the filter's columns of every held Parquet file and deletes those with a matching row; the run that
held them can no longer be undone (its undo is refused: a file it kept is gone), which is the point of an erasure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.context import TableContext
from tableformat.model.erasure import PendingErasure
from tableformat.undo_store import held_paths

from ..kernel import Deleter
from .pins import Pin, RootFiles
from .predicate import EraseFilter
from .verify import PARQUET_MARK, file_matches


@dataclass(frozen=True, slots=True)
class HeldMatches:
    """Held files holding erased rows: (path, bytes), and the runs that held them."""

    files: tuple[tuple[str, int], ...] = ()
    runs: tuple[str, ...] = ()

    def note(self, deleted: int | None = None) -> str:
        if not self.files:
            return ""
        verb = "would delete" if deleted is None else "deleted"
        count = len(self.files) if deleted is None else deleted
        return (
            f"{verb} {count} file(s) the undo window held that hold erased rows (run(s) {', '.join(self.runs)}: "
            "they can no longer be undone)"
        )


def window_matches(ctx: TableContext, row_filter: EraseFilter) -> HeldMatches:
    """The held Parquet files with a row the filter matches (reading only its columns)."""
    runs = ctx.store.held_runs()
    held = held_paths(runs)
    if not held:
        return HeldMatches()
    types = arrow_schema_of(list(ctx.schema.fields))
    fs = ctx.io.arrow_filesystem()
    found = []
    for path, size in sorted(held.items()):
        if PARQUET_MARK in path.rsplit("/", 1)[-1] and ctx.io.file_exists(ctx.layout.join(path)):
            count, _ = file_matches(ctx, fs, ctx.layout.join(path), row_filter, types)
            if count:
                found.append((path, size))
    names = {path for path, _ in found}
    return HeldMatches(tuple(found), tuple(run.run_id for run in runs if names.intersection(run.held)))


def delete_held_matches(ctx: TableContext, matches: HeldMatches, threads: int) -> tuple[list[str], int, list[str]]:
    """Delete them (no window: erased bytes go now); returns (deleted, bytes, failures)."""
    deleter = Deleter(ctx.io, ctx.layout, threads, label="erase deleted held")
    deleter.delete(list(matches.files))
    return deleter.deleted, deleter.deleted_bytes, deleter.failures


@dataclass(frozen=True, slots=True)
class Unnamed:
    """What :func:`delete_unnamed` did: the files it deleted, and who still holds the others."""

    deleted: tuple[str, ...] = ()
    deleted_bytes: int = 0
    holders: Mapping[Pin, frozenset[str]] = field(default_factory=dict)
    """Every root (and consumer) that still names one of the files, with the names it holds."""
    held: frozenset[str] = frozenset()
    """Names of the files left: held by a root, or not deleted (a failed delete)."""


def delete_unnamed(ctx: TableContext, paths: Sequence[str], threads: int) -> Unnamed:
    """Delete the files of ``paths`` (relative to the root) that no root names any more (a rewritten tag's old
    files, a deleted tag's). Erased bytes never wait for the undo window (the caller runs outside it)."""
    holders = RootFiles(ctx).holding({_name(path) for path in paths})
    held = {name for names in holders.values() for name in names}
    deleter = Deleter(ctx.io, ctx.layout, threads, label="erase deleted")
    deleter.delete([(path, 0) for path in sorted({path for path in paths if _name(path) not in held})])
    held |= {_name(failure.split(": ", 1)[0]) for failure in deleter.failures}
    return Unnamed(tuple(deleter.deleted), deleter.deleted_bytes, holders, frozenset(held))


def finish_pending(
    ctx: TableContext, due: Sequence[PendingErasure], threads: int
) -> tuple[Unnamed, list[PendingErasure]]:
    """Delete the files of the ``due`` pending erasures that no root names any more, and the record of each erasure
    none of whose files is left; (what was deleted and who holds the rest, the erasures still held)."""
    unnamed = delete_unnamed(ctx, [path for pending in due for path in pending.files], threads)
    late = [pending for pending in due if unnamed.held.intersection(map(_name, pending.files))]
    for pending in due:
        if pending not in late:
            ctx.store.delete_pending_erasure(pending.snapshot_id)
    return unnamed, late


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]
