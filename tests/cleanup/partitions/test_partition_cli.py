"""``tablefmt expire-partitions``: the generic command built from the operation's parameters."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner
from support.partition_tables import fill, partitioned_table, partitions

from tableformat.cli.main import cli

OLD, NEW = "2020-01-01", "2099-01-01"  # decided the same way by any real clock between 2020 and 2099


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_json_dry_run_then_real_run(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.date32()), ("tag", pa.string())], ["dt", "tag"])
    fill(
        table,
        [
            {"dt": dt.date(2020, 1, 1), "tag": "a=b, c"},
            {"dt": dt.date(2099, 1, 1), "tag": "x"},
            {"dt": None, "tag": "y"},
        ],
    )
    code, out, _ = _run("expire-partitions", str(table.location), "--expiration-time", "30 d", "--dry-run", "--json")
    assert code == 0
    dry = json.loads(out)
    assert dry["expired_partitions"] == [{"dt": "2020-01-01", "tag": "a=b, c"}]
    assert dry["skipped_partitions"] == [
        {
            "partition": {"dt": "__DEFAULT_PARTITION__", "tag": "y"},
            "reason": "no partition time: dt is null (the default partition)",
        }
    ]
    assert (
        dry["snapshot_ids"] == []
        and dry["dry_run"] is True
        and (dry["dropped_files"], dry["dropped_records"]) == (1, 2)
    )
    code, out, _ = _run("expire-partitions", str(table.location), "--expiration-time", "30d", "--json")
    real = json.loads(out)
    assert code == 0 and real["snapshot_ids"] == [4] and real["dry_run"] is False
    compared = ("expired_partitions", "skipped_partitions", "dropped_files", "dropped_records", "reclaimable_bytes")
    assert {k: real[k] for k in compared} == {k: dry[k] for k in compared}
    assert partitions(table) == {(dt.date(2099, 1, 1), "x"), (None, "y")}


def test_flags_and_text_output(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.int64())], ["dt"], **{"partition.expiration-time": "30d"})
    fill(table, [{"dt": 20200101}, {"dt": 20990101}])
    code, out, _ = _run("expire-partitions", str(table.location))
    assert code == 0 and "dropped 0 partition(s)" in out
    assert "skipped dt=20200101: no partition time: '20200101' does not match yyyy-MM-dd[ HH:mm:ss]" in out
    code, out, err = _run(
        "expire-partitions",
        str(table.location),
        "--timestamp-formatter",
        "yyyyMMdd",
        "--strategy",
        "values-time",
        "--max-num",
        "5",
    )
    assert code == 0, err
    assert out.splitlines()[1] == "  dt=20200101" and "dropped 1 partition(s)" in out
    assert partitions(table) == {(20990101,)}


def test_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"])
    fill(table, [{"dt": OLD}])
    code, _, err = _run("expire-partitions", str(table.location))
    assert (code, err) == (
        2,
        "error: no expiration time: set the table option partition.expiration-time or pass --expiration-time 30d\n",
    )
    code, _, err = _run("expire-partitions", str(table.location), "--expiration-time", "1d", "--strategy", "x")
    assert code == 2 and err.startswith("error: Invalid value for '--strategy'")
    code, _, err = _run(
        "expire-partitions", str(table.location), "--expiration-time", "1d", "--timestamp-pattern", "$day"
    )
    assert code == 1 and "$day, which is not a partition column" in err
    assert len(table.snapshots()) == 1
