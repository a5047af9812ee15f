"""A table stored inside another one's tree: ``<root>/dt=zz`` of a table partitioned by ``dt``
holding its own ``schema/`` and ``snapshot/``. The outer table's orphan cleanup must report it and never enter it;
its check and expiration must not touch it either.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import tree_bytes

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cleanup.orphans import plan_orphan_removal
from tableformat.cli.main import cli

OUTER = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), pa.field("h", pa.int32())])
INNER = pa.schema([pa.field("k", pa.int64()), pa.field("dt", pa.string())])
DAY_MS = 86_400_000

CASES = [
    # (outer partition keys, outer options, where the inner table lives, inner partition keys)
    (["dt"], {}, "dt=zz", []),
    (["dt"], {}, "dt=zz", ["dt"]),
    (["dt", "h"], {}, "dt=a/h=99", []),
    (["dt"], {"data-file.path-directory": "data"}, "data/dt=zz", []),
    ([], {}, "bucket-7", []),
]


def in_days(days: int) -> int:
    return int(time.time() * 1000) + days * DAY_MS


@pytest.mark.parametrize(("keys", "options", "inner_at", "inner_keys"), CASES)
def test_outer_maintenance_never_enters_a_nested_table(
    tmp_path: Path, keys: list[str], options: dict[str, str], inner_at: str, inner_keys: list[str]
) -> None:
    root = tmp_path / "outer"
    settings = {"write-only": "true", "snapshot.clean-empty-directories": "true", **options}
    outer = Table.create(str(root), OUTER, keys, settings)
    outer.append(pa.table({"id": [1, 2], "dt": ["a", "b"], "h": [1, 1]}, schema=OUTER))
    outer.overwrite(pa.table({"id": [3], "dt": ["a"], "h": [1]}, schema=OUTER))
    inner = Table.create(str(root / inner_at), INNER, inner_keys, {"write-only": "true"})
    inner.append(pa.table({"k": [10, 11], "dt": ["x", "y"]}, schema=INNER))
    inner.append(pa.table({"k": [12], "dt": ["x"]}, schema=INNER))
    inner_files = {rel: data for rel, data in tree_bytes(root).items() if rel.startswith(f"{inner_at}/")}
    assert any(rel.endswith(".parquet") for rel in inner_files)
    stray_dir = root / "data" if "data-file.path-directory" in options else root
    partition = "/".join(f"{k}={v}" for k, v in zip(keys, ("b", "1")))  # a partition of the outer table
    stray = stray_dir / partition / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"stray of the outer table")

    plan = plan_orphan_removal(outer.context, now_ms=in_days(2))
    assert plan.skipped_nested_tables == (inner_at,)
    dry = remove_orphan_files(outer.context, dry_run=True, now_ms=in_days(2))
    result = remove_orphan_files(outer.context, now_ms=in_days(2))
    assert result.deleted_paths == dry.deleted_paths == (stray.relative_to(root).as_posix(),)
    assert result.skipped_nested_tables == (inner_at,)
    assert not any(p.startswith(inner_at) for p in result.skipped_unknown + result.removed_dirs)

    expired = expire_snapshots(outer.context, retain_min=1, time_retained=0, now_ms=in_days(10))
    assert expired.deleted_data_files == (2 if keys else 1)
    assert not any(p.startswith(inner_at) for p in expired.deleted_paths)
    check = check_table(outer.context)
    assert check.ok and check.skipped_nested_tables == (inner_at,)

    assert {rel: data for rel, data in tree_bytes(root).items() if rel.startswith(f"{inner_at}/")} == inner_files
    nested = Table.open(str(root / inner_at))
    assert sorted(nested.to_arrow().column("k").to_pylist()) == [10, 11, 12]
    assert check_table(nested.context).ok
    assert sorted(Table.open(str(root)).to_arrow().column("id").to_pylist()) == [3]


def test_cli_reports_nested_tables(tmp_path: Path) -> None:
    root = tmp_path / "outer"
    outer = Table.create(str(root), OUTER, ["dt"], {"write-only": "true"})
    outer.append(pa.table({"id": [1], "dt": ["a"], "h": [1]}, schema=OUTER))
    Table.create(str(root / "dt=zz"), INNER, [], {}).append(pa.table({"k": [1], "dt": ["x"]}, schema=INNER))
    before = tree_bytes(root)
    runner = CliRunner()
    result = runner.invoke(cli, ["remove-orphans", str(root), "--older-than", "0s", "--force", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["skipped_nested_tables"] == ["dt=zz"] and document["deleted_paths"] == []
    result = runner.invoke(cli, ["remove-orphans", str(root), "--older-than", "0s", "--force"])
    assert result.exit_code == 0 and "nested tables (never entered):\n  dt=zz\n" in result.stdout
    result = runner.invoke(cli, ["check", str(root), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["skipped_nested_tables"] == ["dt=zz"]
    result = runner.invoke(cli, ["check", str(root)])
    assert result.exit_code == 0 and "nested tables (not checked, never cleaned):\n  dt=zz\n" in result.stdout
    assert tree_bytes(root) == before
