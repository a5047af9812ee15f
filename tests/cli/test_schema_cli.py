"""``tablefmt schema``: the schema with field ids; add-column, rename-column, drop-column, alter-column each write
one schema version; Paimon's refusals, unknown types and unknown columns are one line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([("id", pa.int32()), ("dt", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    Table.create(path, SCHEMA, ["dt"]).append(pa.table({"id": pa.array([1], pa.int32()), "dt": ["a"]}))
    return path


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def schema_files(table: str) -> list[str]:
    return sorted(p.name for p in (Path(table) / "schema").iterdir())


def test_show_lists_columns_with_field_ids(table: str) -> None:
    result = run("schema", table)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "schema-0 (highest field id 1)",
        "field_id  name  type    key            comment",
        "       0  id    INT",
        "       1  dt    STRING  partition key",
    ]


def test_each_change_writes_one_schema_version(table: str) -> None:
    steps = [
        ("add-column", table, "price", "DECIMAL(10,2)", "--after", "id", "--comment", "unit price"),
        ("alter-column", table, "price", "--type", "decimal(12, 2)"),
        ("alter-column", table, "id", "--type", "BIGINT"),
        ("rename-column", table, "price", "cost"),
        ("add-column", table, "tmp", "STRING"),
        ("drop-column", table, "tmp"),
    ]
    for step in steps:
        result = run("schema", *step)
        assert result.exit_code == 0, (step, result.output)
    assert result.stdout == "dropped column 'tmp': wrote schema-6 (was schema-5)\n"
    assert schema_files(table) == [f"schema-{i}" for i in range(7)]
    shown = json.loads(run("schema", table, "--json").stdout)
    assert shown["columns"] == [
        {"field_id": 0, "name": "id", "type": "BIGINT", "nullable": True, "comment": None},
        {"field_id": 2, "name": "cost", "type": "DECIMAL(12, 2)", "nullable": True, "comment": "unit price"},
        {"field_id": 1, "name": "dt", "type": "STRING", "nullable": True, "comment": None},
    ]
    assert (shown["schema_id"], shown["highest_field_id"]) == (6, 3)
    assert Table.open(table).to_arrow().to_pylist() == [{"id": 1, "cost": None, "dt": "a"}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add-column", "{t}", "x", "INTEGR"), "unknown column type 'INTEGR'"),
        (("add-column", "{t}", "x", "ARRAY<INT>"), "ARRAY is not supported, tablefmt stores atomic types only"),
        (("add-column", "{t}", "x", "INT NOT NULL"), "an added column must be nullable"),
        (("add-column", "{t}", "id", "INT"), "column 'id' already exists"),
        (("add-column", "{t}", "x", "INT", "--after", "nope"), "column 'nope' does not exist"),
        (("drop-column", "{t}", "nope"), "column 'nope' does not exist"),
        (("drop-column", "{t}", "dt"), "cannot drop partition column 'dt'"),
        (("rename-column", "{t}", "dt", "day"), "cannot rename partition column 'dt'"),
        (("alter-column", "{t}", "id", "--type", "SMALLINT"), "cannot change type from INT to SMALLINT"),
        (("alter-column", "{t}", "id"), "give --type, --nullable or --comment"),
    ],
)
def test_refusals_are_one_line_with_exit_2_and_write_nothing(table: str, args: tuple[str, ...], message: str) -> None:
    for json_flag in ((), ("--json",)):
        result = run("schema", *(a.format(t=table) for a in args), *json_flag)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("\n") == 1 and message in result.stderr
        if json_flag:
            assert json.loads(result.stdout)["kind"] == "UsageError"
    assert schema_files(table) == ["schema-0"]


def test_a_missing_table_is_a_failure_with_exit_1(tmp_path: Path) -> None:
    result = run("schema", "add-column", str(tmp_path / "none"), "x", "INT")
    assert result.exit_code == 1 and result.stderr.startswith("error: no table at")
