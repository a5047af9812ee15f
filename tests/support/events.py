"""A dated events table with something for every retention rule (the report tests' input)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa

from support.tables import age_path
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("amount", pa.float64()), pa.field("day", pa.date32())])


def rows(day: dt.date, count: int, first: int) -> pa.Table:
    return pa.table(
        {"id": list(range(first, first + count)), "amount": [i * 0.5 for i in range(count)], "day": [day] * count},
        schema=SCHEMA,
    )


def build_events(
    path: Path | str, *, days: int = 7, orphans: bool = True, storage_options: dict[str, Any] | None = None
) -> Table:
    """One load per day for the last ``days`` days, a late-data overwrite, a dropped day, a tag, an expiration
    that leaves the tag older than the earliest snapshot, and (``orphans``) a crashed load's files aged 2 days.
    Partition expiration drops partitions older than 3 days."""
    table = Table.create(
        str(path),
        SCHEMA,
        partition_keys=["day"],
        options={
            "write-only": "true",
            "snapshot.num-retained.min": "3",
            "snapshot.num-retained.max": "100",
            "snapshot.time-retained": "1 ms",
            "partition.expiration-time": "3 d",
        },
        storage_options=storage_options,
    )
    today = dt.date.today()
    first = 0
    for offset in range(days - 1, -1, -1):
        table.append(rows(today - dt.timedelta(days=offset), 50 + offset, first))
        first += 100
        if offset == days - 2:
            table.create_tag("early")
    table.maintenance.expire_snapshots(retain_min=days - 2, retain_max=days - 2, time_retained="1ms")
    table.overwrite(rows(today - dt.timedelta(days=1), 70, first), partition={"day": today - dt.timedelta(days=1)})
    table.drop_partitions([{"day": today - dt.timedelta(days=days - 1)}])
    if orphans:
        for leftover in table.write_files(rows(today, 30, 10_000)):
            age_path(leftover.path, 2 * 86_400)
    return table
