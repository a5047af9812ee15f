"""Which small files compaction merges (Paimon's append-table rule): in each partition and bucket, the live files
smaller than 70% of ``target-file-size``, oldest first, packed into groups that reach the target size or
``compaction.max.file-num`` files; a partition/bucket with fewer than ``compaction.min.file-num`` small files is
left alone. Reads metadata only; a snapshot expired while it is read is a lost race: the plan is made again on the
latest one (:mod:`..rewrite.races`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tableformat.context import TableContext
from tableformat.errors import ValidationError
from tableformat.live_set import PartitionPredicate, live_entries
from tableformat.model.manifest import ManifestEntry
from tableformat.model.partition import normalize_spec, parse_spec_text
from tableformat.model.snapshot import Snapshot
from tableformat.options import (
    COMPACTION_COMMIT_MAX_FILES,
    COMPACTION_MAX_FILE_NUM,
    COMPACTION_MIN_FILE_NUM,
    PARTITION_DEFAULT_NAME,
    TARGET_FILE_SIZE,
)
from tableformat.parallel import resolve_parallelism
from tableformat.scan.record_ttl import RecordTTL

from ..rewrite import RewriteUnit, plan_on_latest, require_rewritable, ttl_at

SMALL_FILE_RATIO = 0.7
"""Paimon compacts append files smaller than this share of the target size (bigger ones are left as they are)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactConfig:
    """What one compaction run merges."""

    target_size: int
    min_file_num: int
    max_file_num: int
    commit_max_files: int
    partition: Mapping[str, Any] | None
    """Only this (possibly partial) partition spec; None = every partition."""

    @classmethod
    def resolve(cls, ctx: TableContext, overrides: Mapping[str, Any]) -> CompactConfig:
        given = overrides  # checked and typed by the kernel from the operation's parameters
        require_rewritable(ctx, "compact")
        options = ctx.options
        target = options.require_or(TARGET_FILE_SIZE, given.get("target_file_size"))
        spec = given.get("partition")
        partition = None
        if spec is not None:
            if not ctx.schema.partition_keys:
                raise ValidationError("compact: the table is not partitioned; give no partition")
            text = parse_spec_text(spec) if isinstance(spec, str) else spec
            partition = normalize_spec(
                text,
                ctx.schema.partition_fields,
                default_name=options.require(PARTITION_DEFAULT_NAME),
                allow_partial=True,
            )
        ttl_at(ctx, 0, None, None)  # a TTL on a bad time field is refused before anything is read
        return cls(
            target_size=target,
            min_file_num=options.require(COMPACTION_MIN_FILE_NUM),
            max_file_num=options.require(COMPACTION_MAX_FILE_NUM),
            commit_max_files=options.require(COMPACTION_COMMIT_MAX_FILES),
            partition=partition,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactPlan:
    base_snapshot_id: int | None
    now_ms: int
    ttl: RecordTTL | None
    """The table's record TTL at ``now_ms``: compaction drops expired rows too."""
    units: tuple[RewriteUnit, ...]
    lost_races: tuple[int, ...] = ()
    """Snapshots expired while this plan read them (it was made again on the latest each time)."""


def _order(entry: ManifestEntry) -> tuple[int, int, str]:
    return (entry.file.creation_time_ms or 0, entry.file.min_sequence_number, entry.file.file_name)


def pack(files: list[ManifestEntry], config: CompactConfig) -> list[tuple[ManifestEntry, ...]]:
    """Small files, oldest first, in groups of about the target size (at most max-file-num files each)."""
    threshold = config.target_size * SMALL_FILE_RATIO
    small = sorted((e for e in files if e.file.file_size < threshold), key=_order)
    if len(small) < config.min_file_num:
        return []
    groups: list[tuple[ManifestEntry, ...]] = []
    current: list[ManifestEntry] = []
    size = 0
    for entry in small:
        current.append(entry)
        size += entry.file.file_size
        if size >= config.target_size or len(current) >= config.max_file_num:
            groups.append(tuple(current))
            current, size = [], 0
    if len(current) > 1:
        groups.append(tuple(current))
    return [g for g in groups if len(g) > 1]


def plan_compaction(ctx: TableContext, config: CompactConfig, now_ms: int) -> CompactPlan:
    """Group the small live files of the latest snapshot into rewrite units (again on the new latest when that
    snapshot is expired while it is read: :func:`..rewrite.plan_on_latest`)."""
    ttl = ttl_at(ctx, now_ms, None, None)
    empty = CompactPlan(base_snapshot_id=None, now_ms=now_ms, ttl=ttl, units=())
    plan, lost = plan_on_latest(ctx, lambda latest: _plan_on(ctx, config, latest, empty))
    return replace(plan, lost_races=lost)


def _plan_on(ctx: TableContext, config: CompactConfig, latest: Snapshot | None, empty: CompactPlan) -> CompactPlan:
    if latest is None:
        return empty
    predicate = PartitionPredicate((config.partition,)) if config.partition is not None else None
    threads = resolve_parallelism(ctx.options, ctx.io, None)
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for entry in live_entries(ctx.store, latest, ctx.partition_codec(), predicate, threads):
        groups.setdefault((entry.partition, entry.bucket), []).append(entry)
    units = [
        RewriteUnit(partition, bucket, files[0].total_buckets, group)
        for (partition, bucket), files in sorted(groups.items())
        for group in pack(files, config)
    ]
    return replace(empty, base_snapshot_id=latest.id, units=tuple(units))
