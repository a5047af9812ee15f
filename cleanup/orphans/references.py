"""Subtracting every referenced name from the candidates: a first pass over the roots read at the start, then
the closing passes over every root that appeared meanwhile."""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from dataclasses import dataclass, field

from tableformat.context import TableContext
from tableformat.errors import MaintenanceError
from tableformat.layout import LATEST
from tableformat.model.undo import HeldRun

from ..roots import MAX_ROUNDS, References, Root, index_manifest_owners, list_owners
from .candidates import CandidateSet, _Census, _settle_manifests
from .census import DATA_FILE_KINDS, INDEX_FILE_KINDS, MANIFEST_FILE_KINDS
from .selection import DataManifestSelection, ListSummary, summarize
from .sharing import SharedRead

log = logging.getLogger(__name__)


def saved_roots(ctx: TableContext, held_runs: list[HeldRun], now_ms: int) -> list[Root]:
    """The snapshots, tags and changelogs an undo window keeps copies of (cleanup/kernel/deferral.py; a rollback
    saves the snapshots it removes there too), while the window lasts: what they reference is no orphan, so that
    ``tablefmt undo`` finds every file they name."""
    store = ctx.store
    found: dict[str, Root] = {}
    for held in held_runs:
        if held.is_due(now_ms):
            continue
        for rel in held.saved:
            path = ctx.layout.undo_saved_file(held.run_id, rel)
            if path in found:
                continue
            snapshot = store.read_saved_root(held.run_id, rel)
            if snapshot is not None:
                found[path] = Root(f"undo window {held.run_id} {rel}", path, snapshot, "tag")
    return list(found.values())


def _unique(roots: list[Root]) -> list[Root]:
    return list({root.path: root for root in roots}.values())


def _discard_referenced(
    ctx: TableContext,
    pool: Executor,
    parallelism: int,
    census: _Census,
    cutoff_ms: int,
    now_ms: int,
    shared: SharedRead | None = None,
) -> tuple[int, list[HeldRun] | None]:
    """Remove every referenced name from the candidates; returns the number of roots read and the runs the undo
    window holds files for (read once the table's roots are listed); nothing is read when there is no candidate
    (and no ``shared``).

    Manifest lists are read in two steps: first those the data selection needs (every delta list, the base lists
    at the ends of each run of snapshots); then, only if a manifest-like candidate is still unreferenced and old
    enough (its age is checked now, see _settle_manifests), every other list, to know every manifest in use.
    Then the read is closed (_close_over_new_roots): the roots are listed again, and every root that appeared
    meanwhile is read in full, until a listing shows no root that was not read.

    With ``shared`` (a caller that needs every root's manifests, see sharing.py) the first pass reads every list
    and manifest of the table's roots and hands them over; the undo window's copies are read as above.
    """
    if not len(census.candidates) and shared is None:
        return 0, None
    refs = References(ctx, pool, parallelism)
    # The undo window is read before the roots are listed and again after: an expiration saves a copy and lists
    # pending files before the original goes (cleanup/kernel/deferral.py), so the read after finds what the listing
    # missed; an undo writes the copies back and only then removes the run's window, so what it put back after the
    # listing was in the read before. What either read holds is subtracted by the caller, what its copies name here.
    # Each read's saved copies are read at once: a copy gone by then was written back (an undo removes them last).
    held = ctx.store.held_runs()
    before = saved_roots(ctx, held, now_ms)
    roots = refs.collect_roots(settle=False)  # _close_over_new_roots lists them again after reading everything
    after = ctx.store.held_runs()
    held += after
    saved = _unique([*before, *saved_roots(ctx, after, now_ms)])
    main_snapshots = [r for r in roots if r.kind == "snapshot" and not r.branch]
    if not main_snapshots and ctx.io.exists(ctx.layout.hint_file(LATEST)):
        raise MaintenanceError(
            f"{ctx.url()} lists no snapshot but has a LATEST hint: refusing to treat every file as an orphan"
        )
    read = _ReadSoFar()
    if shared is None:
        roots += saved
        _discard_first_pass(ctx, refs, census, cutoff_ms, roots, read)
    else:
        _discard_everything(refs, census.candidates, roots, read, shared)
        _discard_first_pass(ctx, refs, census, cutoff_ms, saved, read)
        roots += saved
    return len(roots) + _close_over_new_roots(refs, census.candidates, roots, read), held


@dataclass
class _ReadSoFar:
    """Manifest lists and manifests whose names were already discarded from the candidates."""

    lists: set[str] = field(default_factory=set)
    manifests: set[str] = field(default_factory=set)
    index_manifests: set[str] = field(default_factory=set)


def _discard_index_files(refs: References, candidates: CandidateSet, roots: list[Root], read: _ReadSoFar) -> None:
    """Discard every index file the index manifests of ``roots`` name (those not read before), when an index file
    is a candidate at all."""
    if not candidates.kinds & INDEX_FILE_KINDS:
        return
    owners = {name: owners for name, owners in index_manifest_owners(roots).items() if name not in read.index_manifests}
    for _, names in refs.index_file_names(owners):
        for name in names:
            candidates.discard(name)
    read.index_manifests.update(owners)


def _discard_root_files(refs: References, candidates: CandidateSet, roots: list[Root], read: _ReadSoFar) -> None:
    """Discard the roots' own files (manifest lists, index manifest, statistics) and the index files their index
    manifests name (those not read before)."""
    for root in roots:
        for _, name in refs.root_files(root):
            candidates.discard(name)
    _discard_index_files(refs, candidates, roots, read)


def _discard_everything(
    refs: References, candidates: CandidateSet, roots: list[Root], read: _ReadSoFar, shared: SharedRead
) -> None:
    """The first pass for a caller sharing it: every root's own files, index files, manifest lists, manifests and
    the files their entries name are discarded, each list and manifest handed to ``shared`` once read."""
    shared.roots(roots)
    _discard_root_files(refs, candidates, roots, read)
    owners = list_owners(roots)
    manifests: dict[str, None] = {}
    for name, rows in refs.named_manifest_lists(owners):
        shared.manifest_list(name, rows)
        for row in rows:
            candidates.discard(row.file_name)
            manifests[row.file_name] = None
    read.lists.update(owners)
    for name, entries in refs.manifest_scan_refs(manifests):
        shared.manifest(name, entries)
        for entry in entries:
            candidates.discard(entry.file_name)
            for extra in entry.extra_files:
                candidates.discard(extra)
    read.manifests.update(manifests)


def _discard_first_pass(
    ctx: TableContext, refs: References, census: _Census, cutoff_ms: int, roots: list[Root], read: _ReadSoFar
) -> None:
    candidates = census.candidates
    _discard_root_files(refs, candidates, roots, read)
    if not candidates.kinds & (DATA_FILE_KINDS | MANIFEST_FILE_KINDS):
        return
    selection = DataManifestSelection(roots)
    summaries: dict[str, ListSummary] = {}
    for name, rows in refs.named_manifest_lists(selection.owners):
        for row in rows:
            candidates.discard(row.file_name)
        summaries[name] = summarize(rows)
    read.lists.update(selection.owners)
    if _settle_manifests(ctx, census, cutoff_ms):  # old manifest-like files nothing read so far names
        rest = {name: owners for name, owners in list_owners(roots).items() if name not in summaries}
        for _, rows in refs.named_manifest_lists(rest):
            for row in rows:
                candidates.discard(row.file_name)
        read.lists.update(rest)
    if not candidates.kinds & DATA_FILE_KINDS:
        return
    manifests = selection.select(summaries)
    if manifests is None:  # a list vanished with its snapshot: read everything rather than reason about it
        log.info("a manifest list vanished during the run; reading every manifest")
        manifests = {row.file_name: None for _, rows in refs.manifest_lists(roots) for row in rows}
    manifests = {name: None for name in manifests if name not in read.manifests}  # their names were discarded
    for _, files in refs.manifest_file_names(manifests):
        for name in files:
            candidates.discard(name)
    read.manifests.update(manifests)


def _close_over_new_roots(refs: References, candidates: CandidateSet, roots: list[Root], read: _ReadSoFar) -> int:
    """List the roots again until a listing shows none that was not read; read every new one in full. Returns how
    many new roots were read.

    Why (issue 10, defect 2): while the first pass read, expiration may have removed the snapshots it had listed,
    with their manifest lists, and commits may have added newer snapshots that still name old files. A new root
    names only files that some root of an earlier listing names, or files written after the candidates were
    listed (too young to be candidates, assumption A3): a commit builds on the latest snapshot, a tag or branch
    copies an existing snapshot. So once a listing taken after all reading holds no unread root, every file any
    present or future root references has been discarded from the candidates.
    """
    seen = {(root.path, root.snapshot.base_manifest_list) for root in roots}
    known = list(roots)  # listed again, these are not read again: a root re-created under a known name (an id
    # reused after a rollback) names only files of its parent or younger ones, the same argument as below
    added = 0
    for _ in range(MAX_ROUNDS):
        if not len(candidates):
            return added
        listed = refs.collect_roots(known=known)
        new = [root for root in listed if (root.path, root.snapshot.base_manifest_list) not in seen]
        known += new
        if not new:
            return added
        log.info("%d root(s) appeared while references were read; reading them too", len(new))
        seen.update((root.path, root.snapshot.base_manifest_list) for root in new)
        added += len(new)
        _discard_root_files(refs, candidates, new, read)
        if not candidates.kinds & (DATA_FILE_KINDS | MANIFEST_FILE_KINDS):
            continue
        owners = {name: owners for name, owners in list_owners(new).items() if name not in read.lists}
        manifests: dict[str, None] = {}
        for _, rows in refs.named_manifest_lists(owners):
            for row in rows:
                candidates.discard(row.file_name)
                if row.file_name not in read.manifests:
                    manifests[row.file_name] = None
        read.lists.update(owners)
        if not candidates.kinds & DATA_FILE_KINDS:
            continue
        for _, files in refs.manifest_file_names(manifests):
            for name in files:
                candidates.discard(name)
        read.manifests.update(manifests)
    raise MaintenanceError(
        f"the snapshots and tags of {refs.ctx.url()} kept changing over {MAX_ROUNDS} listings after the references "
        "were read; nothing was deleted, try again later"
    )
