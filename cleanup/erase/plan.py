"""Which live files an erasure rewrites: every live file of the latest snapshot is pruned by its partition and its
min/max statistics against the filter (a keys filter: its key column's min..max against the sorted keys; any other:
``TableScan.files``, the pruning every read uses), then each remaining file's filter columns are read (only those)
and its matching rows counted. A file with a match is rewritten; the others are never touched. The counts make the
dry run exact: the real run erases these rows from these files unless a concurrent commit changes them first. A
snapshot expired while it is read is a lost race: the plan is made again on the latest one
(:mod:`..rewrite.races`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tableformat.context import TableContext
from tableformat.live_set import merge_entries, read_manifests
from tableformat.model.manifest import ManifestEntry
from tableformat.model.snapshot import Snapshot
from tableformat.options import COMPACTION_COMMIT_MAX_FILES, ERASE_DEADLINE, TARGET_FILE_SIZE
from tableformat.parallel import resolve_parallelism
from tableformat.scan.dataset import TableScan
from tableformat.scan.filters import column_range
from tableformat.scan.reader import DataReader

from ..rewrite import MISSING_FILE_ERRORS, FilePaths, plan_on_latest, require_rewritable
from .pins import RootFiles
from .predicate import EraseFilter, erase_filter


@dataclass(frozen=True, slots=True, kw_only=True)
class EraseConfig:
    """What one erasure does."""

    filter: EraseFilter
    purge: bool
    """Expire every snapshot older than the erasure and delete the files that held erased rows, now."""
    deadline_ms: int
    """``erase.deadline``: the time after the erasure by which the old files must be gone (purged)."""
    commit_max_files: int
    target_size: int
    include_tags: bool = False
    """With ``purge``: rewrite the tags that hold erased rows (tags.py) instead of stopping short of them."""

    @classmethod
    def resolve(cls, ctx: TableContext, overrides: Mapping[str, Any]) -> EraseConfig:
        require_rewritable(ctx, "erase")
        given = overrides  # checked and typed by the kernel from the operation's parameters
        keys_file, key, where = given.get("keys_file"), given.get("key"), given.get("where")
        row_filter = erase_filter(ctx.schema, where, keys_file, key, ctx.io.storage_options())
        return cls(
            filter=row_filter,
            purge=bool(given.get("purge", False)),
            deadline_ms=ctx.options.require_or(ERASE_DEADLINE, given.get("deadline")),
            commit_max_files=ctx.options.require(COMPACTION_COMMIT_MAX_FILES),
            target_size=ctx.options.require(TARGET_FILE_SIZE),
            include_tags=bool(given.get("include_tags", False)),
        )


@dataclass(frozen=True, slots=True)
class MatchedFile:
    """A live file holding rows to erase."""

    entry: ManifestEntry
    path: str
    """Relative to the table root."""
    rows: int
    """Its matching rows."""


@dataclass(frozen=True, slots=True)
class ErasePlan:
    """Rewrite ``files`` without their matching rows (one guarded snapshot per batch), then purge if asked."""

    config: EraseConfig
    base_snapshot_id: int | None
    now_ms: int
    files: tuple[MatchedFile, ...]
    live_files: int
    """Live files of the base snapshot."""
    opened_files: int
    """Of those, files whose statistics could not rule the filter out (their filter columns were read)."""
    lost_races: tuple[int, ...] = ()
    manifests: Mapping[str, list[ManifestEntry]] = field(default_factory=dict, compare=False, repr=False)
    """The base snapshot's manifests as read ({name: entries}): who holds erased rows is found without reading
    them again (pins.RootFiles)."""

    @property
    def erased_rows(self) -> int:
        return sum(f.rows for f in self.files)


def plan_erase(ctx: TableContext, config: EraseConfig, now_ms: int) -> ErasePlan:
    """Find the matching live files of the latest snapshot (again on the new latest when it is expired meanwhile)."""
    plan, lost = plan_on_latest(ctx, lambda latest: _plan_on(ctx, config, now_ms, latest))
    return replace(plan, lost_races=lost)


def _plan_on(ctx: TableContext, config: EraseConfig, now_ms: int, latest: Snapshot | None) -> ErasePlan:
    if latest is None:
        return ErasePlan(config, None, now_ms, (), 0, 0)
    row_filter = config.filter
    threads = resolve_parallelism(ctx.options, ctx.io, None)
    metas = ctx.store.manifests_of(latest)
    read = read_manifests(metas, ctx.store.read_manifest, threads)
    entries = list(merge_entries(read).values())  # live_entries(), the manifests kept
    candidates = _candidates(ctx, row_filter, entries)
    reader = DataReader(ctx.io, ctx.layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec(), threads=1)
    paths = FilePaths(ctx)
    matched = []
    for entry in candidates:
        rows = row_filter.count(reader.read_entry(entry, columns=list(row_filter.columns)))
        if rows:
            matched.append(MatchedFile(entry, paths.relative(entry), rows))
    manifests = {meta.file_name: listed for meta, listed in zip(metas, read)}
    return ErasePlan(config, latest.id, now_ms, tuple(matched), len(entries), len(candidates), manifests=manifests)


def _candidates(ctx: TableContext, row_filter: EraseFilter, entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """The entries whose partition and statistics do not rule the filter out (nothing opened): a keys filter by
    its key column's min/max against the keys themselves, any other by the scan's pruning with its expression."""
    if not row_filter.prunes_by_keys(ctx.schema):
        scan = TableScan(ctx.io, ctx.layout, ctx.schema, ctx.schema_by_id, entries, row_filter=row_filter.prune)
        return [e for e in scan.files() if isinstance(e, ManifestEntry)]
    column = row_filter.key_column
    ranges = [column_range(e.file, ctx.schema_by_id(e.file.schema_id), ctx.schema, column) for e in entries]
    return [entry for entry, holds in zip(entries, row_filter.may_hold(ranges)) if holds]


def held_matches(
    ctx: TableContext,
    row_filter: EraseFilter,
    roots: RootFiles,
    live_names: Collection[str],
    known: Collection[str] = (),
) -> set[str]:
    """Names of the data files some retained root (an older snapshot, a tag, a branch) holds but the latest
    snapshot does not, with a row ``row_filter`` matches: pruned by statistics, then the filter columns read.
    ``known``: names already known to match (not read again). A file gone meanwhile (expired) holds nothing."""
    entries = [e for e in roots.entries_outside(live_names) if e.file.file_name not in known]
    reader = DataReader(ctx.io, ctx.layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec(), threads=1)
    found = set(known)
    for entry in _candidates(ctx, row_filter, entries):
        try:
            table = reader.read_entry(entry, columns=list(row_filter.columns))
        except MISSING_FILE_ERRORS:
            continue
        if row_filter.count(table):
            found.add(entry.file.file_name)
    return found
