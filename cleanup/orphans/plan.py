"""Plan an orphan cleanup: candidates first, then references, then the late stat of what is left."""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from datetime import timedelta

from tableformat.clock import system_clock
from tableformat.context import TableContext
from tableformat.data_paths import require_data_inside_root
from tableformat.errors import (
    CorruptMetadataError,
    MaintenanceError,
    StorageError,
    UnsafePathError,
    UnsupportedFormatError,
)
from tableformat.io.fileio import FileInfo
from tableformat.options import ORPHAN_MAX_FILES
from tableformat.parallel import bounded_map, executor, resolve_parallelism
from tableformat.undo_store import kept_from_orphans
from tableformat.units import iso_from_ms

from .candidates import _Census, _old_enough, _take_census
from .file_list import FileList
from .model import MIN_SANE_MTIME_MS, STAT_CHUNK, OrphanFile, OrphanPlan, resolve_older_than_ms
from .references import _discard_referenced
from .sharing import SharedRead

log = logging.getLogger(__name__)

_REFERENCE_ERRORS = (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, OSError)


def _stat_unreferenced(
    ctx: TableContext, threads: int, census: _Census, cutoff_ms: int, limit: int, kept: _Kept
) -> tuple[list[OrphanFile], int]:
    """The unreferenced candidates older than the cutoff and not kept by the undo window (``kept``, which counts
    those it skips), at most ``limit`` of them (sorted by path), and how many unreferenced candidates were left for
    a later run beyond them (the backlog: at most that many more orphans). Kept files never count toward the limit:
    a run whose first candidates the undo window holds still plans the next ones.

    Candidates are taken as :meth:`CandidateSet.items` yields them (nothing holds them all). Those listed without
    size and mtime are stat'ed in rounds, never more of them at a time than could still become orphans under the
    limit, in chunks over ``threads`` threads (inline on local disk, where a stat of a listed file is too quick for
    threads to pay off); a file gone since is skipped (counted in ``census.gone``), one without a usable mtime goes
    to ``census.no_mtime``. Once ``limit`` orphans are found the rest are counted, not stat'ed. Stat'ing after the
    references were read is as safe as at listing time: a table file is never rewritten, so its mtime can only be
    the same."""
    orphans: list[OrphanFile] = []
    unstated: list[str] = []
    layout, file_io = ctx.layout, ctx.io
    round_size = 2 * threads * STAT_CHUNK

    def stat_chunk(chunk: list[str]) -> list[FileInfo | None]:
        return [file_io.stat_file(layout.join(rel)) for rel in chunk]

    def stat_round(pool: Executor) -> None:
        chunks = [unstated[i : i + STAT_CHUNK] for i in range(0, len(unstated), STAT_CHUNK)]
        unstated.clear()
        for chunk, infos in bounded_map(pool, stat_chunk, chunks, 2 * threads):
            for path, info in zip(chunk, infos):
                if info is None:
                    census.gone += 1
                elif _old_enough(info, cutoff_ms, path, census.no_mtime):
                    orphans.append(OrphanFile(path, info.size, info.mtime_ms))

    left = 0
    with executor(threads, "tablefmt-stat") as pool:
        for directory, name, size, mtime_ms in census.candidates.items():
            path = f"{directory}/{name}" if directory else name
            if kept.holds(path):
                continue
            if unstated and len(orphans) + len(unstated) >= limit:
                stat_round(pool)  # what is pending decides whether this one can still be planned
            if len(orphans) >= limit:
                left += 1
            elif mtime_ms:
                orphans.append(OrphanFile(path, size, mtime_ms))
            else:
                unstated.append(path)
                if len(unstated) >= round_size:
                    stat_round(pool)
        stat_round(pool)
    orphans.sort(key=lambda o: o.path)
    return orphans, left


def _empty_dirs(census: _Census, orphans: list[OrphanFile], cutoff_ms: int) -> tuple[str, ...]:
    """Data directories that will be empty after the orphans are deleted, deepest first."""
    for orphan in orphans:
        node = census.nodes.get(orphan.path.rpartition("/")[0])
        if node is not None:
            node.gone += 1
    removable: list[str] = []
    for node in sorted(census.nodes.values(), key=lambda n: (-n.depth, n.rel)):
        if node.entries - node.gone > 0:
            continue
        emptied = node.gone > 0
        old_and_empty = node.entries == 0 and MIN_SANE_MTIME_MS < node.mtime_ms < cutoff_ms
        if emptied or old_and_empty:
            removable.append(node.rel)
            parent = census.nodes.get(node.parent)
            if parent is not None:
                parent.gone += 1
    return tuple(removable)


def plan_orphan_removal(
    ctx: TableContext,
    *,
    older_than: timedelta | None = None,
    force: bool = False,
    parallelism: int | None = None,
    now_ms: int | None = None,
    file_list: FileList | None = None,
    shared: SharedRead | None = None,
    max_files: int | None = None,
) -> OrphanPlan:
    """List candidates (or take them from ``file_list``, the cutoff capped at its creation time, no directory
    removed), then subtract everything referenced; nothing is deleted. ValidationError for a refused cutoff,
    MaintenanceError when any directory, root, list or manifest cannot be read (nothing is safely an orphan then).
    ``shared``: hand the listings and every root's lists and manifests to a caller that needs them too (sharing.py);
    the plan is the same. ``max_files``: at most this many orphans (default ``orphan-files.max-files``; the rest of
    the unreferenced candidates are the plan's backlog)."""
    older_ms = resolve_older_than_ms(ctx, older_than, force=force)
    workers = resolve_parallelism(ctx.options, ctx.io, parallelism)
    require_data_inside_root(ctx.options, ctx.url(), "clean orphan files of")
    planned_at = system_clock() if now_ms is None else now_ms
    notes: list[str] = []
    cutoff_ms = _capped_cutoff(file_list, planned_at - older_ms, notes)
    with executor(workers, "tablefmt-orphans") as pool:
        try:
            observe = None if shared is None or file_list is not None else shared.listed
            census = _take_census(ctx, pool, workers, cutoff_ms, file_list, observe)
            found = len(census.candidates)
            roots_read, held = _discard_referenced(ctx, pool, workers, census, cutoff_ms, planned_at, shared)
            limit = ctx.options.require_or(ORPHAN_MAX_FILES, max_files)
            kept = _Kept(kept_from_orphans(held, planned_at) if held else set())
            orphans, backlog = _stat_unreferenced(ctx, workers, census, cutoff_ms, limit, kept)
        except MaintenanceError:
            raise
        except _REFERENCE_ERRORS as exc:
            raise MaintenanceError(f"orphan cleanup of {ctx.url()} stopped, nothing was deleted: {exc}") from exc
    layout = ctx.layout
    empty = () if ctx.io.is_object_store or file_list is not None else _empty_dirs(census, orphans, cutoff_ms)
    notes += _left_notes(file_list, census.gone, limit, backlog, kept.skipped)
    log.info(
        "orphan plan for %s: %d dirs, %d files listed, %d candidates, %d roots read, %d orphans, %d unknown",
        *(ctx.url(layout.root), census.directories, census.files, found, roots_read, len(orphans), len(census.unknown)),
    )
    return OrphanPlan(
        root=layout.root,
        planned_at_ms=planned_at,
        cutoff_ms=cutoff_ms,
        orphans=tuple(orphans),
        skipped_unknown=tuple(sorted(census.unknown)),
        skipped_no_mtime=tuple(sorted(census.no_mtime)),
        empty_dirs=empty,
        skipped_nested_tables=tuple(sorted(census.nested)),
        directories_listed=census.directories,
        files_listed=census.files,
        candidates=found,
        roots_read=roots_read,
        notes=tuple(notes),
        held_runs=None if held is None else tuple(held),
        backlog=backlog,
    )


def _left_notes(file_list: FileList | None, gone: int, limit: int, backlog: int, kept: int) -> list[str]:
    """Notes on what the plan left: files a list names that are gone (a list may be days old: no error), files the
    undo window keeps, and the candidates beyond the run's limit."""
    notes = [f"{gone} file(s) the {file_list.kind} names were already gone (not orphans)"] if file_list and gone else []
    if kept:
        notes.append(f"{kept} unreferenced file(s) are kept by the undo window (not orphans)")
    if backlog:
        notes.append(
            f"stopped at {limit} orphan(s) (orphan-files.max-files): up to {backlog} more unreferenced file(s) are "
            "left for the next run"
        )
    return notes


class _Kept:
    """The files the undo window keeps (cleanup/kernel/deferral.py), as read once the roots were listed: a run that
    takes files out of the table lists them as pending before it deletes the snapshots naming them, so one the
    references missed is listed. Unreadable lists raised there (nothing is an orphan then). Counts the candidates
    it holds back."""

    def __init__(self, paths: set[str]) -> None:
        self.paths = paths
        self.skipped = 0

    def holds(self, path: str) -> bool:
        if path in self.paths:
            self.skipped += 1
            return True
        return False


def _capped_cutoff(file_list: FileList | None, cutoff_ms: int, notes: list[str]) -> int:
    """The cutoff, capped at the file list's creation time when there is one (files written after it are not in
    it), noted."""
    if file_list is None:
        return cutoff_ms
    notes.append(
        f"files taken from {file_list.describe()} ({len(file_list.files)} under the table root, "
        f"{file_list.outside_root} elsewhere ignored): the table's directories were not listed"
    )
    if file_list.created_ms < cutoff_ms:
        notes.append(
            f"cutoff capped at the {file_list.kind}'s creation time {iso_from_ms(file_list.created_ms)}: "
            "newer files cannot be judged from it"
        )
        return file_list.created_ms
    return cutoff_ms
