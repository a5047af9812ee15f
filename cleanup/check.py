"""``tablefmt check``: every file the table references exists with its recorded size; orphans and reclaimable bytes.

What is referenced, and how each file is verified, is in :mod:`.check_references`. Data files are looked for where
:class:`tableformat.data_paths.DataPaths` puts them (``data-file.path-directory`` included); those with an external
path are outside the table root and are not checked. On a table whose options put files outside the root, orphans
and reclaimable bytes are not counted (tablefmt does not clean or expire such tables).

Orphans are counted with the cleaner's own planner (same classification and references; the table's default cutoff
unless ``older_than`` is given), so ``check`` lists exactly the orphans a ``remove-orphans`` dry run with the same
cutoff lists. The planner lists the table and reads every root's lists and manifests once for both
(cleanup/orphans/sharing.py): the sizes come from its listing, the references from its reads. Only when it cannot
plan (an unreadable manifest, a table with files outside its root) does ``check`` list and read on its own,
tolerating what it cannot read so that the rest is still verified.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from tableformat.context import TableContext
from tableformat.data_paths import DataPaths, data_directory, outside_root_reason
from tableformat.errors import (
    CorruptMetadataError,
    MaintenanceError,
    StorageError,
    TableFormatError,
    UnsafePathError,
    UnsupportedFormatError,
    ValidationError,
)
from tableformat.options import ORPHAN_CANDIDATES_IN_MEMORY
from tableformat.parallel import executor, resolve_parallelism
from tableformat.undo_store import held_paths
from tableformat.units import human_bytes

from .check_references import (
    FileProblem,
    ManifestsRead,
    PlannerRead,
    Verifier,
    collect_references,
    read_tolerantly,
)
from .kernel import SHOWN, run_operation, shown_paths
from .orphans import OrphanPlan, plan_orphan_removal, resolve_older_than_ms
from .orphans.census import DirKind, walk_listed, walk_table
from .orphans.file_list import FileList, load_file_list
from .roots import References, Root
from .snapshots import SNAPSHOT_EXPIRATION

log = logging.getLogger(__name__)

T = TypeVar("T")

_SIZED_KINDS = frozenset({DirKind.MANIFEST, DirKind.STATISTICS, DirKind.INDEX, DirKind.BUCKET})
"""The directories whose files check verifies (every referenced file is in one of them)."""

_READ_ERRORS = (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, MaintenanceError, OSError)


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """What check_table found."""

    snapshots: int
    tags: int
    roots: int
    """Snapshots, tags and changelogs of the main table and every branch."""
    referenced_files: int
    referenced_bytes: int
    missing_files: tuple[FileProblem, ...]
    size_mismatches: tuple[FileProblem, ...]
    errors: tuple[str, ...]
    """Metadata that could not be read (the check of the files behind it is incomplete)."""
    orphan_files: int | None
    """None when orphans could not be counted (see errors)."""
    orphan_bytes: int
    reclaimable_bytes: int
    reclaimable_note: str
    external_files_skipped: int = 0
    skipped_nested_tables: tuple[str, ...] = ()
    """Roots of other tables inside this one's data directories: not checked, never entered by orphan cleanup."""
    orphan_paths: tuple[str, ...] = ()
    """The orphans counted, relative to the root: exactly what a ``remove-orphans`` dry run with the same cutoff
    lists."""
    skipped_unknown: tuple[str, ...] = ()
    """Files whose names the format does not produce there (or whose kind cannot be decided): never orphans."""
    notes: tuple[str, ...] = ()
    """What the check could not judge and why (with a file list: where the files came from, the capped cutoff)."""
    held_files: int = 0
    """Files the undo window keeps (``maintenance.undo-window``, docs/undo.md): never orphans, never referenced,
    deleted once their window ends."""
    held_bytes: int = 0
    orphan_backlog: int = 0
    """Unreferenced files beyond the ``orphan-files.max-files`` orphans counted (a ``remove-orphans`` run leaves them
    for the next run): at most that many more orphans."""

    @property
    def ok(self) -> bool:
        return not self.missing_files and not self.size_mismatches and not self.errors

    def summary(self) -> tuple[str, ...]:
        """The text report: ok or NOT OK with the counts, each problem (the first :data:`SHOWN` of each kind),
        orphans and reclaimable bytes."""
        lines = [
            f"{'ok' if self.ok else 'NOT OK'}: {self.snapshots} snapshot(s), {self.tags} tag(s), "
            f"{self.referenced_files} referenced file(s), {human_bytes(self.referenced_bytes)}"
        ]
        lines += [f"  missing {p.kind} {p.path} (referenced by {p.referenced_by})" for p in self.missing_files[:SHOWN]]
        lines += [
            f"  size mismatch {p.path}: recorded {p.expected_size}, found {p.actual_size}"
            for p in self.size_mismatches[:SHOWN]
        ]
        lines += [f"  error: {error}" for error in self.errors]
        if self.external_files_skipped:
            lines.append(f"external data files not checked: {self.external_files_skipped}")
        lines += shown_paths(self.skipped_nested_tables, "nested tables (not checked, never cleaned)")
        orphans = "not counted" if self.orphan_files is None else f"{self.orphan_files}"
        more = f", and up to {self.orphan_backlog} more beyond orphan-files.max-files" if self.orphan_backlog else ""
        lines.append(f"orphan files: {orphans} ({human_bytes(self.orphan_bytes)}){more}")
        lines += shown_paths(self.orphan_paths, "orphans")
        lines.append(f"reclaimable: {human_bytes(self.reclaimable_bytes)} ({self.reclaimable_note})")
        if self.held_files:
            lines.append(f"held by the undo window: {self.held_files} file(s), {human_bytes(self.held_bytes)}")
        return (*lines, *(f"note: {note}" for note in self.notes))

    def to_json(self) -> dict[str, object]:
        """The --json document."""
        return {
            "ok": self.ok,
            "snapshots": self.snapshots,
            "tags": self.tags,
            "roots": self.roots,
            "referenced_files": self.referenced_files,
            "referenced_bytes": self.referenced_bytes,
            "missing_files": len(self.missing_files),
            "missing": [p.to_json() for p in self.missing_files],
            "size_mismatches": [p.to_json() for p in self.size_mismatches],
            "errors": list(self.errors),
            "orphan_files": self.orphan_files,
            "orphan_bytes": self.orphan_bytes,
            "orphan_backlog": self.orphan_backlog,
            "reclaimable_bytes": self.reclaimable_bytes,
            "reclaimable_note": self.reclaimable_note,
            "held_files": self.held_files,
            "held_bytes": self.held_bytes,
            "skipped_external_files": self.external_files_skipped,
            "skipped_nested_tables": list(self.skipped_nested_tables),
            "orphan_paths": list(self.orphan_paths),
            "skipped_unknown": list(self.skipped_unknown),
            "notes": list(self.notes),
        }


def _list_sizes(
    ctx: TableContext,
    pool: Executor,
    workers: int,
    data_dir: str | None,
    nested: list[str],
    file_list: FileList | None,
    verifier: Verifier,
) -> None:
    """Give ``verifier`` the size of every file in the manifest, statistics and data directories (under
    ``data_dir``; None: no data directory inside the root), by path relative to the root: listed, or as
    ``file_list`` names them (walked a batch at a time). Roots of other tables found where data directories were
    expected are added to ``nested`` (never entered)."""
    kinds = _SIZED_KINDS if data_dir is not None else _SIZED_KINDS - {DirKind.BUCKET}
    keys = ctx.schema.partition_keys
    if file_list is None:
        walk = walk_table(ctx.io, ctx.layout, keys, pool, workers, data_dir=data_dir or "")
    else:
        walk = walk_listed(file_list.files, ctx.layout, keys, data_dir=data_dir or "")
    for listing in walk:
        if listing.kind is DirKind.NESTED_TABLE and listing.rel not in nested:
            nested.append(listing.rel)
        if listing.kind in kinds:
            verifier.list_listing(listing)


def _reclaimable(ctx: TableContext, plan: OrphanPlan | None) -> tuple[int, str]:
    """Orphan bytes plus what a snapshot expiration under the table's options would delete now (its dry run)."""
    outside = outside_root_reason(ctx.options)
    if outside is not None:
        return 0, f"orphans and reclaimable bytes not counted: {outside}"
    orphan_bytes = 0 if plan is None else plan.orphan_bytes
    try:
        planned = run_operation(SNAPSHOT_EXPIRATION, ctx, dry_run=True)
    except TableFormatError as exc:  # an expiration that cannot be planned must not fail the check
        log.warning("could not plan expiration for the reclaimable estimate: %s", exc)
        return orphan_bytes, f"orphan bytes only (expiration dry run failed: {exc})"
    return (
        orphan_bytes + planned.deleted_bytes,
        "orphan bytes + bytes an expiration under the table's options would delete now",
    )


def _planned_with_references(
    ctx: TableContext,
    verifier: Verifier,
    workers: int,
    cutoff: tuple[timedelta | None, bool, int | None],
    listed: FileList | None,
    data_dir: str | None,
) -> tuple[OrphanPlan, PlannerRead] | None:
    """The cleaner's own dry-run plan (the table's default cutoff is taken as given: forced, as before), made once
    for both: its listing (or the file list) gives the sizes, and it hands over every root's lists and manifests.
    None (the reason in the verifier's errors) when it cannot be made, nor on a table whose options put files
    outside the root (tablefmt neither cleans nor expires those)."""
    if outside_root_reason(ctx.options) is not None or data_dir is None:
        return None
    older_than, force, now_ms = cutoff
    paths = DataPaths(ctx.schema, ctx.partition_codec())
    shared = PlannerRead(_SIZED_KINDS, verifier, paths)
    if listed is not None:
        with executor(1, "tablefmt-check") as pool:
            _list_sizes(ctx, pool, 1, data_dir, [], listed, verifier)
    try:
        plan = plan_orphan_removal(
            ctx,
            older_than=older_than,
            force=older_than is None or force,
            parallelism=workers,
            now_ms=now_ms,
            file_list=listed,
            shared=shared,
        )
    except (MaintenanceError, ValidationError) as exc:
        verifier.errors.append(f"orphans not counted: {exc}")
        return None
    return plan, shared


def _verified(
    ctx: TableContext,
    workers: int,
    data_dir: str | None,
    verifier: Verifier,
    nested: list[str],
    listed: FileList | None,
    planned: PlannerRead | None,
) -> list[Root]:
    """The roots, every file they reference verified: from what the planner listed and read when it ran; else
    listed here while the lists and manifests are read (listing waits on the store, decoding on the CPU), then
    verified. A file referenced but not listed is stat'ed."""
    roots: list[Root] = []
    with executor(workers, "tablefmt-check") as pool, executor(1, "tablefmt-check-listing") as lister:
        refs = References(ctx, pool, workers)
        if planned is None:
            roots = _read_and_listed(ctx, (refs, workers, lister), data_dir, verifier, nested, listed)
        else:
            roots = planned.table_roots or []
            try:
                collect_references(ctx, refs, roots, verifier, planned.paths, planned.read, names_checked=True)
            except _READ_ERRORS as exc:
                verifier.errors.append(str(exc))
        try:
            verifier.resolve_unlisted(lambda rels: pool.map(lambda r: _stat(ctx, r), rels))
        except MaintenanceError as exc:  # a spill file that cannot be read back: the references are not verified
            verifier.errors.append(str(exc))
    return roots


def _read_and_listed(
    ctx: TableContext,
    readers: tuple[References, int, Executor],
    data_dir: str | None,
    verifier: Verifier,
    nested: list[str],
    listed: FileList | None,
) -> list[Root]:
    """Check's own listing (on the ``lister`` of ``readers`` = (references, workers, lister), while the lists and
    manifests are read) and reading, when the planner could not make them: what is missing or unreadable is
    recorded and the rest verified. Returns the roots."""
    refs, workers, lister = readers
    pool = refs.pool
    listing = None
    if listed is None:
        listing = lister.submit(_list_sizes, ctx, pool, workers, data_dir, nested, None, verifier)
    roots: list[Root] = []
    read = ManifestsRead({}, {})
    try:
        roots = refs.collect_roots()
        read = read_tolerantly(ctx, refs, roots, verifier)
    except _READ_ERRORS as exc:
        verifier.errors.append(str(exc))
    if listing is not None:
        listing.result()
    else:
        _list_sizes(ctx, pool, 1, data_dir, nested, listed, verifier)
    paths = None if data_dir is None else DataPaths(ctx.schema, ctx.partition_codec())
    try:
        collect_references(ctx, refs, roots, verifier, paths, read, names_checked=False)
    except _READ_ERRORS as exc:
        verifier.errors.append(str(exc))
    return roots


def check_table(
    ctx: TableContext,
    *,
    parallelism: int | None = None,
    older_than: timedelta | None = None,
    force: bool = False,
    now_ms: int | None = None,
    file_list: str | os.PathLike[str] | None = None,
) -> CheckResult:
    """Verify every referenced file; count orphans (cutoff as remove-orphans takes it) and reclaimable bytes. Never
    deletes anything. ``file_list``: take the table's files and their sizes from this S3 Inventory or file list
    instead of listing (referenced files it does not name are stat'ed)."""
    if older_than is not None:  # a refused cutoff is the caller's error, said before any work (not a check result)
        resolve_older_than_ms(ctx, older_than, force=force)
    workers = resolve_parallelism(ctx.options, ctx.io, parallelism)
    verifier = Verifier(ctx.options.require(ORPHAN_CANDIDATES_IN_MEMORY))
    data_dir: str | None = None
    try:
        data_dir = data_directory(ctx.options)
    except UnsupportedFormatError as exc:  # data files are not inside the root: none of them can be checked
        verifier.errors.append(str(exc))
    listed = None if file_list is None else load_file_list(ctx, file_list)
    planned = _planned_with_references(ctx, verifier, workers, (older_than, force, now_ms), listed, data_dir)
    if planned is None:  # check lists and reads on its own: nothing the planner handed over counts
        verifier = verifier.restarted()
    plan = None if planned is None else planned[0]
    nested: list[str] = []
    roots = _verified(ctx, workers, data_dir, verifier, nested, listed, None if planned is None else planned[1])
    if plan is not None:
        nested = list(plan.skipped_nested_tables)
    reclaimable, note = _reclaimable(ctx, plan)
    return CheckResult(
        snapshots=sum(1 for r in roots if r.kind == "snapshot" and not r.branch),
        tags=sum(1 for r in roots if r.kind == "tag" and not r.branch),
        roots=len(roots),
        referenced_files=verifier.referenced,
        referenced_bytes=verifier.found_bytes,
        missing_files=tuple(verifier.missing),
        size_mismatches=tuple(verifier.mismatched),
        reclaimable_bytes=reclaimable,
        reclaimable_note=note,
        external_files_skipped=verifier.external,
        skipped_nested_tables=tuple(sorted(nested)),
        **_orphan_fields(plan, _held(ctx, verifier, plan)),
        errors=tuple(verifier.errors),
    )


def _orphan_fields(plan: OrphanPlan | None, held: dict[str, int]) -> dict[str, Any]:
    """The result's orphan and undo-window fields (``plan`` None: orphans not counted)."""
    return {
        "orphan_files": None if plan is None else len(plan.orphans),
        "orphan_bytes": 0 if plan is None else plan.orphan_bytes,
        "orphan_paths": () if plan is None else tuple(orphan.path for orphan in plan.orphans),
        "orphan_backlog": 0 if plan is None else plan.backlog,
        "skipped_unknown": () if plan is None else plan.skipped_unknown,
        "notes": () if plan is None else plan.notes,
        "held_files": len(held),
        "held_bytes": sum(held.values()),
    }


def _held(ctx: TableContext, verifier: Verifier, plan: OrphanPlan | None) -> dict[str, int]:
    """What the undo window holds (a file held by two runs once), as the orphan plan read it (else read here); {}
    and an error when it cannot be read."""
    try:
        return held_paths(plan.held_runs if plan is not None and plan.held_runs is not None else ctx.store.held_runs())
    except _READ_ERRORS as exc:
        verifier.errors.append(f"the undo window cannot be read: {exc}")
        return {}


def _stat(ctx: TableContext, rel: str) -> int | None:
    try:
        return ctx.io.file_size(ctx.layout.join(rel))
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot stat %s: %s", rel, exc)
        return None
