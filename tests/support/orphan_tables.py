"""Tables and stray files for the orphan cleanup tests (kept apart from support/tables.py, the reachability oracle,
which must not use the Table it checks)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from support.tables import DAY_S, ID_PART_SCHEMA, age_path, id_part_rows
from tableformat.table import Table


def id_part_table(path: str | Path, *, appends: Iterable[int] = (), **options: str) -> Table:
    """A write-only table of :data:`ID_PART_SCHEMA` partitioned by ``part``, with one append of 8 rows (ids from
    each start in ``appends``) over parts 0 and 1 per start."""
    table = Table.create(str(path), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true", **options})
    for start in appends:
        table.append(id_part_rows(start, 8, parts=(0, 1)))
    return table


def plant_stray(root: Path, rel: str, days: float = 10, data: bytes = b"stray") -> str:
    """A file no snapshot references at ``root/rel``, ``days`` old; returns ``rel``."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    age_path(path, days * DAY_S)
    return rel
