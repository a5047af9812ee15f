"""``tablefmt undo TABLE RUN_ID [--dry-run] [--json]``: what it prints, and a refusal as one line, exit 1."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

from tableformat.cli.main import cli
from tableformat.table import Table

SCHEMA = pa.schema([("id", pa.int64())])


def _expired(tmp_path: Path) -> tuple[str, str]:
    table = Table.create(str(tmp_path / "t"), SCHEMA, [], {"write-only": "true", "maintenance.undo-window": "1 d"})
    for i in range(3):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    run = CliRunner().invoke(cli, ["expire", table.location, "--retain-min", "1", "--time-retained", "0 s", "--json"])
    assert run.exit_code == 0, run.output
    document = json.loads(run.output)
    assert document["expired_snapshots"] == 2 and document["deferred_files"] > 0 and document["undo_until"]
    return table.location, document["run_id"]


def test_undo_dry_run_then_undo_then_a_refusal(tmp_path: Path) -> None:
    at, run_id = _expired(tmp_path)
    dry = CliRunner().invoke(cli, ["undo", at, run_id, "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    document = json.loads(dry.output)
    assert (document["dry_run"], document["restored_snapshots"], document["restored_tags"]) == (True, [1, 2], [])
    assert document["restored_files"] == len(document["restored_paths"]) > 0
    done = CliRunner().invoke(cli, ["undo", at, run_id])
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"undo: restored 2 snapshot(s), 0 tag(s), {document['restored_files']} file(s)")
    assert [s.id for s in Table.open(at).snapshots()] == [1, 2, 3]
    again = CliRunner().invoke(cli, ["undo", at, run_id])
    assert again.exit_code == 1
    lines = again.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot undo run {run_id}: it was undone already by run ")


def test_audit_shows_what_the_window_holds(tmp_path: Path) -> None:
    at, run_id = _expired(tmp_path)
    text = CliRunner().invoke(cli, ["audit", at], env={"COLUMNS": "200"}).output
    header, row = text.splitlines()[:2]
    assert header.split()[-1] == "held" and row.split()[0] == run_id
    held = json.loads(CliRunner().invoke(cli, ["audit", at, "--json"]).output)["runs"][0]["deferred_files"]
    assert row.split()[-1] == str(held) and held > 0


def test_undo_needs_both_arguments(tmp_path: Path) -> None:
    at, _ = _expired(tmp_path)
    missing = CliRunner().invoke(cli, ["undo", at])
    assert missing.exit_code == 2 and "Missing argument 'RUN_ID'" in missing.output
