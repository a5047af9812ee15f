"""Which files record expiration drops and which it rewrites: every live file of the latest snapshot is judged by
the time field's statistics (from the manifest; from the Parquet footer when the writer recorded none). Files
whose every row is expired are dropped without being read; files with some expired rows are rewritten; the
others are left alone. Work is bounded per run (files and rewrite bytes), oldest first. Reads metadata and, for
files without statistics, footers only; a snapshot expired while it is read is a lost race: the plan is made again
on the latest one (:mod:`..rewrite.races`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tableformat.context import TableContext
from tableformat.live_set import live_entries
from tableformat.model.manifest import ManifestEntry
from tableformat.model.snapshot import Snapshot
from tableformat.parallel import resolve_parallelism
from tableformat.scan.reader import DataReader
from tableformat.scan.record_ttl import RecordTTL, TimeRange, Verdict, footer_time_range

from ..rewrite import FilePaths, plan_on_latest, ttl_at
from .config import RecordExpireConfig


@dataclass(frozen=True, slots=True)
class JudgedFile:
    """A live file with expired rows, and what its time range says."""

    entry: ManifestEntry
    path: str
    """Relative to the table root."""
    verdict: Verdict
    time_range: TimeRange | None


@dataclass(frozen=True, slots=True)
class RecordExpirePlan:
    """Everything one run does: drop ``drops`` in one metadata-only snapshot, rewrite ``rewrites``."""

    base_snapshot_id: int | None
    now_ms: int
    ttl: RecordTTL
    drops: tuple[JudgedFile, ...]
    rewrites: tuple[JudgedFile, ...]
    waiting: int
    """Files with expired rows beyond this run's bounds, left for the next run."""
    footer_reads: int
    """Files whose statistics came from their Parquet footer (their writer recorded none for the time field)."""
    lost_races: tuple[int, ...] = ()
    """Snapshots expired while this plan read them (it was made again on the latest each time)."""


def reader_for(ctx: TableContext, ttl: RecordTTL | None) -> DataReader:
    """A reader of the table's files as its latest schema, with the run's TTL."""
    return DataReader(ctx.io, ctx.layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec(), record_ttl=ttl)


def judge(
    ctx: TableContext, reader: DataReader, ttl: RecordTTL, entry: ManifestEntry, paths: FilePaths
) -> tuple[JudgedFile, bool]:
    """A file's verdict from its statistics, or its footer when they are missing; (file, footer read)."""
    time_range = ttl.stats_range(entry, ctx.schema_by_id)
    verdict = ttl.verdict(time_range)
    footer = False
    if verdict is Verdict.UNKNOWN:
        footer = True
        name = reader.file_column_name(entry, ttl.field_id)
        if name is None:
            time_range = TimeRange(None, None, entry.file.row_count, entry.file.row_count)
        else:
            time_range = footer_time_range(reader.footer(entry), name, ttl)
        verdict = ttl.verdict(time_range)
        if verdict is Verdict.UNKNOWN:  # no statistics anywhere: read and filter it
            verdict = Verdict.PARTLY
    if verdict not in (Verdict.EXPIRED, Verdict.PARTLY):
        return JudgedFile(entry, "", verdict, time_range), footer
    return JudgedFile(entry, paths.relative(entry), verdict, time_range), footer


def _oldest(judged: JudgedFile, high: bool) -> tuple[int, str]:
    time_range = judged.time_range
    value = None if time_range is None else (time_range.high_ms if high else time_range.low_ms)
    return (value if value is not None else -(2**62), judged.path)


def _bounded(
    drops: list[JudgedFile], rewrites: list[JudgedFile], config: RecordExpireConfig
) -> tuple[list[JudgedFile], list[JudgedFile], int]:
    """Oldest first: drops (cheap), then rewrites within the file and byte budgets (the first always fits)."""
    drops.sort(key=lambda j: _oldest(j, True))
    rewrites.sort(key=lambda j: _oldest(j, False))
    chosen_drops = drops[: config.max_files]
    budget = config.max_files - len(chosen_drops)
    chosen: list[JudgedFile] = []
    size = 0
    for judged in rewrites:
        if len(chosen) >= budget:
            break
        if chosen and size + judged.entry.file.file_size > config.max_rewrite_bytes:
            break
        chosen.append(judged)
        size += judged.entry.file.file_size
    waiting = len(drops) + len(rewrites) - len(chosen_drops) - len(chosen)
    return chosen_drops, chosen, waiting


def plan_record_expiration(ctx: TableContext, config: RecordExpireConfig, now_ms: int) -> RecordExpirePlan:
    """Judge every live file of the latest snapshot at ``now_ms`` (again on the new latest when that snapshot is
    expired while it is read: :func:`..rewrite.plan_on_latest`)."""
    ttl = ttl_at(ctx, now_ms, config.expire_ms, config.time_field)
    assert ttl is not None
    plan, lost = plan_on_latest(ctx, lambda latest: _plan_on(ctx, config, ttl, now_ms, latest))
    return replace(plan, lost_races=lost)


def _plan_on(
    ctx: TableContext, config: RecordExpireConfig, ttl: RecordTTL, now_ms: int, latest: Snapshot | None
) -> RecordExpirePlan:
    if latest is None:
        return RecordExpirePlan(None, now_ms, ttl, (), (), 0, 0)
    threads = resolve_parallelism(ctx.options, ctx.io, None)
    reader = reader_for(ctx, ttl)
    drops: list[JudgedFile] = []
    rewrites: list[JudgedFile] = []
    footers = 0
    paths = FilePaths(ctx)
    for entry in live_entries(ctx.store, latest, ctx.partition_codec(), None, threads):
        judged, footer = judge(ctx, reader, ttl, entry, paths)
        footers += footer
        if judged.verdict is Verdict.EXPIRED:
            drops.append(judged)
        elif judged.verdict is Verdict.PARTLY:
            rewrites.append(judged)
    chosen_drops, chosen_rewrites, waiting = _bounded(drops, rewrites, config)
    return RecordExpirePlan(latest.id, now_ms, ttl, tuple(chosen_drops), tuple(chosen_rewrites), waiting, footers)
