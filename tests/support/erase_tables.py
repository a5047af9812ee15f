"""Builders for the erasure tests: a table of user events with a column of every kind a ``--where`` compares
(BIGINT, STRING, DECIMAL, BOOLEAN, DOUBLE, DATE partition, TIMESTAMP), written in several appends, and an
independent oracle of which rows and files hold a user."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from support.operations import remove_orphan_files
from support.tables import FAR_FUTURE_MS, files_under, reachable_files
from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

EVENTS_SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.int64()),
        pa.field("email", pa.string()),
        pa.field("amount", pa.decimal128(10, 2)),
        pa.field("active", pa.bool_()),
        pa.field("score", pa.float64()),
        pa.field("day", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
DAY0 = dt.date(2024, 1, 1)
TS0 = dt.datetime(2024, 1, 1, 0, 0, 0)


def event_rows(users: Sequence[int], day_offset: int, seq: int = 0) -> pa.Table:
    """One row per user: derived, deterministic values; ``seq`` tells appends of the same users apart."""
    return pa.table(
        {
            "user_id": list(users),
            "email": [None if u % 7 == 6 else f"u{u}@example.com" for u in users],
            "amount": [decimal.Decimal(f"{u}.{seq:02d}") for u in users],
            "active": [u % 2 == 0 for u in users],
            "score": [u * 0.5 + seq for u in users],
            "day": [DAY0 + dt.timedelta(days=day_offset)] * len(users),
            "ts": [TS0 + dt.timedelta(hours=u, minutes=seq) for u in users],
        },
        schema=EVENTS_SCHEMA,
    )


def events_table(path: str | Path, appends: Iterable[tuple[Sequence[int], int]] = (), **options: str) -> Table:
    """A write-only table of :data:`EVENTS_SCHEMA` partitioned by ``day``; one append (one file per day) per
    (users, day offset) given."""
    table = Table.create(str(path), EVENTS_SCHEMA, partition_keys=["day"], options={"write-only": "true", **options})
    for seq, (users, day) in enumerate(appends):
        table.append(event_rows(users, day, seq))
    return table


STANDARD_APPENDS = (
    (range(10), 0),
    (range(10, 20), 0),
    (range(20, 30), 1),
    (range(0, 30, 3), 2),
    (range(30, 40), 1),
)
"""Five files over three days; users 0, 3, ..., 27 appear twice (the fourth append repeats them on day 2)."""


def all_rows(table: Table) -> list[dict[str, Any]]:
    """Every live row, as Python values, in a stable order."""
    rows = Table.open(table.location).to_arrow().to_pylist()
    return sorted(rows, key=lambda r: (r["user_id"], r["ts"]))


def live_files(table: Table) -> dict[str, pa.Table]:
    """{path relative to the root: its rows} of the latest snapshot's live data files, read directly."""
    fresh = Table.open(table.location)
    root = Path(fresh.location)
    found = {}
    for entry in fresh.plan_files(fresh.latest_snapshot()):
        matches = list(root.rglob(entry.file.file_name))
        assert len(matches) == 1, entry.file.file_name
        found[str(matches[0].relative_to(root))] = pq.read_table(matches[0])
    return found


def files_holding(table: Table, users: set[int]) -> set[str]:
    """The live files with a row of one of ``users`` (the oracle of which files an erasure rewrites)."""
    return {path for path, rows in live_files(table).items() if users & set(rows["user_id"].to_pylist())}


def parquet_names_under(root: str | Path) -> set[str]:
    """The names of the table's Parquet files (data and changelog; not the audit ledger's records)."""
    return {Path(rel).name for rel in files_under(root) if rel.endswith(".parquet")}


def left_behind(root: Path, where: str) -> list[str]:
    """What an erasure (``where``) left after its re-run: rows the certificate still finds, then, after an orphan
    cleanup far in the future, files under the root the table does not reference. [] when nothing."""
    problems = []
    certificate = TableMaintenance(TableContext.load(str(root))).verify_erasure(where)
    if not certificate.certified:
        problems.append(f"erased rows left in {certificate.matched_files} {certificate.unreadable}")
    remove_orphan_files(TableContext.load(str(root)), force=True, now_ms=FAR_FUTURE_MS)
    leaked = files_under(root) - reachable_files(TableContext.load(str(root)))
    if leaked:
        problems.append(f"leaked {sorted(leaked)}")
    return problems
