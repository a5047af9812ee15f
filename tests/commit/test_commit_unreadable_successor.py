"""A commit whose snapshot was created but whose successor cannot be read keeps its files: whether the snapshot
counts is unknown, so nothing it may reference is deleted (CommitStateUnknownError), and the table stays whole."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.tables import files_under, reachable_files

from tableformat.context import TableContext
from tableformat.errors import CommitStateUnknownError
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "part": [0] * len(ids)}, schema=SCHEMA)


def test_an_unreadable_successor_after_the_create_keeps_the_committed_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, ["part"], options={"write-only": "true"})
    table.append(rows(1))
    (root / "snapshot" / "snapshot-3").write_bytes(b"{ not a snapshot")  # damaged, or unreadable for a moment
    with pytest.raises(CommitStateUnknownError, match="snapshot 2 was created"):
        table.append(rows(2))
    assert (root / "snapshot" / "snapshot-2").exists()
    (root / "snapshot" / "snapshot-3").unlink()
    reopened = Table.open(str(root))
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [1, 2]
    assert reachable_files(TableContext.load(str(root))) <= files_under(root)
    assert reopened.maintenance.check().ok
