"""Erased rows in files the undo window holds (docs/undo.md): a purge deletes them too, at once.

Files an earlier maintenance run deferred (``maintenance.undo-window``) are referenced by no snapshot, so the
erasure's rewrite and its snapshot expiration never meet them, yet they may hold the rows being erased. ``erase
--purge`` reads the filter's columns of every held Parquet file and deletes those with a matching row; the run that
held them can no longer be undone (its undo is refused: a file it kept is gone), which is the point of an erasure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.context import TableContext
from tableformat.undo_store import held_paths

from ..kernel import Deleter
from .pins import RootFiles
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


def delete_unnamed(ctx: TableContext, paths: Sequence[str], threads: int) -> tuple[list[str], int, set[str]]:
    """Delete the files of ``paths`` (relative to the root) that no root names any more (a rewritten tag's old
    files, a deleted tag's): (deleted, bytes, names some root still holds). Erased bytes never wait for the undo
    window (the caller runs outside it)."""
    holders = RootFiles(ctx).holding({path.rsplit("/", 1)[-1] for path in paths})
    held = {name for names in holders.values() for name in names}
    free = sorted({path for path in paths if path.rsplit("/", 1)[-1] not in held})
    deleter = Deleter(ctx.io, ctx.layout, threads, label="erase deleted")
    deleter.delete([(path, 0) for path in free])
    if deleter.failures:
        held |= {failure.split(": ", 1)[0].rsplit("/", 1)[-1] for failure in deleter.failures}
    return deleter.deleted, deleter.deleted_bytes, held
