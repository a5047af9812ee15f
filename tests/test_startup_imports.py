"""What a fresh process imports (cron starts one per table; docs/benchmarks.md, "Start-up"): ``import tableformat``
and ``tablefmt --help`` load no heavy library, a metadata command no pandas, an idle maintain pass no planner. Each
case runs in its own interpreter and reads its ``sys.modules``; nothing here is timed (bench/startup.py times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tableformat.arrow_columns import int64_column, string_column
from tableformat.cli.inspect_commands import _rows
from tableformat.table import Table

HEAVY = ("pyarrow", "pandas", "numpy", "fsspec", "s3fs", "sqlglot", "matplotlib", "rich")
WATCHED = (
    *HEAVY,
    "tableformat.table",
    "tableformat.cleanup.registry",
    "tableformat.cleanup.snapshots.execute",
    "tableformat.cleanup.orphans.plan",
    "tableformat.cleanup.rewrite.rewriter",
    "tableformat.commit.committer",
)
_REPORT = "print('\\nLOADED ' + json.dumps([m for m in {watched!r} if m in sys.modules]))"


def _loaded(statement: str) -> tuple[list[str], str]:
    """The watched modules loaded after ``statement`` ran in a fresh interpreter, and what it printed."""
    code = f"import json, sys\n{statement}\nsys.stdout.flush()\n{_REPORT.format(watched=WATCHED)}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    output, _, loaded = done.stdout.rpartition("\nLOADED ")
    return json.loads(loaded), output


def _tablefmt(*args: str) -> tuple[list[str], str]:
    """``tablefmt ARGS`` through the console script's entry point, in a fresh interpreter."""
    statement = (
        f"sys.argv = ['tablefmt', *{list(args)!r}]\n"
        "from tableformat.cli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code"
    )
    return _loaded(statement)


@pytest.fixture
def table(tmp_path: Path) -> Table:
    created = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("part", pa.string())]), ["part"])
    created.append(pa.table({"id": [1, 2], "part": ["a", "b"]}))
    created.append(pa.table({"id": [3], "part": ["a"]}))
    return created


def test_import_tableformat_loads_no_heavy_library_and_keeps_its_public_names() -> None:
    loaded, _ = _loaded("import tableformat")
    assert loaded == []
    loaded, output = _loaded(
        "from tableformat import Table, Snapshot, TableFormatError\n"
        "import tableformat\n"
        "print(Table.__module__, Snapshot.__module__, 'Table' in dir(tableformat))"
    )
    assert output.split() == ["tableformat.table", "tableformat.model.snapshot", "True"]
    assert "pyarrow" not in loaded  # opening the table API still needs no pyarrow


def test_tablefmt_help_loads_no_heavy_library_and_no_command() -> None:
    loaded, output = _tablefmt("--help")
    assert loaded == []
    assert "snapshots" in output and "maintain" in output


def test_tablefmt_snapshots_does_not_load_pandas(table: Table) -> None:
    loaded, output = _tablefmt("snapshots", table.location)
    assert "pandas" not in loaded
    assert [line.split()[:2] for line in output.splitlines()[1:]] == [["1", "APPEND"], ["2", "APPEND"]]
    loaded, output = _tablefmt("snapshots", table.location, "--json")
    assert "pandas" not in loaded
    assert [s["total_record_count"] for s in json.loads(output)] == [2, 3]


def test_tablefmt_options_does_not_load_pyarrow(table: Table) -> None:
    loaded, output = _tablefmt("options", table.location)
    assert "pyarrow" not in loaded and "pandas" not in loaded
    assert "file.format" in output


def test_an_idle_maintain_pass_loads_no_planner_no_committer_and_no_pyarrow(table: Table) -> None:
    _tablefmt("maintain", "--once", table.location)  # the first pass runs what is due
    loaded, output = _tablefmt("maintain", "--once", table.location)
    assert "nothing due" in output
    assert "tableformat.cleanup.registry" in loaded
    assert [m for m in loaded if m != "tableformat.cleanup.registry"] == []


@pytest.mark.parametrize(
    "values", [[], [0], [1, None, 3, -(2**63), 2**63 - 1], [None], [None] * 9 + [5], list(range(17))]
)
def test_int64_column_equals_pyarrow_array(values: list[int | None]) -> None:
    built = int64_column(values)
    built.validate(full=True)
    assert built.equals(pa.array(values, pa.int64()))
    assert built.null_count == values.count(None)


@pytest.mark.parametrize("values", [[], [""], ["a", None, "é€", ""], [None] * 10 + ["x"], ["snapshot-1"] * 3])
def test_string_column_equals_pyarrow_array(values: list[str | None]) -> None:
    built = string_column(values)
    built.validate(full=True)
    assert built.equals(pa.array(values, pa.string()))


def test_inspection_rows_equal_to_pylist(table: Table) -> None:
    table.create_tag("kept", 1)  # no expire time: a null in a UTC timestamp column
    for inspected in (table.inspect.snapshots(), table.inspect.tags(), table.inspect.files()):
        rows = _rows(inspected)
        expected = inspected.to_pylist()
        assert rows == expected
        assert [list(row) for row in rows] == [list(row) for row in expected]
        assert [repr(row) for row in rows] == [repr(row) for row in expected]


def test_a_lazy_package_name_resolves_and_an_unknown_one_is_an_attribute_error() -> None:
    import tableformat.cleanup.snapshots as snapshots
    from tableformat.cleanup.registry import operation

    assert snapshots.SNAPSHOT_EXPIRATION is operation("expire")
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = snapshots.no_such_name
