"""`tablefmt remove-orphans --engine spark` uses the distributed cleaner and reports like the local engine."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.tables import DAY_S, age_path

from tableformat import Table
from tableformat.cli.main import cli

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds


def test_remove_orphans_engine_spark(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    stray = root / "dt=a" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet"
    stray.write_bytes(b"x" * 10)
    age_path(stray, 3 * DAY_S)
    result = CliRunner().invoke(cli, ["remove-orphans", str(root), "--engine", "spark", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["deleted_paths"] == [str(stray.relative_to(root))]
    assert report["orphan_files"] == 1 and report["dry_run"] is False
    assert not stray.exists()
    assert spark.range(3).count() == 3  # the shared session is still alive
    assert sorted(Table.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2]


def test_remove_orphans_engine_spark_stops_at_max_files(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    strays = set()
    for _ in range(3):
        stray = root / "dt=b" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet"
        stray.write_bytes(b"x" * 10)
        age_path(stray, 3 * DAY_S)
        strays.add(str(stray.relative_to(root)))
    deleted: list[str] = []
    command = ["remove-orphans", str(root), "--engine", "spark", "--max-files", "2", "--json"]
    for backlog in (1, 0):
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["backlog"] == backlog and len(report["deleted_paths"]) == (2 if backlog else 1)
        deleted += report["deleted_paths"]
    assert sorted(deleted) == sorted(strays) and not any((root / rel).exists() for rel in strays)
    assert sorted(Table.open(str(root)).to_arrow().column("id").to_pylist()) == [1, 2]
