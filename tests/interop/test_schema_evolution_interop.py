"""Schema evolution both ways with pypaimon 2.1.0: pypaimon reads every table tablefmt evolved (added, renamed,
dropped and widened columns; older files of every schema version) and appends to it; tablefmt reads every table
pypaimon evolved through its ``alter_table`` and appends to it with ``merge_schema``."""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa

from interop.helpers import Paimon
from tableformat import Table

BASE = pa.schema(
    [("id", pa.int32()), ("amount", pa.float32()), ("price", pa.decimal128(10, 2)), ("note", pa.string()),
     ("dt", pa.string())]
)  # fmt: skip


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _base_rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int32()),
            "amount": pa.array([i + 0.5 for i in ids], pa.float32()),
            "price": pa.array([decimal.Decimal(f"{i}.25") for i in ids], pa.decimal128(10, 2)),
            "note": [f"n{i}" for i in ids],
            "dt": [dt] * len(ids),
        },
        schema=BASE,
    )


def _alter(pp: Paimon, name: str, changes: list[Any]) -> None:
    pp.catalog.alter_table(f"db.{name}", changes)


def test_pypaimon_reads_and_appends_to_a_table_tablefmt_evolved(pp: Paimon) -> None:
    table = Table.create(pp.path("t"), BASE, ["dt"])
    table.append(_base_rows([1, 2], "a"))
    with table.update_schema() as update:
        update.add_column("region", "STRING", after="id", comment="where")
        update.rename_column("amount", "total")
        update.update_column("total", type="DOUBLE")
        update.update_column("id", type="BIGINT")
        update.update_column("price", type="DECIMAL(12, 2)")
        update.drop_column("note")
    table.append(
        pa.table({"id": [3], "region": ["eu"], "total": [3.5], "price": [decimal.Decimal("3.25")], "dt": ["b"]}),
    )
    with table.update_schema() as update:
        update.add_column("note", "BIGINT")  # a name dropped before: older files read it as null
    table.append(pa.table({"id": [4], "dt": ["b"], "note": [7]}), merge_schema=True, fill_missing_columns=True)

    expected = _rows(table.to_arrow())
    assert [(r["id"], r["region"], r["total"], r["note"]) for r in expected] == [
        (1, None, 1.5, None), (2, None, 2.5, None), (3, "eu", 3.5, None), (4, None, None, 7),
    ]  # fmt: skip
    assert _rows(pp.read("t")) == expected
    for snapshot_id in (1, 2, 3):
        assert _rows(pp.read("t", snapshot_id=snapshot_id)) == _rows(table.to_arrow(snapshot_id=snapshot_id))

    pp.append("t", pa.table({"id": [5], "region": ["us"], "total": [5.0], "price": [decimal.Decimal("5.00")],
                             "dt": ["a"], "note": [9]}, schema=table.arrow_schema))  # fmt: skip
    assert _rows(Table.open(pp.path("t")).to_arrow()) == _rows(pp.read("t"))
    assert [r["id"] for r in _rows(pp.read("t"))] == [1, 2, 3, 4, 5]


def test_tablefmt_reads_and_appends_to_a_table_pypaimon_evolved(pp: Paimon) -> None:
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    pp.create_table("p", BASE, ["dt"])
    pp.append("p", _base_rows([1, 2], "a"))
    _alter(pp, "p", [SchemaChange.add_column("region", AtomicType("STRING"))])
    _alter(pp, "p", [SchemaChange.rename_column("amount", "total")])
    _alter(pp, "p", [SchemaChange.update_column_type("id", AtomicType("BIGINT"))])
    _alter(pp, "p", [SchemaChange.update_column_type("total", AtomicType("DOUBLE"))])
    _alter(pp, "p", [SchemaChange.drop_column("note")])
    evolved = Table.open(pp.path("p"))
    assert [(f.id, f.name, str(f.type)) for f in evolved.schema.fields] == [
        (0, "id", "BIGINT"), (1, "total", "DOUBLE"), (2, "price", "DECIMAL(10, 2)"), (4, "dt", "STRING"),
        (5, "region", "STRING"),
    ]  # fmt: skip
    pp.append("p", pa.table({"id": [3], "total": [3.5], "price": [decimal.Decimal("3.25")], "dt": ["b"],
                             "region": ["eu"]}, schema=evolved.arrow_schema))  # fmt: skip
    evolved = Table.open(pp.path("p"))
    assert _rows(evolved.to_arrow()) == _rows(pp.read("p"))
    assert [(r["id"], r["total"], r["region"]) for r in _rows(evolved.to_arrow())] == [
        (1, 1.5, None), (2, 2.5, None), (3, 3.5, "eu"),
    ]  # fmt: skip
    for snapshot_id in (1, 2):
        assert _rows(evolved.to_arrow(snapshot_id=snapshot_id)) == _rows(pp.read("p", snapshot_id=snapshot_id))

    evolved.append(pa.table({"id": [4], "total": [4.0], "dt": ["a"], "score": pa.array([1], pa.int16())}),
                   merge_schema=True, fill_missing_columns=True)  # fmt: skip
    with evolved.update_schema() as update:
        update.update_column("score", type="INT")
    assert evolved.schema.highest_field_id == 6 and evolved.schema.field("score").id == 6
    assert _rows(pp.read("p")) == _rows(evolved.to_arrow())
    assert [r["score"] for r in _rows(pp.read("p"))] == [None, None, None, 1]
