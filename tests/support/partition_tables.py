"""Partitioned tables for the partition expiration tests (fixed clocks, exact partition sets)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat.table import Table


def ms(*fields: int) -> int:
    """Epoch milliseconds of a UTC date-time."""
    return int(dt.datetime(*fields, tzinfo=dt.timezone.utc).timestamp() * 1000)  # type: ignore[misc]


def partitioned_table(
    path: Path, columns: Sequence[tuple[str, pa.DataType]], keys: Sequence[str], **options: str
) -> Table:
    schema = pa.schema([pa.field("id", pa.int64()), *[pa.field(n, t) for n, t in columns]])
    return Table.create(str(path), schema, partition_keys=list(keys), options={"write-only": "true", **options})


def fill(table: Table, partitions: Sequence[dict[str, Any]], rows_each: int = 2) -> dict[int, list[tuple[Any, ...]]]:
    """Append ``rows_each`` rows into every partition, one snapshot per partition; returns each snapshot's rows."""
    history: dict[int, list[tuple[Any, ...]]] = {}
    next_id = 0
    for spec in partitions:
        ids = list(range(next_id, next_id + rows_each))
        next_id += rows_each
        data = {"id": ids, **{k: [v] * rows_each for k, v in spec.items()}}
        snapshot = table.append(pa.table(data, schema=table.arrow_schema))
        assert snapshot is not None
        history[snapshot.id] = rows(table, snapshot.id)
    return history


def rows(table: Table, snapshot_id: int | None = None) -> list[tuple[Any, ...]]:
    data = table.to_arrow(snapshot_id=snapshot_id)
    return sorted((tuple(r.values()) for r in data.to_pylist()), key=repr)


def partitions(table: Table) -> set[tuple[Any, ...]]:
    """The partitions (typed values) of the latest snapshot."""
    keys = table.partition_keys
    return {tuple(f.partition[k] for k in keys) for f in table.files()}


def assert_history_reads(table: Table, history: dict[int, list[tuple[Any, ...]]]) -> None:
    """Every earlier snapshot still reads exactly its rows (the drop only marks files deleted)."""
    for snapshot_id, expected in history.items():
        assert rows(table, snapshot_id) == expected, snapshot_id
