"""``table.inspect``: the table seen as Paimon's system tables show it (``$snapshots``, ``$tags``, ``$partitions``,
``$files``, ``$options``), each as a pyarrow Table, and ``describe()``: schema, options with their effective values
and where each comes from, counts, and the bytes that are live, stored and reclaimable.

Times are pyarrow ``timestamp[ms, UTC]`` (commit times are epoch milliseconds) except file creation times, which
Paimon stores as a local wall-clock time (Java ``LocalDateTime``) and which are therefore naive timestamps. The
bytes ``describe`` reports come from ``check`` (tableformat.cleanup.check): every file a snapshot, tag or branch
references, the orphans the cleaner's own planner finds, and reclaimable = those orphans + what an expiration under
the table's options would delete now (its dry run): never a separate estimate.

Row counts come from the manifests (each file's ``_ROW_COUNT``). On an append table these are the table's rows
(``row_count_kind`` "exact"). On a primary-key table they are **raw** rows: every stored version of a key, in every
file that holds one, until compaction merges them ("raw"); how many rows a read returns needs that read (the merge).
Changelog files are never counted: their rows are changes, not table rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tableformat.arrow_columns import int64_column, string_column
from tableformat.cleanup.check import check_table
from tableformat.codec.arrow_schema import arrow_type_of
from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import ArgumentError
from tableformat.lazy_module import lazy_module
from tableformat.live_set import live_entries
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.model.partition import spec_text, spec_values
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot
from tableformat.options import PARTITION_DEFAULT_NAME, REGISTRY
from tableformat.parallel import Workers, resolve_parallelism
from tableformat.units import iso_from_ms

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

ROW_COUNT_EXACT = "exact"
"""Row counts of an append table: every stored row is a row of the table."""
ROW_COUNT_RAW = "raw"
"""Row counts of a primary-key table: stored rows of every version of a key; a read merges them."""
RAW_ROWS_NOTE = "raw, all versions; merged rows need a read"
"""How the commands label raw row counts for people."""
ROW_COUNT_METADATA_KEY = b"row_count_kind"
"""The schema metadata key of every inspection table whose rows carry record counts."""


def row_count_kind(schema: TableSchema) -> str:
    """``ROW_COUNT_RAW`` for a table with a primary key, else ``ROW_COUNT_EXACT``."""
    return ROW_COUNT_RAW if schema.primary_keys else ROW_COUNT_EXACT


def _utc_ms() -> pa.DataType:
    """The type of commit times in inspection tables."""
    return pa.timestamp("ms", tz="UTC")


def local_creation_time(millis: int | None) -> dt.datetime | None:
    """A file's ``_CREATION_TIME`` (local wall-clock millis stored as if UTC) as a naive local datetime."""
    if millis is None:
        return None
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=millis)


@dataclass(frozen=True, slots=True)
class OptionInfo:
    """One option as describe shows it."""

    key: str
    value: str | None
    """The effective value (None: unset, no default)."""
    source: str
    """'table' (set in the schema), 'default' (tablefmt's default), or 'table, not interpreted by tablefmt'."""
    default: str | None
    description: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TableDescription:
    """What ``tablefmt describe`` shows."""

    location: str
    schema_id: int
    columns: tuple[tuple[str, str, int], ...]
    """(name, Paimon type, field id) in order."""
    partition_keys: tuple[str, ...]
    options: tuple[OptionInfo, ...]
    snapshots: int
    earliest_snapshot: int | None
    latest_snapshot: int | None
    latest_time_ms: int | None
    schemas: int
    tags: int
    branches: tuple[str, ...]
    consumers: int
    live_files: int
    live_records: int
    live_bytes: int
    partitions: int
    sizes: dict[str, Any] | None = field(default=None)
    """From check: referenced_bytes, orphan_bytes, held_bytes, total_bytes, reclaimable_bytes, reclaimable_note, ok
    (None when sizes were not asked for)."""
    primary_keys: tuple[str, ...] = ()
    row_count_kind: str = ROW_COUNT_EXACT
    """What ``live_records`` counts: "exact" (append table) or "raw" (primary-key table, see the module doc)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "schema_id": self.schema_id,
            "columns": [{"name": n, "type": t, "field_id": i} for n, t, i in self.columns],
            "partition_keys": list(self.partition_keys),
            "options": [
                {"key": o.key, "value": o.value, "source": o.source, "default": o.default} for o in self.options
            ],
            "snapshots": self.snapshots,
            "earliest_snapshot_id": self.earliest_snapshot,
            "latest_snapshot_id": self.latest_snapshot,
            "latest_commit_time": iso_from_ms(self.latest_time_ms),
            "latest_commit_time_ms": self.latest_time_ms,
            "schemas": self.schemas,
            "tags": self.tags,
            "branches": list(self.branches),
            "consumers": self.consumers,
            "live_files": self.live_files,
            "live_records": self.live_records,
            "live_bytes": self.live_bytes,
            "partitions": self.partitions,
            "sizes": self.sizes,
            "primary_keys": list(self.primary_keys),
            "row_count_kind": self.row_count_kind,
        }


class TableInspector:
    """Read-only views of one table."""

    def __init__(self, context: TableContext) -> None:
        self._ctx = context

    def _snapshot(self, snapshot_id: int | None, tag: str | None) -> Snapshot | None:
        store = self._ctx.store
        if snapshot_id is not None and tag is not None:
            raise ArgumentError(
                "give {snapshot_id} or {tag}, not both",
                snapshot_id=(str(snapshot_id), f"--snapshot {snapshot_id}"),
                tag=(repr(tag), tag),
            )
        if tag is not None:
            return store.read_tag(tag).snapshot
        if snapshot_id is not None:
            return store.read_snapshot(snapshot_id)
        return store.latest_snapshot()

    def _live(self, snapshot: Snapshot | None) -> list[ManifestEntry]:
        if snapshot is None:
            return []
        threads = resolve_parallelism(self._ctx.options, self._ctx.io, None)
        return live_entries(self._ctx.store, snapshot, self._ctx.partition_codec(), None, threads)

    def _counted(self, table: pa.Table) -> pa.Table:
        """``table`` with the kind of its record counts in its schema metadata (``ROW_COUNT_METADATA_KEY``)."""
        kind = row_count_kind(self._ctx.schema).encode()
        return table.replace_schema_metadata({**(table.schema.metadata or {}), ROW_COUNT_METADATA_KEY: kind})

    def _partition_text(self, partition: bytes) -> str:
        schema = self._ctx.schema
        values = self._ctx.partition_codec().values(partition)
        default = self._ctx.options.require(PARTITION_DEFAULT_NAME)
        return spec_text(values, schema.partition_fields, default_name=default)

    def partition_values_text(self, values: Mapping[str, Any] | None) -> dict[str, str]:
        """A row's typed ``values`` as ``{key: display value}``: how ``--json`` output shows a partition."""
        default = self._ctx.options.require(PARTITION_DEFAULT_NAME)
        return spec_values(values or {}, self._ctx.schema.partition_fields, default_name=default)

    # --- $snapshots ----------------------------------------------------------------------------------------------
    def snapshots(self, *, sizes: bool = True, parallelism: int | None = None) -> pa.Table:
        """Every snapshot, oldest first; with ``sizes``, the files and bytes each commit added and deleted (read
        from its delta manifests)."""
        store = self._ctx.store
        found = [s for s in (store.try_read_snapshot(i) for i in store.snapshot_ids()) if s is not None]
        columns: dict[str, Any] = {
            "snapshot_id": int64_column([s.id for s in found]),
            "schema_id": int64_column([s.schema_id for s in found]),
            "commit_kind": string_column([s.commit_kind.value for s in found]),
            "commit_time": int64_column([s.time_millis for s in found]).cast(_utc_ms()),
            "total_record_count": int64_column([s.total_record_count for s in found]),
            "delta_record_count": int64_column([s.delta_record_count for s in found]),
            "changelog_record_count": int64_column([s.changelog_record_count for s in found]),
            "commit_user": string_column([s.commit_user for s in found]),
            "commit_identifier": int64_column([s.commit_identifier for s in found]),
            "base_manifest_list": string_column([s.base_manifest_list for s in found]),
            "delta_manifest_list": string_column([s.delta_manifest_list for s in found]),
        }
        if sizes:
            workers = resolve_parallelism(self._ctx.options, self._ctx.io, parallelism)
            with Workers(workers) as pool:
                deltas = pool.map(self._delta_sizes, found)
            for index, name in enumerate(("added_files", "added_bytes", "deleted_files", "deleted_bytes")):
                columns[name] = int64_column([d[index] for d in deltas])
        return self._counted(pa.table(columns))

    def _delta_sizes(self, snapshot: Snapshot) -> tuple[int, int, int, int]:
        store = self._ctx.store
        added = added_bytes = deleted = deleted_bytes = 0
        for meta in store.read_manifest_list(snapshot.delta_manifest_list):
            for entry in store.read_manifest(meta.file_name):
                if entry.kind == FileKind.ADD:
                    added += 1
                    added_bytes += entry.file.file_size
                else:
                    deleted += 1
                    deleted_bytes += entry.file.file_size
        return added, added_bytes, deleted, deleted_bytes

    # --- $tags -----------------------------------------------------------------------------------------------------
    def tags(self) -> pa.Table:
        """Every tag: its snapshot, when it was created, how long it is retained (seconds; null: forever) and when
        that retention ends (``expire_time``, UTC; null: never)."""
        found = self._ctx.store.tags()
        expires = [t.expires_ms() for t in found]
        return pa.table(
            {
                "tag_name": pa.array([t.name for t in found], pa.string()),
                "snapshot_id": pa.array([t.snapshot.id for t in found], pa.int64()),
                "schema_id": pa.array([t.snapshot.schema_id for t in found], pa.int64()),
                "commit_time": pa.array([t.snapshot.time_millis for t in found], pa.int64()).cast(_utc_ms()),
                "record_count": pa.array([t.snapshot.total_record_count for t in found], pa.int64()),
                "create_time": pa.array([t.created_local() for t in found], pa.timestamp("us")),
                "time_retained_seconds": pa.array([t.time_retained_seconds for t in found], pa.float64()),
                "expire_time": pa.array([None if e is None else int(e) for e in expires], pa.int64()).cast(_utc_ms()),
            }
        )

    # --- $partitions -----------------------------------------------------------------------------------------------
    def partitions(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Per partition of a snapshot (latest by default), as Paimon's ``$partitions``: ``partition``
        (``k=v/...``, dates as yyyy-MM-dd), record_count, file_size_in_bytes, file_count, last_update_time (newest
        file creation time, local), and ``values`` (the typed partition values), sorted by value."""
        entries = self._live(self._snapshot(snapshot_id, tag))
        groups: dict[bytes, list[int]] = {}
        for entry in entries:
            group = groups.setdefault(entry.partition, [0, 0, 0, -1])
            group[0] += entry.file.row_count
            group[1] += entry.file.file_size
            group[2] += 1
            group[3] = max(group[3], entry.file.creation_time_ms if entry.file.creation_time_ms is not None else -1)
        codec = self._ctx.partition_codec()
        schema = self._ctx.schema

        def order(partition: bytes) -> tuple[Any, ...]:
            values = codec.values(partition)
            return tuple((values[k] is None, values[k] if values[k] is not None else 0) for k in schema.partition_keys)

        keys = sorted(groups, key=order) if schema.partition_keys else list(groups)
        value_type = self._value_type()
        table = pa.table(
            {
                "partition": pa.array([self._partition_text(k) for k in keys], pa.string()),
                "record_count": pa.array([groups[k][0] for k in keys], pa.int64()),
                "file_size_in_bytes": pa.array([groups[k][1] for k in keys], pa.int64()),
                "file_count": pa.array([groups[k][2] for k in keys], pa.int64()),
                "last_update_time": pa.array(
                    [local_creation_time(groups[k][3] if groups[k][3] >= 0 else None) for k in keys],
                    pa.timestamp("ms"),
                ),
                "values": pa.array([codec.values(k) for k in keys], value_type),
            }
        )
        return self._counted(table)

    def _value_type(self) -> pa.DataType:
        return pa.struct([pa.field(f.name, arrow_type_of(f.type)) for f in self._ctx.schema.partition_fields])

    # --- $files ----------------------------------------------------------------------------------------------------
    def files(self, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
        """Every live data file of a snapshot (latest by default), as Paimon's ``$files``; ``file_path`` relative
        to the table root."""
        entries = self._live(self._snapshot(snapshot_id, tag))
        codec = self._ctx.partition_codec()
        paths = DataPaths(self._ctx.schema, codec)
        entries.sort(key=lambda e: (self._partition_text(e.partition), e.file.creation_time_ms or 0, e.file.file_name))
        table = pa.table(
            {
                "partition": pa.array([self._partition_text(e.partition) for e in entries], pa.string()),
                "values": pa.array([codec.values(e.partition) for e in entries], self._value_type()),
                "bucket": pa.array([e.bucket for e in entries], pa.int32()),
                "file_path": pa.array([paths.of_entry(e) for e in entries], pa.string()),
                "file_format": pa.array([e.file.file_name.rpartition(".")[2] for e in entries], pa.string()),
                "schema_id": pa.array([e.file.schema_id for e in entries], pa.int64()),
                "record_count": pa.array([e.file.row_count for e in entries], pa.int64()),
                "file_size_in_bytes": pa.array([e.file.file_size for e in entries], pa.int64()),
                "creation_time": pa.array(
                    [local_creation_time(e.file.creation_time_ms) for e in entries], pa.timestamp("ms")
                ),
            }
        )
        return self._counted(table)

    # --- $options and describe -------------------------------------------------------------------------------------
    def option_infos(self) -> list[OptionInfo]:
        """Every option tablefmt interprets (effective value and source) and every other option the table sets."""
        raw = self._ctx.schema.options
        result = []
        for key, option in REGISTRY.items():
            default = None if option.default is None else option.type.render(option.default)
            if key in raw:
                result.append(OptionInfo(key, raw[key], "table", default, option.doc))
            else:
                result.append(OptionInfo(key, default, "default", default, option.doc))
        for key in sorted(set(raw) - set(REGISTRY)):
            result.append(OptionInfo(key, raw[key], "table, not interpreted by tablefmt", None, ""))
        result.sort(key=lambda o: (o.source == "default", o.key))
        return result

    def options(self) -> pa.Table:
        """Paimon's ``$options`` widened: key, value (effective), source, default."""
        infos = self.option_infos()
        return pa.table(
            {
                "key": pa.array([o.key for o in infos], pa.string()),
                "value": pa.array([o.value for o in infos], pa.string()),
                "source": pa.array([o.source for o in infos], pa.string()),
                "default": pa.array([o.default for o in infos], pa.string()),
            }
        )

    def describe(self, *, sizes: bool = True, parallelism: int | None = None) -> TableDescription:
        """Schema, partition keys, options, counts and live bytes; with ``sizes`` also stored and reclaimable bytes
        (a full ``check``: every file of every snapshot, tag and branch is listed and sized)."""
        ctx = self._ctx
        store = ctx.store
        ids = store.snapshot_ids()
        latest = store.latest_snapshot()
        entries = self._live(latest)
        extra: dict[str, Any] | None = None
        if sizes:
            checked = check_table(ctx, parallelism=parallelism)
            total = checked.referenced_bytes + checked.orphan_bytes + checked.held_bytes
            extra = {
                "referenced_bytes": checked.referenced_bytes,
                "orphan_bytes": checked.orphan_bytes,
                "held_bytes": checked.held_bytes,
                "total_bytes": total,
                "reclaimable_bytes": checked.reclaimable_bytes,
                "reclaimable_note": checked.reclaimable_note,
                "ok": checked.ok,
            }
        schema = ctx.schema
        return TableDescription(
            location=ctx.url(),
            schema_id=schema.id,
            columns=tuple((f.name, str(f.type), f.id) for f in schema.fields),
            partition_keys=schema.partition_keys,
            options=tuple(self.option_infos()),
            snapshots=len(ids),
            earliest_snapshot=store.earliest_snapshot_id(),
            latest_snapshot=None if latest is None else latest.id,
            latest_time_ms=None if latest is None else latest.time_millis,
            schemas=len(store.schema_ids()),
            tags=len(store.tag_names()),
            branches=tuple(store.branch_names()),
            consumers=len(store.consumers()),
            live_files=len(entries),
            live_records=sum(e.file.row_count for e in entries),
            live_bytes=sum(e.file.file_size for e in entries),
            partitions=len({e.partition for e in entries}),
            sizes=extra,
            primary_keys=schema.primary_keys,
            row_count_kind=row_count_kind(schema),
        )


def nearby_partitions(table: pa.Table, spec: Mapping[str, Any], limit: int = 5) -> list[str]:
    """Partitions of a ``partitions()`` table next to a typed (partial) spec in partition order (for the message of
    a drop that matches nothing): the ones around where the spec's first key would sort, else the first ones."""
    names: list[str] = table.column("partition").to_pylist()
    if not names or not spec:
        return names[:limit]
    key, wanted = next(iter(spec.items()))
    values = [row.get(key) for row in table.column("values").to_pylist()]
    try:
        position = next((i for i, v in enumerate(values) if v is None or (wanted is not None and v >= wanted)), 0)
    except TypeError:
        position = 0
    start = max(0, min(position - limit // 2, len(names) - limit))
    return names[start : start + limit]
