"""Which partitions expire: every live partition of the latest snapshot gets a time (values-time: from its typed
values; update-time: its newest live file's creation time) or a reason why it has none; those older than the
cutoff expire, oldest first, at most ``max-num`` per run. Reads metadata only."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from tableformat.codec.entry_codec import EntryRecord
from tableformat.context import TableContext
from tableformat.live_set import merge_records
from tableformat.model.partition import value_to_path_string
from tableformat.model.partition_time import PartitionTimeError
from tableformat.model.schema import DataField
from tableformat.model.snapshot import Snapshot
from tableformat.options import PARTITION_DEFAULT_NAME
from tableformat.parallel import bounded_map, executor

from .config import PartitionExpireConfig

EPOCH = dt.datetime(1970, 1, 1)
_ROW_COUNT = attrgetter("row_count")
_FILE_SIZE = attrgetter("file_size")


@dataclass(frozen=True, slots=True)
class PlannedPartition:
    """One expired partition and the live files its drop marks deleted."""

    spec: Mapping[str, Any]
    """Every partition column's typed value (what the drop commit matches on)."""
    display: Mapping[str, str]
    """The values as users see them (dates ``yyyy-MM-dd``, null as the default partition name)."""
    time: dt.datetime
    records: tuple[EntryRecord, ...]
    """Its live files when planned: the drop deletes only these (written again as DELETE entries)."""
    rows: int
    bytes: int

    @property
    def files(self) -> frozenset[Hashable]:
        """The identifiers of its live files when planned."""
        return frozenset(r.identifier() for r in self.records)


@dataclass(frozen=True, slots=True)
class SkippedPartition:
    """A live partition that is never expired by this run, and why."""

    display: Mapping[str, str]
    reason: str


@dataclass(frozen=True, slots=True)
class PartitionExpirePlan:
    """Everything one run drops: ``batches`` of expired partitions (one snapshot each), oldest first."""

    base_snapshot_id: int | None
    now_ms: int
    cutoff: dt.datetime
    """Partitions whose time is before this (local wall-clock time) expire."""
    batches: tuple[tuple[PlannedPartition, ...], ...]
    skipped: tuple[SkippedPartition, ...]
    waiting: int
    """Expired partitions beyond ``max-num``, left for the next run."""
    base: Snapshot | None = None
    """The snapshot planned against (``base_snapshot_id``)."""

    @property
    def expired(self) -> tuple[PlannedPartition, ...]:
        return tuple(p for batch in self.batches for p in batch)


def local_datetime(now_ms: int) -> dt.datetime:
    """Epoch milliseconds as the local wall-clock time (Paimon compares partition times with LocalDateTime.now())."""
    return dt.datetime.fromtimestamp(now_ms / 1000)


def partition_cutoff(now_ms: int, expiration_ms: int) -> dt.datetime:
    """``now - expiration`` as a local wall-clock time; a cutoff before year 1 (``datetime.min``) is taken as
    ``datetime.min``: no partition time is earlier, nothing expires (never an OverflowError)."""
    try:
        return local_datetime(now_ms) - dt.timedelta(milliseconds=expiration_ms)
    except OverflowError:
        return dt.datetime.min


def display_values(values: Mapping[str, Any], fields: Sequence[DataField], default_name: str) -> dict[str, str]:
    """A partition's values as users see them: dates ``yyyy-MM-dd``, timestamps ``yyyy-MM-dd HH:mm:ss``."""
    shown = {}
    for field in fields:
        value = values.get(field.name)
        if value is None:
            shown[field.name] = default_name
        elif field.type.root == "DATE":
            shown[field.name] = value.isoformat()
        elif field.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            shown[field.name] = value.isoformat(sep=" ")
        else:
            shown[field.name] = str(value_to_path_string(value, field.type))
    return shown


def _partition_time(config: PartitionExpireConfig, values: Mapping[str, Any], files: list[EntryRecord]) -> dt.datetime:
    if config.extractor is not None:
        return config.extractor.extract(values)
    created = [f.creation_time_ms for f in files]
    if any(c is None for c in created):
        raise PartitionTimeError("a live file has no creation time (update-time needs _CREATION_TIME)")
    return EPOCH + dt.timedelta(milliseconds=max(c for c in created if c is not None))


def _live_files(ctx: TableContext, snapshot: Snapshot, threads: int) -> dict[tuple[Any, ...], list[EntryRecord]]:
    """The live files of ``snapshot`` (every manifest read, entries merged) by partition values, in order of first
    appearance (rows of other bytes with equal values are one partition)."""
    manifests = ctx.store.manifests_of(snapshot)
    with executor(threads, "tablefmt-partitions") as pool:
        read = bounded_map(pool, lambda m: ctx.store.read_manifest_records(m.file_name), manifests, 2 * threads)
        live = merge_records([records for _, records in read])
    by_row: dict[bytes, list[EntryRecord]] = {}
    for record in live:
        files = by_row.get(record.partition)
        if files is None:
            by_row[record.partition] = [record]
        else:
            files.append(record)
    codec = ctx.partition_codec()
    groups: dict[tuple[Any, ...], list[EntryRecord]] = {}
    for row, files in by_row.items():
        key = tuple(codec.values(row).items())
        if key in groups:
            groups[key].extend(files)
        else:
            groups[key] = files
    return groups


def plan_partition_expiration(ctx: TableContext, config: PartitionExpireConfig, now_ms: int) -> PartitionExpirePlan:
    """Decide which partitions of the latest snapshot expire at ``now_ms``."""
    cutoff = partition_cutoff(now_ms, config.expiration_ms)
    latest = ctx.store.latest_snapshot()
    if latest is None:
        return PartitionExpirePlan(None, now_ms, cutoff, (), (), 0)
    fields = ctx.schema.partition_fields
    default_name = ctx.options.require(PARTITION_DEFAULT_NAME)
    expired: list[PlannedPartition] = []
    skipped: list[SkippedPartition] = []
    for key, files in _live_files(ctx, latest, config.threads).items():
        values = dict(key)
        try:
            time = _partition_time(config, values, files)
        except PartitionTimeError as exc:
            skipped.append(SkippedPartition(display_values(values, fields, default_name), f"no partition time: {exc}"))
            continue
        if time < cutoff:
            rows, size = sum(map(_ROW_COUNT, files)), sum(map(_FILE_SIZE, files))
            display = display_values(values, fields, default_name)
            expired.append(PlannedPartition(values, display, time, tuple(files), rows, size))
    expired.sort(key=lambda p: (p.time, tuple(p.display.values())))
    chosen = expired[: config.max_num]
    size = config.batch_size or max(len(chosen), 1)
    batches = tuple(tuple(chosen[i : i + size]) for i in range(0, len(chosen), size))
    skipped.sort(key=lambda s: tuple(s.display.values()))
    waiting = len(expired) - len(chosen)
    return PartitionExpirePlan(latest.id, now_ms, cutoff, batches, tuple(skipped), waiting, latest)
