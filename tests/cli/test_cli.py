"""The CLI: thin over the API, --json output, one-line errors with a non-zero exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def parquet_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"]}, schema=SCHEMA), path)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_create_write_snapshots_files_drop_tag(tmp_path: Path, parquet_file: Path) -> None:
    table = str(tmp_path / "t")
    assert run("create", table, "--schema-from", str(parquet_file), "--partition-keys", "dt")[0] == 0
    code, out, _ = run("write", table, str(parquet_file))
    assert (code, out.strip()) == (0, "committed snapshot 1 (APPEND, 3 rows)")
    code, out, _ = run("write", table, str(parquet_file), "--overwrite", "--partition", "dt=a")
    assert code != 0  # rows for dt=b are outside the named partition
    code, out, _ = run("snapshots", table, "--json")
    assert code == 0
    assert [(s["snapshot_id"], s["commit_kind"], s["total_record_count"]) for s in json.loads(out)] == [
        (1, "APPEND", 3)
    ]
    code, out, _ = run("files", table, "--json")
    assert code == 0 and sorted(f["partition"]["dt"] for f in json.loads(out)) == ["a", "b"]
    code, out, _ = run("drop-partition", table, "dt=b")
    assert (code, out.strip()) == (0, "committed snapshot 2 (OVERWRITE, 1 rows dropped)")
    assert run("tag", "create", table, "v1", "--snapshot", "1")[0] == 0
    code, out, _ = run("tag", "list", table, "--json")
    keys = ("tag_name", "snapshot_id", "time_retained_ms", "record_count")
    assert [{k: t[k] for k in keys} for t in json.loads(out)] == [
        {"tag_name": "v1", "snapshot_id": 1, "time_retained_ms": None, "record_count": 3}
    ]
    assert run("tag", "delete", table, "v1")[0] == 0
    assert sorted(Table.open(table).to_arrow().column("id").to_pylist()) == [1, 3]


@pytest.mark.parametrize(
    "args",
    [
        ("snapshots", "{missing}"),
        ("files", "{table}", "--snapshot", "99"),
        ("drop-partition", "{table}", "nokey"),
        ("drop-partition", "{table}", "other=1"),
        ("tag", "delete", "{table}", "nope"),
        ("tag", "create", "{table}", "../x"),
        ("write", "{table}", "{bad_parquet}"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(tmp_path: Path, parquet_file: Path, args: tuple[str, ...]) -> None:
    table = str(tmp_path / "t")
    Table.create(table, SCHEMA, partition_keys=["dt"]).append(pq.read_table(parquet_file))
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"other": [1]}), bad)
    filled = [a.format(table=table, missing=str(tmp_path / "missing"), bad_parquet=str(bad)) for a in args]
    code, _out, err = run(*filled)
    assert code != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert len(Table.open(table).snapshots()) == 1  # nothing changed


def test_help_everywhere() -> None:
    for args in (["--help"], ["write", "--help"], ["tag", "create", "--help"], ["demo", "--help"]):
        code, out, _ = run(*args)
        assert code == 0 and "Usage:" in out


def test_demo_builds_the_sample_table(tmp_path: Path) -> None:
    code, out, err = run("demo", str(tmp_path / "demo"))
    assert code == 0, err
    table = Table.open(str(tmp_path / "demo" / "events"))
    assert table.to_arrow().num_rows == 860
    assert [t.name for t in table.tags()] == ["end-of-week"]
    assert "latest: 1260 rows" in out
    assert "dropped ['2026-11-02', '2026-11-03'] in snapshot(s) [10]; latest reads 860 rows" in out
    assert "expired 8 snapshots (earliest is now 9)" in out
    assert "deleted 1 file(s)" in out and "check: ok=True, 0 orphan file(s)" in out
    assert "expired snapshot(s) [9]; kept 2 file(s)" in out
    assert "undo: restored snapshot(s) [9]; snapshots are now [9, 10]" in out
    runs = "expire-partitions, drop-partition, expire, remove-orphans, expire, undo"  # by start time
    assert f"audit ledger: 6 run(s): {runs} (tablefmt audit)" in out
    assert [s.id for s in table.snapshots()] == [9, 10]
    assert table.to_arrow(tag="end-of-week").num_rows == 1400
    assert table.maintenance.check().ok
