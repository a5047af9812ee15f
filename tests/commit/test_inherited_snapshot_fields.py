"""What a tablefmt commit keeps of the latest snapshot, as Paimon's commit does: the watermark and the next row id,
by every commit kind (append, overwrite, drop); a table that never had them, nor an index manifest or statistics,
gets none. The index manifest and the statistics, which need real files, are covered by test_carried_metadata.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from tableformat import Table
from tableformat.model.snapshot import Snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
INHERITED = {"watermark": 1_700_000_000_000, "next_row_id": 42}


def _rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": ids, "dt": [dt] * len(ids)}, schema=SCHEMA)


def _give_latest(table: Table, **fields: object) -> Snapshot:
    """Rewrite the latest snapshot file with ``fields`` set (as Paimon Java or pypaimon would have written it)."""
    store = table.context.store
    latest = store.latest_snapshot()
    assert latest is not None
    changed = dataclasses.replace(latest, **fields)  # type: ignore[arg-type]
    Path(table.context.layout.snapshot_file(latest.id)).write_bytes(store.snapshot_bytes(changed))
    return changed


def _inherited(snapshot: Snapshot | None) -> dict[str, object]:
    assert snapshot is not None
    return {name: getattr(snapshot, name) for name in INHERITED}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    table = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    table.append(_rows([1, 2], "a"))
    table.append(_rows([3], "b"))
    return table


def test_a_table_without_them_gets_none(table: Table) -> None:
    table.append(_rows([4], "a"))
    latest = table.context.store.latest_snapshot()
    assert _inherited(latest) == dict.fromkeys(INHERITED)
    assert latest is not None and (latest.index_manifest, latest.statistics) == (None, None)


@pytest.mark.parametrize("kind", ["append", "overwrite", "drop"])
def test_every_commit_kind_keeps_them(table: Table, kind: str) -> None:
    _give_latest(table, **INHERITED)
    if kind == "append":
        table.append(_rows([4], "a"))
    elif kind == "overwrite":
        table.overwrite(_rows([5], "a"), {"dt": "a"})
    else:
        assert table.drop_partitions([{"dt": "a"}]) is not None
    latest = table.context.store.latest_snapshot()
    assert latest is not None and latest.id == 3
    assert _inherited(latest) == INHERITED
