"""``tablefmt audit``: the runs, one run's files, one file's events, ``--since`` and ``--run`` filters."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

from tableformat.cli.main import cli
from tableformat.table import Table

SCHEMA = pa.schema([("id", pa.int64())])


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_audit_lists_runs_and_answers_for_one_file(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA, [], {"write-only": "true"})
    for i in range(3):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    at = table.location
    assert _run("audit", at) == "no run recorded\n"
    _run("expire", at, "--retain-min", "1", "--time-retained", "0 s")
    table.create_tag("t", 3)
    _run("tag", "delete", at, "t")
    runs = json.loads(_run("audit", at, "--json"))["runs"]
    assert [r["operation"] for r in runs] == ["expire", "tag delete"]
    assert [r["deleted_files"] for r in runs] == [6, 1] and all(r["outcome"] == "completed" for r in runs)
    text = _run("audit", at)
    assert all(r["run_id"][:20] in text for r in runs)
    one = _run("audit", at, "--run", runs[1]["run_id"])
    assert "tag/tag-t" in one and "deleted" in one
    assert json.loads(_run("audit", at, "--run", runs[0]["run_id"], "--json"))["runs"] == [runs[0]]
    events = json.loads(_run("audit", at, "--path", "snapshot/snapshot-1", "--json"))
    assert events["path"] == "snapshot/snapshot-1"
    assert [(e["run_id"], e["state"]) for e in events["events"]] == [(runs[0]["run_id"], "deleted")]
    assert "snapshot 1 expired" in _run("audit", at, "--path", "snapshot/snapshot-1")
    assert json.loads(_run("audit", at, "--since", "1 d", "--json"))["runs"] == runs
    assert json.loads(_run("audit", at, "--since", "0 s", "--json"))["runs"] == []
