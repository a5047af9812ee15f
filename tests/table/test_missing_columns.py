"""Data lacking table columns is refused before anything is written, unless the caller opts in to nulls.

A missing partition key is never filled (its rows would all land in ``__DEFAULT_PARTITION__``), nor is a NOT NULL
column; ``fill_missing_columns=True`` (CLI ``--fill-missing-columns``) writes nulls into missing nullable columns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.tables import files_under

from tableformat import Table, ValidationError
from tableformat.cli.main import cli

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("score", pa.float64()), ("dt", pa.string())]
)
COLUMNS = "['id', 'name', 'score', 'dt']"
PARTITION_KEY_REASON = (
    "partition key(s) ['dt'] must be present (rows without them would all land in partition __DEFAULT_PARTITION__)"
)
FILL_HINT = "to write nulls into the missing nullable column(s), pass fill_missing_columns=True"
"""In Python's words; the CLI names its flag instead (CLI_FILL_HINT)."""
CLI_FILL_HINT = "to write nulls into the missing nullable column(s), pass --fill-missing-columns"


@pytest.fixture
def table(tmp_path: Path) -> Table:
    created = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    created.append(pa.table({"id": [1], "name": ["a"], "score": [0.5], "dt": ["d1"]}, schema=SCHEMA))
    return created


def writes(table: Table) -> dict[str, Callable[..., Any]]:
    return {
        "append": table.append,
        "overwrite": table.overwrite,
        "dynamic overwrite": lambda data, **kw: table.overwrite(data, dynamic=True, **kw),
        "static overwrite": lambda data, **kw: table.overwrite(data, {"dt": "d1"}, **kw),
        "write_files": table.write_files,
    }


@pytest.mark.parametrize("how", ["append", "overwrite", "dynamic overwrite", "static overwrite", "write_files"])
@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            pa.table({"id": [2], "name": ["b"], "score": [1.0]}),
            f"data lacks column(s) ['dt'] of the table {COLUMNS}; {PARTITION_KEY_REASON}",
        ),
        (
            pa.table({"id": [2]}),
            f"data lacks column(s) ['name', 'score', 'dt'] of the table {COLUMNS}; {PARTITION_KEY_REASON}",
        ),
        (
            pa.table({"name": ["b"], "score": [1.0], "dt": ["d1"]}),
            f"data lacks column(s) ['id'] of the table {COLUMNS}; NOT NULL column(s) ['id'] must be present",
        ),
        (
            pa.table({"id": [2], "dt": ["d1"]}),
            f"data lacks column(s) ['name', 'score'] of the table {COLUMNS}; {FILL_HINT}",
        ),
    ],
)
def test_missing_columns_are_refused_and_nothing_is_written(
    table: Table, how: str, data: pa.Table, message: str
) -> None:
    before = files_under(table.location)
    with pytest.raises(ValidationError) as raised:
        writes(table)[how](data)
    assert str(raised.value) == message
    assert files_under(table.location) == before
    assert [s.id for s in table.snapshots()] == [1]


@pytest.mark.parametrize("how", ["append", "overwrite", "write_files"])
def test_opt_in_never_fills_a_partition_key_or_a_not_null_column(table: Table, how: str) -> None:
    before = files_under(table.location)
    with pytest.raises(ValidationError) as raised:
        writes(table)[how](pa.table({"name": ["b"]}), fill_missing_columns=True)
    assert str(raised.value) == (
        f"data lacks column(s) ['id', 'score', 'dt'] of the table {COLUMNS}; {PARTITION_KEY_REASON}; "
        "NOT NULL column(s) ['id'] must be present"
    )
    assert files_under(table.location) == before


def test_opt_in_fills_nullable_columns_with_nulls(table: Table) -> None:
    snapshot = table.append(pa.table({"id": [2], "dt": ["d2"]}), fill_missing_columns=True)
    assert snapshot is not None and snapshot.id == 2
    snapshot = table.overwrite(pa.table({"id": [3], "dt": ["d1"]}), {"dt": "d1"}, fill_missing_columns=True)
    assert snapshot is not None and snapshot.id == 3
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "name": None, "score": None, "dt": "d2"},
        {"id": 3, "name": None, "score": None, "dt": "d1"},
    ]
    assert {f.partition["dt"] for f in table.files()} == {"d1", "d2"}


def test_cli_write_refuses_a_file_without_the_partition_key(table: Table, tmp_path: Path) -> None:
    source = tmp_path / "no-dt.parquet"
    pq.write_table(pa.table({"id": [2], "name": ["b"], "score": [1.0]}), source)
    before = files_under(table.location)
    for extra in ([], ["--fill-missing-columns"], ["--overwrite"], ["--overwrite", "--dynamic"]):
        result = CliRunner().invoke(cli, ["write", table.location, str(source), *extra])
        assert result.exit_code == 1, result.output
        assert (result.stdout, result.stderr) == (
            "",
            f"error: data lacks column(s) ['dt'] of the table {COLUMNS}; {PARTITION_KEY_REASON}\n",
        )
    assert files_under(table.location) == before
    assert not any("__DEFAULT_PARTITION__" in path for path in files_under(table.location))


def test_cli_write_fills_nullable_columns_only_when_asked(table: Table, tmp_path: Path) -> None:
    source = tmp_path / "id-dt.parquet"
    pq.write_table(pa.table({"id": [2], "dt": ["d2"]}), source)
    before = files_under(table.location)
    result = CliRunner().invoke(cli, ["write", table.location, str(source)])
    assert result.exit_code == 2  # a flag is missing: a usage error, nothing written
    assert result.stderr == f"error: data lacks column(s) ['name', 'score'] of the table {COLUMNS}; {CLI_FILL_HINT}\n"
    assert files_under(table.location) == before
    result = CliRunner().invoke(cli, ["write", table.location, str(source), "--fill-missing-columns"])
    assert (result.exit_code, result.stdout) == (0, "committed snapshot 2 (APPEND, 1 rows)\n")
    assert Table.open(table.location).to_arrow(partition_filter={"dt": "d2"}).to_pylist() == [
        {"id": 2, "name": None, "score": None, "dt": "d2"}
    ]
