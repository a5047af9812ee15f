"""Primary-key tables written the way Paimon writes them, file by file, for tests of merge-on-read.

tablefmt refuses to write primary-key tables, so this writes what Paimon's writers and compactions leave: the
schema (primary keys, options), key-value Parquet files (``_KEY_<k>``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then
every table column, in ``<partition>/bucket-<n>/``) and their manifest entries with the key range, key statistics,
sequence numbers, level and delete-row count, committed through tablefmt's own Committer: APPEND for writes,
REPLACE for a compaction (files swapped for files at a higher level).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tableformat.codec.binary_row import encode_row
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import NewDataFile
from tableformat.data_paths import DataPaths
from tableformat.model.manifest import DataFileMeta, FileKind, FileSource, ManifestEntry, SimpleStats
from tableformat.table import Table

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
"""RowKind bytes as ``_VALUE_KIND`` stores them."""


class PkTable:
    """A primary-key table at ``root``: create it, then write files and commit them."""

    def __init__(
        self,
        root: Path,
        schema: pa.Schema,
        primary_keys: Sequence[str],
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        buckets: int = 1,
    ) -> None:
        opts = {"bucket": str(buckets), **dict(options or {})}
        base = Table.create(str(root), schema, partition_keys, allow_unknown_options=True)
        store = base.context.store
        latest = store.latest_schema()
        pk_schema = replace(
            latest, id=latest.id + 1, primary_keys=tuple(primary_keys), options={**latest.options, **opts}
        )
        assert store.write_schema_if_absent(pk_schema)
        self.root = root
        self.schema = pk_schema
        self.arrow_schema = schema
        self.buckets = buckets
        self.key_names = [k for k in primary_keys if k not in partition_keys] or list(primary_keys)
        self.key_types = [pk_schema.field(k).type for k in self.key_names]
        self.partition_types = [f.type for f in pk_schema.partition_fields]
        self.paths = DataPaths(pk_schema)

    @property
    def table(self) -> Table:
        return Table.open(str(self.root))

    def file(
        self,
        rows: Sequence[Mapping[str, Any]],
        sequence_numbers: Sequence[int],
        kinds: Sequence[int] | None = None,
        *,
        partition: Sequence[Any] = (),
        bucket: int = 0,
        level: int = 0,
        delete_row_count: int | None = None,
        value_stats: bool = False,
    ) -> NewDataFile:
        """A key-value data file of ``rows`` (sorted by key, as Paimon writes them), written now; ``kinds``
        default to +I; ``delete_row_count`` to the number of -U/-D records."""
        kinds = list(kinds) if kinds is not None else [INSERT] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: tuple(rows[i][k] for k in self.key_names))
        values = pa.Table.from_pylist([dict(rows[i]) for i in order], schema=self.arrow_schema)
        columns: dict[str, Any] = {f"_KEY_{k}": values.column(k) for k in self.key_names}
        columns["_SEQUENCE_NUMBER"] = pa.array([sequence_numbers[i] for i in order], pa.int64())
        columns["_VALUE_KIND"] = pa.array([kinds[i] for i in order], pa.int8())
        columns.update({name: values.column(name) for name in values.column_names})
        data = pa.table(columns)
        buffer = io.BytesIO()
        pq.write_table(data, buffer, compression="zstd")
        name = f"data-{uuid.uuid4()}-0.parquet"
        relative = self.paths.file_of_values(list(partition), bucket, name)
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(buffer.getvalue())
        keys = [tuple(rows[i][k] for k in self.key_names) for i in order]
        low = encode_row(list(keys[0]), self.key_types) if keys else encode_row([], [])
        high = encode_row(list(keys[-1]), self.key_types) if keys else encode_row([], [])
        retracts = sum(1 for kind in kinds if kind in (UPDATE_BEFORE, DELETE))
        stats = SimpleStats()
        if value_stats:
            fields = list(self.schema.fields)
            types = [f.type for f in fields]
            mins = [min((r[f.name] for r in rows if r[f.name] is not None), default=None) for f in fields]
            maxs = [max((r[f.name] for r in rows if r[f.name] is not None), default=None) for f in fields]
            nulls = tuple(sum(1 for r in rows if r[f.name] is None) for f in fields)
            stats = SimpleStats(
                min_values=encode_row(mins, types), max_values=encode_row(maxs, types), null_counts=nulls
            )
        meta = DataFileMeta(
            file_name=name,
            file_size=len(buffer.getvalue()),
            row_count=len(rows),
            min_key=low,
            max_key=high,
            key_stats=SimpleStats(min_values=low, max_values=high, null_counts=tuple(0 for _ in self.key_names)),
            value_stats=stats,
            min_sequence_number=min(sequence_numbers),
            max_sequence_number=max(sequence_numbers),
            schema_id=self.schema.id,
            level=level,
            delete_row_count=retracts if delete_row_count is None else delete_row_count,
            file_source=FileSource.APPEND if level == 0 else FileSource.COMPACT,
            value_stats_cols=None if value_stats else (),
        )
        return NewDataFile(
            partition=encode_row(list(partition), self.partition_types),
            partition_values=tuple(partition),
            partition_path=self.paths.partition_dir(list(partition)),
            bucket=bucket,
            total_buckets=self.buckets,
            meta=meta,
            path=str(path),
        )

    def commit(self, files: Sequence[NewDataFile], replaced: Sequence[NewDataFile] = ()) -> int:
        """One snapshot adding ``files`` (APPEND), or swapping ``replaced`` for them (a compaction); its id."""
        committer = Committer(Table.open(str(self.root)).context.store, self.schema)
        if replaced:
            old = tuple(
                ManifestEntry(
                    kind=FileKind.ADD,
                    partition=f.partition,
                    bucket=f.bucket,
                    total_buckets=f.total_buckets,
                    file=f.meta,
                )
                for f in replaced
            )
            request = CommitRequest(kind=ChangeKind.REPLACE, new_files=files, replaced_files=old)
        else:
            request = CommitRequest(kind=ChangeKind.APPEND, new_files=files)
        result = committer.commit(request)
        assert result.snapshot is not None
        return result.snapshot.id
