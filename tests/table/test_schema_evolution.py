"""Schema evolution through ``table.update_schema()`` and ``merge_schema=True``: the schema files written (field
ids, ``highestFieldId``, as Paimon writes them), Paimon's rules, reads of older files after each change, time
travel, maintenance across schema versions, and a change that loses the race for the next schema id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.faults import InterleavingFileIO, faulty_context

from tableformat.errors import SchemaChangeError
from tableformat.model.sql_types import parse_sql_type, widening_refusal
from tableformat.model.types import DataType
from tableformat.table import Table

SCHEMA = pa.schema([("id", pa.int32()), ("amount", pa.float32()), ("dt", pa.string())])
DAY_MS = 86_400_000


def make(tmp_path: Path, options: dict[str, str] | None = None, **kwargs: Any) -> Table:
    table = Table.create(str(tmp_path / "t"), SCHEMA, ["dt"], options)
    table.append(rows([1, 2], [1.5, 2.5], ["a", "b"]))
    return table


def rows(ids: list[int], amounts: list[float], days: list[str]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int32()), "amount": pa.array(amounts, pa.float32()), "dt": days}, schema=SCHEMA
    )


def schema_doc(table: Table, schema_id: int) -> dict[str, Any]:
    return json.loads((Path(table.location) / "schema" / f"schema-{schema_id}").read_text())


def schema_files(table: Table) -> list[str]:
    return sorted(p.name for p in (Path(table.location) / "schema").iterdir())


def sorted_rows(table: Table, **kwargs: Any) -> list[dict[str, Any]]:
    return sorted(table.to_arrow(**kwargs).to_pylist(), key=lambda r: r["id"])


def test_one_block_is_one_schema_version_with_paimons_field_ids(tmp_path: Path) -> None:
    table = make(tmp_path)
    with table.update_schema() as update:
        update.add_column("region", "VARCHAR(8)", after="id", comment="where")
        update.rename_column("amount", "total")
        update.update_column("total", type="DOUBLE")
        update.update_column("id", type="BIGINT")
        update.add_column("note", pa.string())
    assert update.result is not None and update.result.changed
    assert schema_files(table) == ["schema-0", "schema-1"]
    doc = schema_doc(table, 1)
    assert doc["fields"] == [
        {"id": 0, "name": "id", "type": "BIGINT"},
        {"id": 3, "name": "region", "type": "VARCHAR(8)", "description": "where"},
        {"id": 1, "name": "total", "type": "DOUBLE"},
        {"id": 2, "name": "dt", "type": "STRING"},
        {"id": 4, "name": "note", "type": "STRING"},
    ]
    assert (doc["id"], doc["highestFieldId"], doc["partitionKeys"]) == (1, 4, ["dt"])
    assert table.schema.id == 1  # the table object sees its own change
    assert sorted_rows(table) == [
        {"id": 1, "region": None, "total": 1.5, "dt": "a", "note": None},
        {"id": 2, "region": None, "total": 2.5, "dt": "b", "note": None},
    ]
    assert table.arrow_schema.field("id").type == pa.int64()


def test_dropped_id_is_never_reused_and_a_re_added_name_reads_null_from_older_files(tmp_path: Path) -> None:
    table = make(tmp_path)
    with table.update_schema() as update:
        update.drop_column("amount")
    with table.update_schema() as update:
        update.add_column("amount", "DOUBLE")
    table.append(pa.table({"id": pa.array([3], pa.int32()), "dt": ["a"], "amount": [9.0]}))
    assert [f["id"] for f in schema_doc(table, 2)["fields"]] == [0, 2, 3]
    assert schema_doc(table, 2)["highestFieldId"] == 3
    assert sorted_rows(table) == [
        {"id": 1, "dt": "a", "amount": None},
        {"id": 2, "dt": "b", "amount": None},
        {"id": 3, "dt": "a", "amount": 9.0},
    ]
    assert sorted_rows(table, snapshot_id=1) == [  # time travel reads the snapshot's own schema
        {"id": 1, "amount": 1.5, "dt": "a"},
        {"id": 2, "amount": 2.5, "dt": "b"},
    ]


def test_a_block_that_raises_writes_nothing(tmp_path: Path) -> None:
    table = make(tmp_path)
    with pytest.raises(RuntimeError), table.update_schema() as update:
        update.add_column("x", "INT")
        raise RuntimeError("stop")
    with table.update_schema():
        pass
    assert schema_files(table) == ["schema-0"]


REFUSALS = [
    (lambda u: u.drop_column("dt"), "cannot drop partition column 'dt'"),
    (lambda u: u.rename_column("dt", "day"), "cannot rename partition column 'dt'"),
    (lambda u: u.update_column("dt", type="VARCHAR(3)"), "cannot change the type of partition column 'dt'"),
    (lambda u: u.update_column("id", type="SMALLINT"), "cannot change type from INT to SMALLINT"),
    (lambda u: u.update_column("amount", type="INT"), "cannot change type from FLOAT to INT"),
    (lambda u: u.update_column("id", type="STRING"), "cannot change type from INT to STRING"),
    (lambda u: u.update_column("id", type="DECIMAL(9, 0)"), "cannot change type from INT to DECIMAL(9, 0)"),
    (lambda u: u.update_column("id", nullable=False), "from nullable to NOT NULL"),
    (lambda u: u.update_column("id", type="BIGINT NOT NULL"), "from nullable to NOT NULL"),
    (lambda u: u.add_column("x", "INT NOT NULL"), "an added column must be nullable"),
    (lambda u: u.add_column("id", "INT"), "column 'id' already exists"),
    (lambda u: u.rename_column("id", "amount"), "column 'amount' already exists"),
    (lambda u: u.add_column("x", "INT", after="nope"), "column 'nope' does not exist"),
    (lambda u: u.drop_column("nope"), "column 'nope' does not exist"),
    (lambda u: u.rename_column("nope", "x"), "column 'nope' does not exist"),
    (lambda u: u.update_column("nope", type="BIGINT"), "column 'nope' does not exist"),
    (lambda u: u.add_column("x", "INTEGR"), "unknown column type 'INTEGR'"),
    (lambda u: u.add_column("x", "DECIMAL(40, 2)"), "DECIMAL precision must be 1 to 38"),
    (lambda u: u.add_column("x", "ARRAY<INT>"), "ARRAY is not supported, tablefmt stores atomic types only"),
    (lambda u: u.add_column("x", "ROW<a INT>"), "ROW is not supported"),
    (lambda u: u.add_column("", "INT"), "a column name must be a non-empty string"),
    (lambda u: u.update_column("id"), "needs a type, nullable or comment"),
]


@pytest.mark.parametrize(("make_change", "message"), REFUSALS)
def test_paimons_rules_refuse_in_one_line_and_write_nothing(tmp_path: Path, make_change: Any, message: str) -> None:
    table = make(tmp_path)
    with pytest.raises(SchemaChangeError) as caught, table.update_schema() as update:
        make_change(update)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert schema_files(table) == ["schema-0"]


def test_names_are_case_sensitive_as_in_paimons_filesystem_catalog(tmp_path: Path) -> None:
    table = make(tmp_path)
    with table.update_schema() as update:
        update.add_column("ID", "STRING")
    assert [f.name for f in table.schema.fields] == ["id", "amount", "dt", "ID"]


def test_keys_the_ttl_field_and_bucket_key_are_protected(tmp_path: Path) -> None:
    options = {"record-level.time-field": "id", "record-level.expire-time": "1 d"}
    table = make(tmp_path, options)
    for change, message in [
        (lambda u: u.drop_column("id"), "the option record-level.time-field names it"),
        (lambda u: u.rename_column("id", "t"), "the option record-level.time-field names it"),
        (lambda u: u.update_column("id", type="BIGINT"), "the option record-level.time-field names it"),
    ]:
        with pytest.raises(SchemaChangeError, match=message), table.update_schema() as update:
            change(update)
    with table.update_schema() as update:  # the TTL field may become nullable: no value changes
        update.update_column("amount", comment="euros")
    assert schema_files(table) == ["schema-0", "schema-1"]


def test_not_null_becomes_nullable_and_an_empty_change_writes_nothing(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    table = Table.create(str(tmp_path / "t"), schema)
    table.append(pa.table({"id": [1], "v": ["x"]}, schema=schema))
    with table.update_schema() as update:
        update.update_column("id", nullable=True)
    with table.update_schema() as update:
        update.update_column("id", nullable=True)  # already nullable: no new schema
    assert update.result is not None and not update.result.changed
    assert schema_doc(table, 1)["fields"][0] == {"id": 0, "name": "id", "type": "BIGINT"}
    assert schema_files(table) == ["schema-0", "schema-1"]
    table.append(pa.table({"id": [None], "v": ["y"]}))
    assert table.to_arrow().column("id").to_pylist() == [1, None]


def test_add_column_before_partition_places_it_before_the_first_partition_column(tmp_path: Path) -> None:
    table = make(tmp_path, {"add-column-before-partition": "true"})
    with table.update_schema() as update:
        update.add_column("x", "INT")
    assert [f["name"] for f in schema_doc(table, 1)["fields"]] == ["id", "amount", "x", "dt"]


def test_merge_schema_adds_new_columns_and_widens_before_the_data_in_one_call(tmp_path: Path) -> None:
    table = make(tmp_path)
    wider = pa.table({"id": pa.array([3], pa.int64()), "amount": [3.5], "dt": ["c"], "extra": ["e"]})
    with pytest.raises(Exception, match="that the table does not have"):
        table.append(wider)
    snapshot = table.append(wider, merge_schema=True)
    assert snapshot is not None and snapshot.schema_id == 1
    assert schema_doc(table, 1)["fields"] == [
        {"id": 0, "name": "id", "type": "BIGINT"},
        {"id": 1, "name": "amount", "type": "DOUBLE"},
        {"id": 2, "name": "dt", "type": "STRING"},
        {"id": 3, "name": "extra", "type": "STRING"},
    ]
    assert sorted_rows(table) == [
        {"id": 1, "amount": 1.5, "dt": "a", "extra": None},
        {"id": 2, "amount": 2.5, "dt": "b", "extra": None},
        {"id": 3, "amount": 3.5, "dt": "c", "extra": "e"},
    ]
    table.append(wider, merge_schema=True)  # fits now: no further schema
    narrower = pa.table({"id": pa.array([4], pa.int8()), "dt": ["c"], "other": pa.array([1], pa.int16())})
    table.overwrite(narrower, {"dt": "c"}, merge_schema=True, fill_missing_columns=True)
    assert schema_files(table) == ["schema-0", "schema-1", "schema-2"]
    assert [f["type"] for f in schema_doc(table, 2)["fields"]] == ["BIGINT", "DOUBLE", "STRING", "STRING", "SMALLINT"]
    assert [r["id"] for r in sorted_rows(table)] == [1, 2, 4]


def test_maintenance_rewrites_files_of_every_schema_version(tmp_path: Path) -> None:
    table = make(tmp_path, {"compaction.min.file-num": "2", "write-only": "true"})
    with table.update_schema() as update:
        update.rename_column("amount", "total")
        update.add_column("note", "STRING")
    table.append(pa.table({"id": pa.array([3], pa.int32()), "total": [3.0], "dt": ["a"], "note": ["n"]}))
    result = table.maintenance.compact()
    assert len(result.compacted_files) == 2 and len(result.written_files) == 1
    assert {f.schema_id for f in table.files()} == {0, 1}  # partition b kept its schema-0 file
    assert sorted_rows(table) == [
        {"id": 1, "total": 1.5, "dt": "a", "note": None},
        {"id": 2, "total": 2.5, "dt": "b", "note": None},
        {"id": 3, "total": 3.0, "dt": "a", "note": "n"},
    ]


NOW_MS = 1_717_200_000_000  # 2024-06-01T00:00:00Z
TIMED = pa.schema([("ts", pa.int64()), ("v", pa.int32()), ("dt", pa.string())])


def test_partition_expiry_and_record_ttl_across_schema_versions(tmp_path: Path) -> None:
    options = {"record-level.time-field": "ts", "record-level.expire-time": "1 d", "write-only": "true"}
    table = Table.create(str(tmp_path / "t"), TIMED, ["dt"], options)
    old, fresh = NOW_MS - 2 * DAY_MS, NOW_MS - 1000
    table.append(pa.table({"ts": [old, fresh], "v": pa.array([1, 2], pa.int32()), "dt": ["2024-01-01"] * 2}))
    table.append(pa.table({"ts": [old, fresh], "v": pa.array([3, 4], pa.int32()), "dt": ["2024-05-31"] * 2}))
    with table.update_schema() as update:
        update.rename_column("v", "value")
        update.update_column("value", type="BIGINT")
        update.add_column("note", "STRING")
    table.append(pa.table({"ts": [fresh], "value": [5], "dt": ["2024-05-31"], "note": ["n"]}))
    expired = table.maintenance.expire_records(now_ms=NOW_MS)
    assert expired.expired_rows == 2 and len(expired.rewritten_files) == 2
    partitions = table.maintenance.expire_partitions(expiration_time="30 d", now_ms=NOW_MS)
    assert partitions.expired_partitions == ({"dt": "2024-01-01"},)
    assert sorted(table.to_arrow(include_expired=True).to_pylist(), key=lambda r: r["value"]) == [
        {"ts": fresh, "value": 4, "dt": "2024-05-31", "note": None},
        {"ts": fresh, "value": 5, "dt": "2024-05-31", "note": "n"},
    ]
    assert {f.schema_id for f in table.files()} == {1}  # the rewrite wrote its file with the latest schema


def test_a_lost_race_applies_the_changes_again_to_the_newer_schema(tmp_path: Path) -> None:
    table = make(tmp_path)
    other = Table.open(table.location)

    def concurrent_change() -> None:
        with other.update_schema() as update:
            update.add_column("b", "INT")

    racing = Table(faulty_context(table.context, InterleavingFileIO(table.context.io, 1, concurrent_change)))
    with racing.update_schema() as update:
        update.add_column("a", "STRING")
        update.rename_column("amount", "total")
    assert update.result is not None and (update.result.previous.id, update.result.schema.id) == (1, 2)
    assert schema_files(table) == ["schema-0", "schema-1", "schema-2"]
    assert [(f["id"], f["name"]) for f in schema_doc(table, 2)["fields"]] == [
        (0, "id"), (1, "total"), (2, "dt"), (3, "b"), (4, "a"),
    ]  # fmt: skip


def test_a_lost_race_whose_change_no_longer_fits_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path)
    other = Table.open(table.location)

    def concurrent_change() -> None:
        with other.update_schema() as update:
            update.drop_column("amount")

    racing = Table(faulty_context(table.context, InterleavingFileIO(table.context.io, 1, concurrent_change)))
    with pytest.raises(SchemaChangeError, match="column 'amount' does not exist"), racing.update_schema() as update:
        update.rename_column("amount", "total")
    assert schema_files(table) == ["schema-0", "schema-1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bigint", "BIGINT"),
        ("Integer not null", "INT NOT NULL"),
        ("DECIMAL(10,2)", "DECIMAL(10, 2)"),
        ("decimal", "DECIMAL(10, 0)"),
        ("TIMESTAMP", "TIMESTAMP(6)"),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(3)"),
        ("VARCHAR(2147483647)", "STRING"),
        ("string NULL", "STRING"),
        ("DOUBLE PRECISION", "DOUBLE"),
        ("BYTES", "BYTES"),
    ],
)
def test_types_parse_in_paimons_sql_spelling(text: str, expected: str) -> None:
    assert str(parse_sql_type(text)) == expected


@pytest.mark.parametrize(
    ("source", "target", "allowed"),
    [
        ("TINYINT", "BIGINT", True),
        ("INT", "BIGINT", True),
        ("BIGINT", "INT", False),
        ("FLOAT", "DOUBLE", True),
        ("INT", "DOUBLE", True),
        ("BIGINT", "DOUBLE", False),
        ("INT", "FLOAT", False),
        ("DECIMAL(10, 2)", "DECIMAL(12, 2)", True),
        ("DECIMAL(10, 2)", "DECIMAL(12, 4)", True),
        ("DECIMAL(10, 2)", "DECIMAL(11, 4)", False),
        ("DECIMAL(10, 2)", "DECIMAL(10, 1)", False),
        ("INT", "DECIMAL(10, 0)", True),
        ("BIGINT", "DECIMAL(20, 2)", False),
        ("VARCHAR(5)", "STRING", True),
        ("VARCHAR(5)", "VARCHAR(3)", False),
        ("CHAR(3)", "VARCHAR(3)", True),
        ("BINARY(4)", "BYTES", True),
        ("TIMESTAMP(3)", "TIMESTAMP(6)", True),
        ("TIMESTAMP(6)", "TIMESTAMP(3)", False),
        ("TIMESTAMP(6)", "TIMESTAMP_LTZ(6)", False),
        ("DATE", "TIMESTAMP(3)", False),
        ("STRING", "INT", False),
        ("DOUBLE", "DECIMAL(38, 10)", False),
    ],
)
def test_only_widening_type_changes(source: str, target: str, allowed: bool) -> None:
    refusal = widening_refusal("c", DataType.parse(source), DataType.parse(target))
    assert (refusal is None) is allowed, refusal
