"""``tablefmt remove-orphans``: options, JSON output, one-line errors (the command is tested unregistered)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.tables import DAY_S, ID_PART_SCHEMA, age_path

from tableformat import Table
from tableformat.cli.orphans_command import remove_orphans


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A one-commit table with one stray 10 days old and one 2 days old."""
    path = tmp_path / "t"
    table = Table.create(str(path), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(pa.table({"id": [1, 2], "part": [0, 1]}, schema=ID_PART_SCHEMA))
    for days in (10, 2):
        stray = path / "part=0" / "bucket-0" / f"data-{uuid.uuid4()}-{days}.parquet"
        stray.write_bytes(b"x" * days)
        age_path(stray, days * DAY_S)
    (path / "part=0" / "bucket-0" / "notes.txt").write_text("keep me")
    return path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(remove_orphans, list(args))
    return result.exit_code, result.output


def test_dry_run_json(root: Path) -> None:
    code, output = invoke(str(root), "--dry-run", "--json")
    assert code == 0, output
    doc = json.loads(output)
    assert doc["dry_run"] is True
    assert doc["orphan_files"] == 2 and doc["orphan_bytes"] == 12
    assert len(doc["deleted_paths"]) == 2 and all(p.startswith("part=0/bucket-0/data-") for p in doc["deleted_paths"])
    assert doc["skipped_unknown"] == ["part=0/bucket-0/notes.txt"]
    assert len(list((root / "part=0" / "bucket-0").iterdir())) == 4


def test_older_than_and_real_run(root: Path) -> None:
    code, output = invoke(str(root), "--older-than", "5d", "--parallelism", "3", "--json")
    assert code == 0, output
    doc = json.loads(output)
    assert doc["dry_run"] is False and doc["orphan_files"] == 1 and doc["deleted_bytes"] == 10
    (deleted,) = doc["deleted_paths"]
    assert deleted.endswith("-10.parquet") and not (root / deleted).exists()


def test_text_output(root: Path) -> None:
    code, output = invoke(str(root), "--older-than", "36h", "--dry-run")
    assert code == 0
    assert output.startswith("remove-orphans: 2 orphan file(s), 12 B, older than 36 h; would delete 2 file(s), 12 B\n")
    assert "unknown files (never deleted):\n  part=0/bucket-0/notes.txt" in output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--older-than", "30min"], 2, "1 h minimum"),
        (["--older-than", "soon"], 2, "invalid duration"),
        (["--parallelism", "0"], 2, "parallelism"),
        (["--storage-option", "novalue"], 2, "KEY=VALUE"),
    ],
)
def test_bad_input_is_one_line(root: Path, args: list[str], code: int, message: str) -> None:
    exit_code, output = invoke(str(root), *args)
    assert exit_code == code and exit_code != 0
    assert message in output and "Traceback" not in output
    assert len(list((root / "part=0" / "bucket-0").iterdir())) == 4


def test_forced_short_cutoff(root: Path) -> None:
    code, output = invoke(str(root), "--older-than", "0s", "--force", "--json")
    assert code == 0, output
    assert json.loads(output)["orphan_files"] == 2


def test_missing_table(tmp_path: Path) -> None:
    code, output = invoke(str(tmp_path / "none"))
    assert code == 1 and output.startswith("error: ") and len(output.strip().splitlines()) == 1
