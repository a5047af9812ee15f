"""What a tablefmt commit keeps of the latest snapshot, as Paimon's commit does: the index manifest (deletion
vectors; a dynamic-bucket primary-key table's hash index, without which the next Paimon write fails), the watermark,
the next row id, and the statistics file while the schema is unchanged. tablefmt changes no index file, so every
commit kind (append, overwrite, drop) carries them forward unchanged; a table that never had them gets none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from tableformat import Table
from tableformat.model.snapshot import Snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
INHERITED = {
    "index_manifest": "index-manifest-7d1c1a52-0f7b-4e1e-9d55-1c0f3a5e2b11-0",
    "watermark": 1_700_000_000_000,
    "next_row_id": 42,
    "statistics": "stat-3f0e4b8a-2c1d-4e5f-8a9b-0c1d2e3f4a5b-0",
}


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
    assert _inherited(table.context.store.latest_snapshot()) == dict.fromkeys(INHERITED)


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


def test_statistics_of_another_schema_are_not_inherited(table: Table) -> None:
    _give_latest(table, **INHERITED)
    table.set_options({"snapshot.num-retained.min": "3"})  # a new schema: the statistics describe the old one
    table.append(_rows([4], "a"))
    assert _inherited(table.context.store.latest_snapshot()) == {**INHERITED, "statistics": None}
