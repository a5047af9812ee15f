"""The public Table API: create/open, append, overwrite, drop partitions, read, snapshots, tags, maintenance."""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tableformat.audit import (
    AuditQuery,
    AuditRunSummary,
    PathEvent,
    RunRecord,
    audit_run_files,
    audit_runs,
    path_events,
    recorded,
)
from tableformat.cleanup.after_commit import run_after_commit
from tableformat.cleanup.erase import EraseResult
from tableformat.cleanup.kernel import OperationResult, run_operation
from tableformat.cleanup.kernel.audit import retired_files
from tableformat.cleanup.snapshots import TAG_DELETION
from tableformat.clock import resolve_now, system_clock
from tableformat.codec.arrow_schema import arrow_schema_of, fields_from_arrow
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import DataFileWriter, NewDataFile, conform
from tableformat.commit.rollback import RollbackResult, rollback
from tableformat.commit.schema_change import SchemaChangeResult, alter_options
from tableformat.commit.schema_update import SchemaUpdate, merge_schema
from tableformat.commit.uncommitted import discard_uncommitted
from tableformat.context import TableContext
from tableformat.data_paths import outside_root_reason, require_data_inside_root
from tableformat.durations import duration_arg_ms
from tableformat.errors import (
    CommitStateUnknownError,
    SnapshotNotFoundError,
    StorageError,
    TableAlreadyExistsError,
    TagError,
    UnknownOptionError,
    ValidationError,
)
from tableformat.inspect import TableInspector
from tableformat.io.factory import open_location
from tableformat.layout import NameFactory, TableLayout
from tableformat.lazy_module import lazy_module
from tableformat.maintenance import TableMaintenance, deprecated_alias
from tableformat.model.audit import RETIRED, AuditFile
from tableformat.model.schema import TableSchema
from tableformat.model.snapshot import Snapshot, Tag
from tableformat.options import (
    BUCKET,
    DYNAMIC_PARTITION_OVERWRITE,
    REGISTRY,
    SINGLE_WRITER_UNSAFE_STORE,
    TableOptions,
    check_option_keys,
)
from tableformat.readers import DataFileInfo, PartitionSpec, TableReaders
from tableformat.scan.record_ttl import resolve_record_ttl
from tableformat.store import MetadataStore

UNSET_HINT = "the table does not hold it either: nothing to unset"

if TYPE_CHECKING:
    import pyarrow as pa

    from tableformat.report import TableRetentionReport
else:
    pa = lazy_module("pyarrow")

log = logging.getLogger(__name__)

__all__ = ["DataFileInfo", "PartitionSpec", "Table"]


class Table(TableReaders):
    """A Paimon append table on local disk or any fsspec store (S3 via s3fs)."""

    def __init__(self, context: TableContext) -> None:
        self._ctx = context
        self.commit_user = str(uuid.uuid4())
        self._identifiers = itertools.count(1)
        self._atomic_create_checked = False
        self.last_after_commit: tuple[OperationResult, ...] = ()
        """What the after-commit maintenance of this object's last commit did (each result's ``headline()``)."""

    # --- create / open ---------------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str,
        schema: pa.Schema,
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        storage_options: Mapping[str, Any] | None = None,
        *,
        allow_unknown_options: bool = False,
    ) -> Table:
        """Create a new, empty table (schema/schema-0). Raises TableAlreadyExistsError if one is there.

        ``options`` are validated first: an unknown name (neither a tablefmt option nor one of Paimon's, see
        docs/options.md) raises UnknownOptionError naming the closest known option, unless
        ``allow_unknown_options`` is true; values of the options tablefmt interprets are always checked.
        """
        if not isinstance(schema, pa.Schema):
            raise ValidationError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
        fields = fields_from_arrow(schema)
        names = [f.name for f in fields]
        keys = tuple(partition_keys)
        missing = [k for k in keys if k not in names]
        if missing or len(set(keys)) != len(keys):
            raise ValidationError(f"partition keys {list(keys)} must be distinct columns of the schema {names}")
        for key in keys:
            if fields[names.index(key)].type.root in ("BYTES", "VARBINARY", "BINARY", "FLOAT", "DOUBLE"):
                raise ValidationError(
                    f"column {key!r} of type {fields[names.index(key)].type} cannot be a partition key"
                )
        opts = {str(k): str(v) for k, v in (options or {}).items()}
        check_option_keys(opts, allow_unknown=allow_unknown_options)
        opts.setdefault("file.format", "parquet")
        table_options = TableOptions(opts)
        table_options.validate()
        outside = outside_root_reason(table_options)
        if outside is not None:
            raise ValidationError(f"{outside}; tablefmt creates tables whose files stay inside the table root")
        if table_options.require(BUCKET) != -1:
            raise ValidationError("tablefmt creates bucket-unaware append tables only (bucket=-1)")
        uninterpreted = sorted(k for k in opts if k not in REGISTRY)
        if uninterpreted:
            log.info("options not interpreted by tablefmt are stored as given: %s", uninterpreted)
        file_io, root = open_location(path, dict(storage_options or {}))
        layout = TableLayout(root)
        store = MetadataStore(file_io, layout)
        if store.schema_ids():
            raise TableAlreadyExistsError(f"a table already exists at {file_io.url(root)}")
        table_schema = TableSchema(
            id=0,
            fields=fields,
            highest_field_id=len(fields) - 1,
            partition_keys=keys,
            options=opts,
            time_millis=system_clock(),
        )
        resolve_record_ttl(table_schema, 0)  # a TTL on a missing or non-time column is refused before creating
        if not store.write_schema_if_absent(table_schema):
            raise TableAlreadyExistsError(f"a table already exists at {file_io.url(root)}")
        return cls(TableContext.of(path, file_io, layout, table_schema))

    @classmethod
    def open(cls, path: str, storage_options: Mapping[str, Any] | None = None) -> Table:
        """Open an existing table; TableNotFoundError if there is none."""
        context = TableContext.load(path, dict(storage_options or {}))
        return cls(context)

    # --- properties ------------------------------------------------------------------------------------------
    @property
    def context(self) -> TableContext:
        return self._ctx

    @property
    def location(self) -> str:
        return self._ctx.url()

    @property
    def schema(self) -> TableSchema:
        return self._ctx.schema

    @property
    def arrow_schema(self) -> pa.Schema:
        return arrow_schema_of(list(self._ctx.schema.fields))

    @property
    def partition_keys(self) -> tuple[str, ...]:
        return self._ctx.schema.partition_keys

    @property
    def options(self) -> TableOptions:
        return self._ctx.options

    # --- writes ----------------------------------------------------------------------------------------------
    def _commit(
        self,
        request_kind: ChangeKind,
        data: pa.Table | pa.RecordBatch | None,
        *,
        prepared: Sequence[NewDataFile] | None = None,
        scope: tuple[dict[str, Any], ...] | None = None,
        dynamic: bool = False,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        fill_missing_columns: bool = False,
        merge_schema: bool = False,
    ) -> Snapshot | None:
        if merge_schema and data is not None:
            self.merge_schema_for(data.schema)
        self._refresh_schema()
        ctx = self._ctx
        if data is not None:  # refuse data that does not fit before anything is written (the S3 probe included)
            data = conform(data, ctx.schema, fill_missing_columns=fill_missing_columns)
        require_data_inside_root(ctx.options, ctx.url(), "write to")
        self._check_atomic_create()
        # Only a commit that writes data needs a writer (a drop writes DELETE entries only, in any bucket layout).
        writer = DataFileWriter(ctx.io, ctx.layout, ctx.schema, NameFactory()) if data is not None else None
        written: list[str] = writer.written if writer is not None else []
        try:
            new_files: list[NewDataFile] = writer.write(data) if writer is not None else list(prepared or ())
            request = CommitRequest(
                kind=request_kind,
                new_files=new_files,
                overwrite_scope=scope,
                dynamic=dynamic,
                commit_user=commit_user or self.commit_user,
                commit_identifier=commit_identifier if commit_identifier is not None else next(self._identifiers),
            )
            result = Committer(ctx.store, ctx.schema).commit(request)
        except CommitStateUnknownError:
            raise  # the snapshot may reference these files: keep them
        except BaseException:
            self._remove_unreferenced(written)
            raise
        if not result.created:
            # Nothing new references the files this call wrote (no change, or committed before).
            self._remove_unreferenced(written)
        else:
            self._after_commit()
        return result.snapshot

    def _remove_unreferenced(self, paths: list[str]) -> None:
        discard_uncommitted(self._ctx.io, paths, "data file(s) of a write no snapshot took")

    def _check_atomic_create(self) -> None:
        """Before the first commit: refuse stores that cannot create snapshot files atomically."""
        if self._atomic_create_checked:
            return
        ctx = self._ctx
        if not ctx.io.verify_atomic_create(ctx.layout.root) and not self.options.require(SINGLE_WRITER_UNSAFE_STORE):
            raise StorageError(
                f"the store at {ctx.url()} does not honour atomic create-if-absent (S3 PutObject If-None-Match); "
                "concurrent writers could lose commits. Use a store that supports conditional writes, or set "
                "commit.allow-non-atomic-store=true if exactly one writer ever commits to this table"
            )
        self._atomic_create_checked = True

    def write_files(self, data: pa.Table | pa.RecordBatch, *, fill_missing_columns: bool = False) -> list[NewDataFile]:
        """Write data files without committing them (for engines whose workers write and whose driver commits).

        The caller commits the returned files with commit_files, or deletes them if its job fails. Missing columns
        are refused as in append().
        """
        self._refresh_schema()
        ctx = self._ctx
        writer = DataFileWriter(ctx.io, ctx.layout, ctx.schema, NameFactory())
        try:
            return writer.write(data, fill_missing_columns=fill_missing_columns)
        except BaseException:
            if writer.written:
                ctx.io.delete_files(writer.written)
            raise

    def commit_files(
        self,
        files: Sequence[NewDataFile],
        *,
        mode: str = "append",
        partition: PartitionSpec | None = None,
        dynamic: bool | None = None,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
    ) -> Snapshot | None:
        """Commit files written by write_files as ONE snapshot: mode 'append' or 'overwrite' (see overwrite())."""
        if mode == "append":
            if partition is not None or dynamic:
                raise ValidationError("append takes no partition spec or dynamic flag")
            return self._commit(
                ChangeKind.APPEND, None, prepared=files, commit_user=commit_user, commit_identifier=commit_identifier
            )
        if mode != "overwrite":
            raise ValidationError(f"unknown commit mode {mode!r}: use 'append' or 'overwrite'")
        scope, use_dynamic = self._overwrite_scope(partition, dynamic)
        return self._commit(
            ChangeKind.OVERWRITE,
            None,
            prepared=files,
            scope=scope,
            dynamic=use_dynamic,
            commit_user=commit_user,
            commit_identifier=commit_identifier,
        )

    def _overwrite_scope(
        self, partition: PartitionSpec | None, dynamic: bool | None
    ) -> tuple[tuple[dict[str, Any], ...] | None, bool]:
        if partition is not None and dynamic:
            raise ValidationError("dynamic overwrite takes no partition spec")
        if partition is not None:
            return (self._spec(partition),), False
        use_dynamic = bool(dynamic if dynamic is not None else self.options.require(DYNAMIC_PARTITION_OVERWRITE))
        return None, use_dynamic and bool(self.partition_keys)

    def _after_commit(self) -> None:
        """Maintenance after a successful commit (expiration per the table's options unless write-only).

        It never fails the commit: the snapshot is durable, so problems are logged and the commit returns.
        """
        self.last_after_commit = ()
        try:
            self.last_after_commit = tuple(run_after_commit(self._ctx))
        except Exception as exc:
            log.warning("maintenance after commit failed (the commit itself succeeded): %s", exc)

    def append(
        self,
        data: pa.Table | pa.RecordBatch,
        *,
        fill_missing_columns: bool = False,
        merge_schema: bool = False,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
    ) -> Snapshot | None:
        """Append rows as one APPEND snapshot (None if ``data`` has no rows).

        ``data`` must have every column of the table; a missing one is refused before anything is written. With
        ``fill_missing_columns=True`` missing nullable columns are written as nulls (never a partition key: its
        rows would all land in the default partition, nor a NOT NULL column). With ``merge_schema=True`` the data's
        columns the table lacks are added (nullable) and its wider types widen the table's, in a schema version
        committed before the data (docs/schema.md).
        """
        return self._commit(
            ChangeKind.APPEND,
            data,
            commit_user=commit_user,
            commit_identifier=commit_identifier,
            fill_missing_columns=fill_missing_columns,
            merge_schema=merge_schema,
        )

    def overwrite(
        self,
        data: pa.Table | pa.RecordBatch,
        partition: PartitionSpec | None = None,
        *,
        dynamic: bool | None = None,
        fill_missing_columns: bool = False,
        merge_schema: bool = False,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
    ) -> Snapshot | None:
        """Replace data in one OVERWRITE snapshot.

        ``partition`` given: static overwrite of that (possibly partial) partition spec; every row must be inside
        it. ``partition=None``: the whole table, or, when ``dynamic`` is true (default: the table option
        ``dynamic-partition-overwrite``, false unless set), exactly the partitions present in ``data``. Missing
        columns are refused, or filled as in append() with ``fill_missing_columns=True``; ``merge_schema`` as in
        append().
        """
        scope, use_dynamic = self._overwrite_scope(partition, dynamic)
        return self._commit(
            ChangeKind.OVERWRITE,
            data,
            scope=scope,
            dynamic=use_dynamic,
            commit_user=commit_user,
            commit_identifier=commit_identifier,
            fill_missing_columns=fill_missing_columns,
            merge_schema=merge_schema,
        )

    def drop_partitions(self, partitions: Iterable[PartitionSpec]) -> Snapshot | None:
        """Mark every file of the given (possibly partial) partitions deleted in one OVERWRITE snapshot.

        No file is physically deleted (expiration frees the bytes later). Dropping partitions that hold no data
        writes no snapshot and returns None.
        """
        specs = tuple(self._spec(p) for p in partitions)
        if not specs:
            raise ValidationError("no partition to drop")
        asked = ", ".join(",".join(f"{k}={v}" for k, v in spec.items()) for spec in specs)
        record = RunRecord("drop-partition", self._ctx.options, {"partitions": asked})
        with recorded(record, self._ctx.store):
            snapshot = self._commit(ChangeKind.DROP, None, scope=specs)
            if snapshot is not None and record.enabled:  # the files the drop took out: read back from its delta
                record.snapshot_ids = (snapshot.id,)  # what `tablefmt undo` reverses
                why = f"partition {asked} dropped; replaced in snapshot {snapshot.id}"
                record.add_all(retired_files(self._ctx.store, snapshot.id), lambda path: why, RETIRED)
        return snapshot

    # --- tags ------------------------------------------------------------------------------------------------
    def create_tag(
        self, name: str, snapshot_id: int | None = None, *, time_retained: dt.timedelta | None = None
    ) -> Tag:
        """Tag a snapshot (latest by default). Tags protect their files from expiration."""
        if time_retained is not None:
            duration_arg_ms(time_retained, "time_retained")  # 0 to 36500 d, like every duration
        snapshot = self.snapshot(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snapshot is None:
            raise TagError(f"cannot create tag {name!r}: the table has no snapshot yet")
        now = dt.datetime.now()
        tag = Tag(
            name=name,
            snapshot=snapshot,
            create_time=(now.year, now.month, now.day, now.hour, now.minute, now.second, now.microsecond * 1000),
            time_retained_seconds=None if time_retained is None else time_retained.total_seconds(),
        )
        if not self._ctx.store.write_tag_if_absent(tag):
            raise TagError(f"tag {name!r} already exists")
        if not self._ctx.store.snapshot_exists(snapshot.id):  # expired while tagging: the tag could miss files
            self._ctx.store.delete_tag(name)
            raise TagError(f"snapshot {snapshot.id} was expired while tagging it; tag not created")
        return tag

    def delete_tag(self, name: str) -> None:
        """Delete a tag and the files only it held (as Paimon's tag deletion does): an expiration that expires no
        snapshot, only this tag (cleanup/snapshots ``TAG_DELETION``), under the undo window like any other.

        A tag a branch was created from is kept while that branch exists (Paimon refuses it too): TagError.
        """
        store = self._ctx.store
        try:
            tag = store.read_tag(name)
        except SnapshotNotFoundError:
            raise TagError(f"tag {name!r} does not exist") from None
        users = store.branches_holding(tag.snapshot)
        if users:
            raise TagError(
                f"tag {name!r} is used by branch {', '.join(users)} (created from it); delete the branch first"
            )
        result = run_operation(TAG_DELETION, self._ctx, {"tag": name})
        if name not in result.expired_tags:
            raise TagError(f"tag {name!r} does not exist any more (deleted or replaced meanwhile)")

    def tags(self) -> list[Tag]:
        """Every tag, by name."""
        return self._ctx.store.tags()

    # --- steering: options and rollback ---------------------------------------------------------------------
    def set_options(self, options: Mapping[str, str], *, allow_unknown_options: bool = False) -> SchemaChangeResult:
        """``ALTER TABLE SET``: a new schema version with these options (validated; Paimon's immutable options
        refused once the table has snapshots). Safe against concurrent schema changes; a no-op writes nothing."""
        return self._alter(alter_options(self._ctx.store, options, allow_unknown=allow_unknown_options))

    def unset_options(self, keys: Iterable[str]) -> SchemaChangeResult:
        """``ALTER TABLE RESET``: a new schema version without these options (back to their defaults). A name the
        table does not hold and neither tablefmt nor Paimon knows is refused as a likely typo (UnknownOptionError,
        with the closest known name); nothing is written then."""
        keys = list(keys)
        held = self._ctx.store.latest_schema().options
        try:
            check_option_keys([key for key in keys if key not in held])
        except UnknownOptionError as exc:
            raise UnknownOptionError(exc.suggestions, UNSET_HINT) from None
        return self._alter(alter_options(self._ctx.store, None, keys))

    def update_schema(self) -> SchemaUpdate:
        """Column changes committed as one new schema version when the ``with`` block ends (docs/schema.md)::

            with table.update_schema() as update:
                update.add_column("region", "STRING", after="id")
                update.rename_column("amount", "total")
                update.update_column("total", type="DOUBLE")

        Paimon's rules apply (SchemaChangeError, nothing written); field ids are kept."""
        return SchemaUpdate(self._ctx.store, on_commit=lambda _result: self._refresh_schema())

    def merge_schema_for(self, incoming: pa.Schema) -> SchemaChangeResult:
        """Add the columns of Arrow schema ``incoming`` that the table lacks (nullable) and widen the columns it
        holds wider, as ``append(..., merge_schema=True)`` does before writing; nothing is written when it fits."""
        return self._alter(merge_schema(self._ctx.store, incoming))

    def _alter(self, result: SchemaChangeResult) -> SchemaChangeResult:
        self._refresh_schema()
        return result

    def rollback_to(
        self,
        snapshot_id: int | None = None,
        *,
        tag: str | None = None,
        as_of: int | dt.datetime | None = None,
        dry_run: bool = False,
    ) -> RollbackResult:
        """Roll back to a snapshot id, a tag, or the newest snapshot at or before ``as_of`` (exactly one), as Paimon
        does: newer snapshots and their tags are removed, their files left to orphan cleanup (tableformat.commit.
        rollback). Refused while a branch, a consumer or an interrupted expiration needs them; TableBusyError while a
        maintenance run holds the table (tableformat/claims.py), nothing changed."""
        time_ms = None
        if as_of is not None:
            time_ms = int(as_of.timestamp() * 1000) if isinstance(as_of, dt.datetime) else int(as_of)
        return rollback(self._ctx.store, snapshot_id=snapshot_id, tag=tag, time_ms=time_ms, dry_run=dry_run)

    @property
    def inspect(self) -> TableInspector:
        """Views of the table as pyarrow tables (snapshots, tags, partitions, files, options) and ``describe()``."""
        return TableInspector(self._ctx)

    def report(
        self, *, since: dt.timedelta | int | str | None = None, now_ms: int | None = None
    ) -> TableRetentionReport:
        """The retention report's figures (``tablefmt report``): storage over time, partitions, what each rule's
        dry run would free now, keep-up. ``since``: a duration back from now for the charts and keep-up."""
        now = resolve_now(now_ms)
        from tableformat.report import since_cutoff, table_report  # only here: its import costs every command

        return table_report(self._ctx, now_ms=now, since_ms=since_cutoff(since, now))

    # --- audit ledger ----------------------------------------------------------------------------------------
    def audit(
        self, *, since: dt.timedelta | int | str | None = None, run_id: str | None = None, now_ms: int | None = None
    ) -> list[AuditRunSummary]:
        """The runs the audit ledger holds (``.tablefmt/audit/``, docs/audit.md), oldest first: those that started
        within ``since`` (a duration back from now) and, with ``run_id``, that run only."""
        return audit_runs(self._ctx.store, self._audit_query(since, run_id, now_ms))

    def audit_path(
        self, path: str, *, since: dt.timedelta | int | str | None = None, now_ms: int | None = None
    ) -> list[PathEvent]:
        """What every recorded run did to the file ``path`` (relative to the table root), oldest first."""
        return path_events(self._ctx.store, path.strip("/"), self._audit_query(since, None, now_ms))

    def audit_files(self, run_id: str) -> list[AuditFile]:
        """The file rows of run ``run_id`` (path order); [] when the ledger has no such run."""
        return audit_run_files(self._ctx.store, run_id)

    @staticmethod
    def _audit_query(since: dt.timedelta | int | str | None, run_id: str | None, now_ms: int | None) -> AuditQuery:
        since_ms = None if since is None else resolve_now(now_ms) - duration_arg_ms(since, "since")
        return AuditQuery(since_ms=since_ms, run_id=run_id)

    # --- maintenance -----------------------------------------------------------------------------------------
    @property
    def maintenance(self) -> TableMaintenance:
        """Every registered maintenance operation of this table (``maintenance.run(name, ...)``)."""
        return TableMaintenance(self._ctx)

    def erase(self, where: Any, **kwargs: Any) -> EraseResult:
        """Erase the rows ``where`` matches (SQL text or a pyarrow compute expression); ``table.maintenance.erase``
        with the filter given first (``purge=True``, ``dry_run=True``, ...). See docs/erase.md."""
        return self.maintenance.erase(where, **kwargs)

    # One-line deprecated aliases of table.maintenance.<operation> (keyword arguments only).
    expire_snapshots = deprecated_alias("expire_snapshots")
    expire_partitions = deprecated_alias("expire_partitions")
    expire_records = deprecated_alias("expire_records")
    compact = deprecated_alias("compact")
    remove_orphan_files = deprecated_alias("remove_orphan_files")
    check = deprecated_alias("check")
