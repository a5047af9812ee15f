"""``tablefmt erase``: exit codes (0 done, 2 for a bad filter or command line, 1 when --verify finds rows), one-line
errors, the JSON document, and --verify's certificate."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.erase_tables import STANDARD_APPENDS, all_rows, events_table

from tableformat.cli.main import cli
from tableformat.table import Table


@pytest.fixture
def events(tmp_path: Path) -> Table:
    return events_table(tmp_path / "events", STANDARD_APPENDS)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--where", "nope = 1"], "error: --where 'nope = 1': unknown column 'nope'; the table has user_id, "),
        (["--where", "user_id = 'x'"], "error: --where \"user_id = 'x'\": 'x' is not a value of column 'user_id'"),
        (["--where", "user_id IN ("], "error: --where 'user_id IN (' is not a SQL boolean expression"),
        ([], "error: erase needs exactly one of --where SQL and --keys-file FILE"),
        (["--where", "user_id = 1", "--keys-file", "k.csv", "--key", "user_id"], "error: erase needs exactly one"),
        (["--keys-file", "missing.csv", "--key", "user_id"], "error: --keys-file missing.csv: no such file"),
        (["--keys-file", "k.csv"], "error: --keys-file k.csv needs --key COL[=FILECOL]"),
        (["--verify", "--purge", "--where", "user_id = 1"], "error: --verify only reads"),
        (["--deadline", "soon", "--where", "user_id = 1"], "error: Invalid value for '--deadline'"),
    ],
)
def test_bad_filters_and_command_lines_exit_2_with_one_line(events: Table, args: list[str], message: str) -> None:
    code, stdout, stderr = _run("erase", events.location, *args)
    assert code == 2, (stdout, stderr)
    assert stderr.startswith(message) and stderr.count("\n") == 1
    assert events.latest_snapshot().id == 5


def test_erase_then_verify_exit_codes_and_documents(events: Table, tmp_path: Path) -> None:
    pq.write_table(pa.table({"uid": [4, 21]}), tmp_path / "keys.parquet")
    keys = ["--keys-file", str(tmp_path / "keys.parquet"), "--key", "user_id=uid"]
    code, stdout, _ = _run("erase", events.location, "--verify", *keys)
    assert code == 1 and stdout.startswith("erase --verify: 3 matching row(s) remain in 5 Parquet file(s)")

    code, stdout, _ = _run("erase", events.location, *keys, "--dry-run", "--json")
    dry = json.loads(stdout)
    assert code == 0 and dry["dry_run"] and dry["erased_rows"] == 3 and dry["rewritten_files"] == 3
    assert events.latest_snapshot().id == 5

    code, stdout, _ = _run("erase", events.location, *keys, "--purge", "--json")
    done = json.loads(stdout)
    assert code == 0 and done["snapshot_id"] == 6 and done["erased_rows"] == 3
    assert done["rewritten_paths"] == dry["rewritten_paths"] and done["purged_snapshots"] == 5
    assert done["pinned_by"] == [] and done["deadline"] is None
    assert {r["user_id"] for r in all_rows(events)} == set(range(40)) - {4, 21}

    code, stdout, stderr = _run("erase", events.location, "--verify", *keys, "--json")
    certificate = json.loads(stdout)
    assert code == 0 and stderr == ""
    assert certificate["matches"] == 0 and certificate["matched"] == [] and certificate["files_scanned"] == 5
    assert certificate["snapshot_id"] == 6


def test_text_output_names_what_still_holds_erased_rows(events: Table) -> None:
    events.create_tag("quarter", 3)
    code, stdout, _ = _run("erase", events.location, "--where", "user_id = 22", "--purge")
    assert code == 0
    lines = stdout.splitlines()
    assert lines[0].startswith("erase: erased 1 row(s) from 1 file(s)") and lines[0].endswith("(snapshot 6)")
    assert "still held by tag quarter (snapshot 3)" in lines
    assert any(line.startswith("note: purge expired snapshot(s) 1..5") for line in lines)
    code, stdout, stderr = _run("erase", events.location, "--verify", "--where", "user_id = 22")
    assert code == 1 and "still held by tag quarter (snapshot 3)" in stdout
    assert stderr == "error: 1 matching row(s) remain\n"
