"""``tablefmt check``: every file the table references exists with its recorded size; orphans and reclaimable bytes.

Referenced files are those of every root (snapshots, tags and changelogs of the main table and of every branch):
their manifest lists (sizes from the snapshot where it records them), index manifests and statistics files, the
manifests of the lists (``_FILE_SIZE`` of the list rows), each root's **live** data files (the ADD and DELETE entries
of its base and delta lists merged; ``_FILE_SIZE`` of the entry) and its changelog files (the ADD entries of its
changelog list). A file DELETEd by a root may be gone legitimately (expiration removed it), so only live files must
exist. Data files are looked for where :class:`tableformat.data_paths.DataPaths` puts them
(``data-file.path-directory`` included); those with an external path are outside the table root and are not
checked. On a table whose options put files outside the root, orphans and reclaimable bytes are not counted
(tablefmt does not clean or expire such tables).

Orphans are counted with the cleaner's own planner (same classification and references; the table's default cutoff
unless ``older_than`` is given), so ``check`` lists exactly the orphans a ``remove-orphans`` dry run with the same
cutoff lists.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from tableformat.codec.avro_projection import ScanRef
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
from tableformat.layout import INDEX_DIR, STATISTICS_DIR, TableLayout, check_file_name
from tableformat.live_set import merge_entries
from tableformat.model.manifest import FileKind
from tableformat.options import INDEX_FILE_IN_DATA_FILE_DIR
from tableformat.parallel import bounded_map, executor, resolve_parallelism
from tableformat.undo_store import held_paths
from tableformat.units import human_bytes

from .kernel import SHOWN, run_operation, shown_paths
from .orphans import OrphanPlan, plan_orphan_removal, resolve_older_than_ms
from .orphans.census import DirKind, walk_listed, walk_table
from .orphans.file_list import FileList, load_file_list
from .roots import References, Root
from .snapshots import SNAPSHOT_EXPIRATION

log = logging.getLogger(__name__)

T = TypeVar("T")

_READ_ERRORS = (CorruptMetadataError, StorageError, UnsafePathError, UnsupportedFormatError, MaintenanceError, OSError)


@dataclass(frozen=True, slots=True)
class FileProblem:
    """A referenced file that is missing (``actual_size`` None) or has another size than recorded."""

    path: str
    """Relative to the table root."""
    kind: str
    """'data', 'changelog', 'manifest', 'manifest-list', 'index-manifest', 'index' or 'statistics'."""
    referenced_by: str
    expected_size: int | None
    actual_size: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "referenced_by": self.referenced_by,
            "expected_bytes": self.expected_size,
            "actual_bytes": self.actual_size,
        }


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
        lines.append(f"orphan files: {orphans} ({human_bytes(self.orphan_bytes)})")
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


@dataclass(frozen=True, slots=True)
class _Ref:
    kind: str
    expected_size: int | None
    referenced_by: str


class _Collector:
    """Referenced files by path relative to the root, with the first expectation recorded for each."""

    def __init__(self) -> None:
        self.refs: dict[str, _Ref] = {}
        self.errors: list[str] = []
        self.external = 0

    def add(self, rel: str, kind: str, size: int | None, by: str) -> None:
        known = self.refs.get(rel)
        if known is None or (known.expected_size is None and size is not None):
            self.refs[rel] = _Ref(kind, size, by)


def _collect_references(
    ctx: TableContext, refs: References, roots: list[Root], collector: _Collector, paths: DataPaths | None
) -> None:
    """Every file the roots reference, with recorded sizes; each root's live data files after merging (not when
    ``paths`` is None: the table's data directory is outside the root)."""
    list_sizes: dict[str, tuple[int | None, str]] = {}
    index_manifests: dict[str, str] = {}
    for root in roots:
        s = root.snapshot
        sized = [
            (s.base_manifest_list, s.base_manifest_list_size),
            (s.delta_manifest_list, s.delta_manifest_list_size),
            (s.changelog_manifest_list, s.changelog_manifest_list_size),
        ]
        for name, size in sized:
            if name:
                collector.add(TableLayout.manifest_rel(name), "manifest-list", size, root.label)
                list_sizes.setdefault(name, (size, root.label))
        if s.index_manifest:
            collector.add(TableLayout.manifest_rel(s.index_manifest), "index-manifest", None, root.label)
            index_manifests.setdefault(s.index_manifest, root.label)
        if s.statistics:
            collector.add(f"{STATISTICS_DIR}/{s.statistics}", "statistics", None, root.label)
    lists: dict[str, list[str]] = {}
    store = ctx.store
    read_lists = bounded_map(
        refs.pool, lambda n: _tolerant(collector, store.read_manifest_list, n), list_sizes, refs.window
    )
    for name, rows in read_lists:
        if rows is None:
            continue  # missing (reported with the referenced files) or unreadable (reported in errors)
        lists[name] = [row.file_name for row in rows]
        for row in rows:
            collector.add(TableLayout.manifest_rel(row.file_name), "manifest", row.file_size, f"manifest list {name}")
    wanted = dict.fromkeys(m for names in lists.values() for m in names)
    entries_of: dict[str, list[ScanRef]] = {}  # projected: no statistics decoded (a third of the full decode)
    read_refs = store.read_manifest_scan_refs
    read_manifests = bounded_map(refs.pool, lambda n: _tolerant(collector, read_refs, n), wanted, refs.window)
    for name, entries in read_manifests:
        if entries is not None:
            entries_of[name] = entries
    if paths is not None:
        for root in roots:
            _collect_files_of(root, lists, entries_of, collector, paths)
    _collect_index_files(ctx, refs, index_manifests, collector, paths)


def _collect_index_files(
    ctx: TableContext, refs: References, owners: dict[str, str], collector: _Collector, paths: DataPaths | None
) -> None:
    """The index files the index manifests (name -> the label of a root naming it) hold, with their recorded sizes:
    in ``index/``, or in their bucket directory on a table with ``index-file-in-data-file-dir`` (not checked when
    ``paths`` is None); those with an external path are outside the root and not checked."""
    in_bucket = ctx.options.require(INDEX_FILE_IN_DATA_FILE_DIR)
    read = bounded_map(refs.pool, lambda n: _tolerant(collector, ctx.store.read_index_manifest, n), owners, refs.window)
    for name, entries in read:
        for entry in entries or ():
            meta = entry.index_file
            if meta.external_path or (in_bucket and paths is None):
                collector.external += 1
                continue
            file_name = check_file_name(meta.file_name, what=f"index file name in {name}")
            directory = paths.bucket_dir(entry.partition, entry.bucket) if in_bucket and paths else INDEX_DIR
            collector.add(f"{directory}/{file_name}", "index", meta.file_size, owners[name])


def _collect_files_of(
    root: Root,
    lists: dict[str, list[str]],
    entries_of: dict[str, list[ScanRef]],
    collector: _Collector,
    paths: DataPaths,
) -> None:
    """The live data files of a root (its base and delta lists merged) and its changelog files (the ADD entries of
    its changelog list: a changelog file is never DELETEd, it goes when its snapshot or changelog expires)."""
    snapshot = root.snapshot

    def entries(*list_names: str) -> Iterator[list[ScanRef]]:
        return (entries_of.get(m, []) for name in list_names if name for m in lists.get(name, ()))

    live = merge_entries(entries(snapshot.base_manifest_list, snapshot.delta_manifest_list)).values()
    changelog = (e for es in entries(snapshot.changelog_manifest_list or "") for e in es if e.kind is FileKind.ADD)
    for kind, files in (("data", live), ("changelog", changelog)):
        for entry in files:
            if entry.file.external_path:
                collector.external += 1
                continue
            collector.add(paths.of_entry(entry), kind, entry.file.file_size, root.label)
            if entry.file.extra_files:
                for extra in paths.extras_of(entry.partition, entry.bucket, entry.file.extra_files):
                    collector.add(extra, kind, None, root.label)


def _tolerant(collector: _Collector, read: Callable[[str], list[T]], name: str) -> list[T] | None:
    """``read(name)``; None when the file is missing or unreadable (the latter recorded as an error)."""
    try:
        check_file_name(name, what="manifest name")
        return read(name)
    except CorruptMetadataError as exc:
        if "missing" not in exc.reason:
            collector.errors.append(str(exc))
        return None
    except (UnsafePathError, StorageError, UnsupportedFormatError) as exc:
        collector.errors.append(str(exc))
        return None


def _listed_sizes(
    ctx: TableContext,
    pool: Executor,
    workers: int,
    data_dir: str | None,
    nested: list[str],
    file_list: FileList | None = None,
) -> dict[str, int]:
    """Sizes of every file in the manifest, statistics and data directories (under ``data_dir``; None: no data
    directory inside the root), by path relative to the root: listed, or as ``file_list`` names them. Roots of
    other tables found where data directories were expected are added to ``nested`` (never entered)."""
    sizes: dict[str, int] = {}
    kinds = {DirKind.MANIFEST, DirKind.STATISTICS, DirKind.INDEX}
    if data_dir is not None:
        kinds.add(DirKind.BUCKET)
    keys = ctx.schema.partition_keys
    if file_list is None:
        walk = walk_table(ctx.io, ctx.layout, keys, pool, workers, data_dir=data_dir or "")
    else:
        walk = walk_listed(list(file_list.files), ctx.layout, keys, data_dir=data_dir or "")
    for listing in walk:
        if listing.kind is DirKind.NESTED_TABLE:
            nested.append(listing.rel)
        if listing.kind in kinds:
            for info in listing.files:
                sizes[ctx.layout.relative(info.path)] = info.size
    return sizes


def _reclaimable(ctx: TableContext, orphan_bytes: int) -> tuple[int, str]:
    """Orphan bytes plus what a snapshot expiration under the table's options would delete now (its dry run)."""
    try:
        planned = run_operation(SNAPSHOT_EXPIRATION, ctx, dry_run=True)
    except TableFormatError as exc:  # an expiration that cannot be planned must not fail the check
        log.warning("could not plan expiration for the reclaimable estimate: %s", exc)
        return orphan_bytes, f"orphan bytes only (expiration dry run failed: {exc})"
    return (
        orphan_bytes + planned.deleted_bytes,
        "orphan bytes + bytes an expiration under the table's options would delete now",
    )


def _orphans(
    ctx: TableContext,
    collector: _Collector,
    workers: int,
    older_than: timedelta | None,
    force: bool,
    now_ms: int | None,
    file_list: FileList | None = None,
) -> tuple[OrphanPlan | None, int, str]:
    """The cleaner's own dry-run plan (the table's default cutoff is taken as given: forced, as before), the
    reclaimable bytes and their note; no plan (the reason in the collector's errors) when it cannot be made, nor on
    a table whose options put files outside the root (tablefmt neither cleans nor expires those)."""
    outside = outside_root_reason(ctx.options)
    if outside is not None:
        return None, 0, f"orphans and reclaimable bytes not counted: {outside}"
    plan: OrphanPlan | None = None
    try:
        plan = plan_orphan_removal(
            ctx,
            older_than=older_than,
            force=older_than is None or force,
            parallelism=workers,
            now_ms=now_ms,
            file_list=file_list,
        )
    except (MaintenanceError, ValidationError) as exc:
        collector.errors.append(f"orphans not counted: {exc}")
    return (plan, *_reclaimable(ctx, 0 if plan is None else plan.orphan_bytes))


def _referenced_and_listed(
    ctx: TableContext,
    workers: int,
    data_dir: str | None,
    collector: _Collector,
    nested: list[str],
    file_list: str | os.PathLike[str] | None,
) -> tuple[list[Root], dict[str, int], FileList | None]:
    """(the roots, the size of every file listed or stat'ed, the file list when given), the references collected.
    Without a file list the table is listed while the references are read (listing waits on the store, decoding on
    the CPU); a file referenced but not listed yet is stat'ed. A file list is read after the references (their
    memory peaks apart)."""
    roots: list[Root] = []
    listed = None
    with executor(workers, "tablefmt-check") as pool, executor(1, "tablefmt-check-listing") as lister:
        listing = None if file_list is not None else lister.submit(_listed_sizes, ctx, pool, workers, data_dir, nested)
        refs = References(ctx, pool, workers)
        try:
            roots = refs.collect_roots()
            paths = None if data_dir is None else DataPaths(ctx.schema, ctx.partition_codec())
            _collect_references(ctx, refs, roots, collector, paths)
        except _READ_ERRORS as exc:
            collector.errors.append(str(exc))
        if listing is None:
            assert file_list is not None
            listed = load_file_list(ctx, file_list)
            sizes = _listed_sizes(ctx, pool, workers, data_dir, nested, listed)
        else:
            sizes = listing.result()
        unlisted = [rel for rel in collector.refs if rel not in sizes]
        for rel, size in zip(unlisted, pool.map(lambda r: _stat(ctx, r), unlisted)):
            if size is not None:
                sizes[rel] = size
    return roots, sizes, listed


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
    collector = _Collector()
    data_dir: str | None = None
    try:
        data_dir = data_directory(ctx.options)
    except UnsupportedFormatError as exc:  # data files are not inside the root: none of them can be checked
        collector.errors.append(str(exc))
    nested: list[str] = []
    roots, sizes, listed = _referenced_and_listed(ctx, workers, data_dir, collector, nested, file_list)
    missing: list[FileProblem] = []
    mismatched: list[FileProblem] = []
    referenced_bytes = _compare(collector, sizes, missing, mismatched)
    plan, reclaimable, note = _orphans(ctx, collector, workers, older_than, force, now_ms, listed)
    return CheckResult(
        snapshots=sum(1 for r in roots if r.kind == "snapshot" and not r.branch),
        tags=sum(1 for r in roots if r.kind == "tag" and not r.branch),
        roots=len(roots),
        referenced_files=len(collector.refs),
        referenced_bytes=referenced_bytes,
        missing_files=tuple(missing),
        size_mismatches=tuple(mismatched),
        reclaimable_bytes=reclaimable,
        reclaimable_note=note,
        external_files_skipped=collector.external,
        skipped_nested_tables=tuple(sorted(nested)),
        **_orphan_fields(plan, _held(ctx, collector, plan)),
        errors=tuple(collector.errors),
    )


def _orphan_fields(plan: OrphanPlan | None, held: dict[str, int]) -> dict[str, Any]:
    """The result's orphan and undo-window fields (``plan`` None: orphans not counted)."""
    return {
        "orphan_files": None if plan is None else len(plan.orphans),
        "orphan_bytes": 0 if plan is None else plan.orphan_bytes,
        "orphan_paths": () if plan is None else tuple(orphan.path for orphan in plan.orphans),
        "skipped_unknown": () if plan is None else plan.skipped_unknown,
        "notes": () if plan is None else plan.notes,
        "held_files": len(held),
        "held_bytes": sum(held.values()),
    }


def _held(ctx: TableContext, collector: _Collector, plan: OrphanPlan | None) -> dict[str, int]:
    """What the undo window holds (a file held by two runs once), as the orphan plan read it (else read here); {}
    and an error when it cannot be read."""
    try:
        return held_paths(plan.held_runs if plan is not None and plan.held_runs is not None else ctx.store.held_runs())
    except _READ_ERRORS as exc:
        collector.errors.append(f"the undo window cannot be read: {exc}")
        return {}


def _compare(
    collector: _Collector, sizes: dict[str, int], missing: list[FileProblem], mismatched: list[FileProblem]
) -> int:
    """Each referenced file against its listed size: missing or mismatched ones are recorded; returns the bytes of
    the referenced files found."""
    referenced_bytes = 0
    for rel, ref in sorted(collector.refs.items()):
        actual = sizes.get(rel)
        problem = FileProblem(rel, ref.kind, ref.referenced_by, ref.expected_size, actual)
        if actual is None:
            missing.append(problem)
            continue
        referenced_bytes += actual
        if ref.expected_size is not None and ref.expected_size != actual:
            mismatched.append(problem)
    return referenced_bytes


def _stat(ctx: TableContext, rel: str) -> int | None:
    try:
        return ctx.io.file_size(ctx.layout.join(rel))
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot stat %s: %s", rel, exc)
        return None
