"""Plan an orphan cleanup: candidates first, then references, then the late stat of what is left."""

from __future__ import annotations

import logging
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
from tableformat.model.undo import HeldRun
from tableformat.parallel import bounded_map, executor, resolve_parallelism
from tableformat.undo_store import kept_from_orphans
from tableformat.units import iso_from_ms

from .candidates import CandidateSet, _Census, _old_enough, _take_census
from .file_list import FileList
from .model import MIN_SANE_MTIME_MS, STAT_CHUNK, OrphanFile, OrphanPlan, resolve_older_than_ms
from .references import _discard_referenced
from .sharing import SharedRead

log = logging.getLogger(__name__)

_REFERENCE_ERRORS = (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, OSError)


def _stat_unreferenced(
    ctx: TableContext, threads: int, candidates: CandidateSet, cutoff_ms: int, no_mtime: list[str], gone: list[str]
) -> list[OrphanFile]:
    """The unreferenced candidates older than the cutoff. Those listed without size and mtime are stat'ed now, in
    chunks over ``threads`` threads (inline on local disk, where a stat of a listed file is too quick for threads
    to pay off); a file gone since is skipped (added to ``gone``), one without a usable mtime goes to
    ``no_mtime``. Stat'ing after the references were read is as safe as at listing time: a table file is never
    rewritten, so its mtime can only be the same."""
    orphans: list[OrphanFile] = []
    unstated: list[str] = []
    for directory, name, size, mtime_ms in candidates.items():
        path = f"{directory}/{name}" if directory else name
        if mtime_ms:
            orphans.append(OrphanFile(path, size, mtime_ms))
        else:
            unstated.append(path)
    layout, file_io = ctx.layout, ctx.io

    def stat_chunk(chunk: list[str]) -> list[FileInfo | None]:
        return [file_io.stat_file(layout.join(rel)) for rel in chunk]

    chunks = [unstated[i : i + STAT_CHUNK] for i in range(0, len(unstated), STAT_CHUNK)]
    with executor(min(threads, len(chunks)), "tablefmt-stat") as pool:
        for chunk, infos in bounded_map(pool, stat_chunk, chunks, 2 * threads):
            for path, info in zip(chunk, infos):
                if info is None:
                    gone.append(path)
                elif _old_enough(info, cutoff_ms, path, no_mtime):
                    orphans.append(OrphanFile(path, info.size, info.mtime_ms))
    orphans.sort(key=lambda o: o.path)
    return orphans


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
) -> OrphanPlan:
    """List candidates (or take them from ``file_list``, the cutoff capped at its creation time, no directory
    removed), then subtract everything referenced; nothing is deleted. Raises ValidationError for a refused cutoff
    and MaintenanceError when any directory, root, manifest list or manifest cannot be read (nothing can be safely
    called an orphan then). ``shared``: hand the listings and every root's lists and manifests to a caller that
    needs them too (sharing.py); the plan is the same."""
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
            candidates = census.candidates
            found = len(candidates)
            roots_read, held = _discard_referenced(ctx, pool, workers, census, cutoff_ms, planned_at, shared)
            orphans = _stat_unreferenced(ctx, workers, candidates, cutoff_ms, census.no_mtime, census.gone)
            orphans = _not_held(orphans, held or [], planned_at, notes)
        except MaintenanceError:
            raise
        except _REFERENCE_ERRORS as exc:
            raise MaintenanceError(f"orphan cleanup of {ctx.url()} stopped, nothing was deleted: {exc}") from exc
    layout = ctx.layout
    empty = () if ctx.io.is_object_store or file_list is not None else _empty_dirs(census, orphans, cutoff_ms)
    if file_list is not None and census.gone:  # a list may be days old: files it names may be gone, no error
        notes.append(f"{len(census.gone)} file(s) the {file_list.kind} names were already gone (not orphans)")
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
    )


def _not_held(orphans: list[OrphanFile], held: list[HeldRun], now_ms: int, notes: list[str]) -> list[OrphanFile]:
    """The orphans minus the files the undo window keeps (cleanup/kernel/deferral.py), as read once the roots were
    listed: a run that takes files out of the table lists them as pending before it deletes the snapshots naming
    them, so one the references missed is listed. Unreadable lists raised there (nothing is an orphan then)."""
    if not orphans:
        return orphans
    kept = kept_from_orphans(held, now_ms)
    if not kept:
        return orphans
    left = [orphan for orphan in orphans if orphan.path not in kept]
    if len(left) < len(orphans):
        notes.append(f"{len(orphans) - len(left)} unreferenced file(s) are kept by the undo window (not orphans)")
    return left


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
