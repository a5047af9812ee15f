"""Every CLI error is one ``error: ...`` line on stderr: exit 2 for usage errors, 1 for failures, no traceback.

Through the group (``tablefmt SUBCOMMAND``), through each command object alone (as cron wrappers and the other
CLI tests call them), and through the installed ``tablefmt`` entry point in a real subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from support.tables import files_under

from tableformat import Table
from tableformat.cli.common import OneLineErrorCommand
from tableformat.cli.expire_command import expire
from tableformat.cli.main import cli
from tableformat.cli.orphans_command import check, remove_orphans

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
DURATION_HELP = "expected a non-negative number and a unit, e.g. 30s, 15 min, 1 h, 1h30m, 1.5h, 7d"


@pytest.fixture
def table(tmp_path: Path) -> str:
    """A table with three snapshots (write-only: commits run no expiration)."""
    path = str(tmp_path / "t")
    created = Table.create(path, SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    for i in range(3):
        created.append(pa.table({"id": [i], "dt": ["a"]}, schema=SCHEMA))
    pq.write_table(pa.table({"id": [9], "dt": ["b"]}, schema=SCHEMA), tmp_path / "in.parquet")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    return path


def error_line(result: Result) -> str:
    """The one stderr line of a failed run (nothing on stdout, no traceback)."""
    assert result.stdout == "", result.stdout
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


USAGE_ERRORS: list[tuple[list[str], str]] = [
    (
        ["expire", "{table}", "--time-retained", "soon"],
        f"error: Invalid value for '--time-retained': invalid duration 'soon': {DURATION_HELP}",
    ),
    (
        ["expire", "{table}", "--time-retained", "-1h"],
        "error: Invalid value for '--time-retained': must not be negative, got '-1h'",
    ),
    (
        ["expire", "{table}", "--retain-max", "1"],
        "error: --retain-max 1 is below the table's snapshot.num-retained.min (10, the default); "
        "also pass --retain-min 1 or lower",
    ),
    (
        ["expire", "{table}", "--retain-min", "5", "--retain-max", "2"],
        "error: snapshot.num-retained.max (2) must be >= snapshot.num-retained.min (5)",
    ),
    (
        ["expire", "{table}", "--limit", "0"],
        "error: Invalid value for '--limit': 0 is not in the range 1<=x<=2147483647.",
    ),
    (["expire", "{table}", "--bogus"], "error: No such option '--bogus'."),
    (
        ["remove-orphans", "{table}", "--older-than", "1 fortnight"],
        "error: Invalid value for '--older-than': invalid duration '1 fortnight': unknown unit 'fortnight' "
        "(use ms, s, m/min, h, d)",
    ),
    (
        ["remove-orphans", "{table}", "--engine", "dask"],
        "error: Invalid value for '--engine': 'dask' is not one of 'local', 'spark'.",
    ),
    (
        ["write", "{table}", "{tmp}/missing.parquet"],
        "error: Invalid value for 'FILE': File '{tmp}/missing.parquet' does not exist.",
    ),
    (
        ["write", "{table}", "{tmp}/in.parquet", "--partition", "dt=a"],
        "error: --partition and --dynamic need --overwrite",
    ),
    (
        ["create", "{tmp}/new", "--schema-from", "{tmp}/missing.parquet"],
        "error: Invalid value for '--schema-from': File '{tmp}/missing.parquet' does not exist.",
    ),
    (
        ["create", "{tmp}/new", "--schema-from", "{tmp}/in.parquet", "--option", "novalue"],
        "error: Invalid value for '--option': expected KEY=VALUE, got 'novalue'",
    ),
    (
        ["create", "{tmp}/new", "--schema-from", "{tmp}/in.parquet", "--option", "record-level.expire-time=10d"],
        "error: record-level.expire-time is set but record-level.time-field is not: set the option "
        "record-level.time-field to the column whose time expires a row",
    ),
    (
        ["create", "{tmp}/new", "--schema-from", "{tmp}/in.parquet", "--partition-keys", "day"],
        "error: partition keys ['day'] must be distinct columns of the schema ['id', 'dt']",
    ),
    (
        ["snapshots", "{table}", "--storage-option", "novalue"],
        "error: Invalid value for '--storage-option': expected KEY=VALUE, got 'novalue'",
    ),
    (["snapshots"], "error: Missing argument 'TABLE'."),
    (["files", "{table}", "--snapshot", "abc"], "error: Invalid value for '--snapshot': 'abc' is not a valid integer."),
    (["drop-partition", "{table}"], "error: Missing argument 'K=V[,K=V] ...'."),
    (["tag", "create", "{table}"], "error: Missing argument 'NAME'."),
    (["files", "{table}", "--snapshot", "2", "--tag", "v1"], "error: give --snapshot 2 or --tag v1, not both"),
    (["partitions", "{table}", "--snapshot", "2", "--tag", "v1"], "error: give --snapshot 2 or --tag v1, not both"),
    (
        ["remove-orphans", "{table}", "--older-than", "10min"],
        "error: --older-than 10 min is under the 1 h minimum: files of writers still running would be deleted; "
        "pass --force if no writer is running",
    ),
    (["tag", "rename", "{table}"], "error: No such command 'rename'. Did you mean 'create'?"),
    (
        ["check", "{table}", "--parallelism", "0"],
        "error: Invalid value for '--parallelism': 0 is not in the range 1<=x<=2147483647.",
    ),
    (["demo", "{tmp}/full"], "error: {tmp}/full is not empty; give a new or empty directory"),
    (["vacuum", "{table}"], "error: No such command 'vacuum'."),
    (["--bogus"], "error: No such option '--bogus'. Did you mean '--verbose'?"),
]

FAILURES: list[tuple[list[str], str]] = [
    (["snapshots", "{tmp}/none"], "error: no table at {tmp}/none (no schema/schema-0)"),
    (["expire", "{tmp}/none", "--dry-run"], "error: no table at {tmp}/none (no schema/schema-0)"),
    (["check", "{tmp}/none"], "error: no table at {tmp}/none (no schema/schema-0)"),
    (["files", "{table}", "--snapshot", "99"], "error: snapshot 99 does not exist (it may have been expired)"),
    (["tag", "delete", "{table}", "nope"], "error: tag 'nope' does not exist"),
]


def fill(items: list[str], tmp_path: Path, table: str) -> list[str]:
    return [item.format(tmp=tmp_path, table=table) for item in items]


@pytest.mark.parametrize(("argv", "expected"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, table: str, argv: list[str], expected: str) -> None:
    before = files_under(table)
    result = CliRunner().invoke(cli, fill(argv, tmp_path, table))
    assert result.exit_code == 2, result.output
    assert error_line(result) == expected.format(tmp=tmp_path, table=table)
    assert files_under(table) == before
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(("argv", "expected"), FAILURES, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_failures_are_one_line_and_exit_1(tmp_path: Path, table: str, argv: list[str], expected: str) -> None:
    before = files_under(table)
    result = CliRunner().invoke(cli, fill(argv, tmp_path, table))
    assert result.exit_code == 1, result.output
    assert error_line(result) == expected.format(tmp=tmp_path, table=table)
    assert files_under(table) == before


@pytest.mark.parametrize(
    ("command", "argv", "code", "expected"),
    [
        (
            expire,
            ["{table}", "--time-retained", "1.5ms"],
            2,
            "error: Invalid value for '--time-retained': invalid duration '1.5ms': not a whole number of milliseconds",
        ),
        (
            expire,
            ["{table}", "--retain-max", "3"],
            2,
            "error: --retain-max 3 is below the table's "
            "snapshot.num-retained.min (10, the default); also pass --retain-min 3 or lower",
        ),
        (expire, [], 2, "error: Missing argument 'TABLE'."),
        (
            remove_orphans,
            ["{table}", "--older-than", "59min"],
            2,
            "error: --older-than 59 min is under the 1 h "
            "minimum: files of writers still running would be deleted; pass --force if no writer is running",
        ),
        (check, ["{tmp}/none"], 1, "error: no table at {tmp}/none (no schema/schema-0)"),
    ],
)
def test_commands_invoked_alone_also_print_one_line(
    tmp_path: Path, table: str, command: click.Command, argv: list[str], code: int, expected: str
) -> None:
    result = CliRunner().invoke(command, fill(argv, tmp_path, table))
    assert result.exit_code == code, result.output
    assert error_line(result) == expected.format(tmp=tmp_path, table=table)


def test_retain_min_above_the_table_maximum_says_what_to_pass(tmp_path: Path) -> None:
    path = str(tmp_path / "capped")
    Table.create(path, SCHEMA, options={"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "2"})
    result = CliRunner().invoke(cli, ["expire", path, "--retain-min", "8"])
    assert result.exit_code == 2
    assert error_line(result) == (
        "error: --retain-min 8 is above the table's snapshot.num-retained.max (5, set on the table); "
        "also pass --retain-max 8 or higher"
    )
    result = CliRunner().invoke(cli, ["expire", path, "--retain-max", "1"])
    assert error_line(result) == (
        "error: --retain-max 1 is below the table's snapshot.num-retained.min (2, set on the table); "
        "also pass --retain-min 1 or lower"
    )


def test_retain_max_with_retain_min_expires(table: str) -> None:
    result = CliRunner().invoke(cli, ["expire", table, "--retain-max", "1", "--retain-min", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["expired_snapshots"] == 2
    assert [s.id for s in Table.open(table).snapshots()] == [3]


@pytest.mark.parametrize("duration", ["1h30m", "1.5h", "1 h", "30d", "30 d", "1h 30m"])
def test_every_duration_form_is_accepted_by_both_commands(table: str, duration: str) -> None:
    for argv in (
        ["expire", table, "--time-retained", duration, "--dry-run", "--json"],
        ["remove-orphans", table, "--older-than", duration, "--dry-run", "--json"],
    ):
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 0, (argv, result.output)
        assert result.stderr == ""


def test_an_unexpected_exception_is_one_line_too() -> None:
    @click.command(cls=OneLineErrorCommand)
    def broken() -> None:
        raise KeyError("internal")

    result = CliRunner().invoke(broken, [])
    assert result.exit_code == 1
    assert error_line(result) == "error: unexpected KeyError: 'internal' (tablefmt -vv logs the traceback)"


def test_no_arguments_still_shows_the_help() -> None:
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 2 and "Usage: " in result.output and "Commands:" in result.output


# --- the installed entry point, as a shell or cron runs it ------------------------------------------------------------
def tablefmt(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("tablefmt")
    assert script.exists(), f"the tablefmt entry point is not installed next to {sys.executable}"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_entry_point_prints_one_line_with_the_exit_code(tmp_path: Path, table: str) -> None:
    before = files_under(table)
    cases: list[tuple[list[str], int, str]] = [
        (
            ["expire", table, "--retain-max", "1"],
            2,
            "error: --retain-max 1 is below the table's snapshot.num-retained.min (10, the default); "
            "also pass --retain-min 1 or lower",
        ),
        (
            ["expire", table, "--time-retained", "1 fortnight"],
            2,
            "error: Invalid value for '--time-retained': invalid duration '1 fortnight': unknown unit 'fortnight' "
            "(use ms, s, m/min, h, d)",
        ),
        (
            ["write", table, str(tmp_path / "missing.parquet")],
            2,
            f"error: Invalid value for 'FILE': File '{tmp_path / 'missing.parquet'}' does not exist.",
        ),
        (["snapshots", str(tmp_path / "none")], 1, f"error: no table at {tmp_path / 'none'} (no schema/schema-0)"),
    ]
    for argv, code, expected in cases:
        done = tablefmt(*argv)
        assert (done.returncode, done.stdout, done.stderr) == (code, "", expected + "\n"), argv
    assert files_under(table) == before
    done = tablefmt("expire", table, "--time-retained", "1h30m", "--retain-min", "1", "--dry-run", "--json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert doc["dry_run"] is True
