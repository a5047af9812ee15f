"""Tables for the S3 expiration tests: a write-only table of small appends (two int partitions), partition 0
dropped after a given append, so that expiring the early snapshots deletes data files."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tableformat import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])


def rows(start: int, count: int = 8) -> pa.Table:
    """``count`` rows with ids from ``start``, alternating partitions 0 and 1."""
    return pa.table({"id": list(range(start, start + count)), "part": [i % 2 for i in range(count)]}, schema=SCHEMA)


def appended(s3_root: tuple[str, dict[str, Any]], appends: int, drop_after: int | None = None) -> Table:
    """A table at ``s3_root`` with ``appends`` appends of 8 rows; partition 0 dropped after append ``drop_after``
    (then snapshot ``drop_after + 1`` is the drop)."""
    url, options = s3_root
    table = Table.create(url, SCHEMA, ["part"], options={"write-only": "true"}, storage_options=options)
    for i in range(appends):
        table.append(rows(i * 8))
        if drop_after is not None and i + 1 == drop_after:
            table.drop_partitions([{"part": 0}])
    return table
