"""Expire-on-commit per the table's options, write-only, and the ``expire`` CLI command."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
from click.testing import CliRunner
from support.tables import files_under, reachable_files

from tableformat.cleanup.after_commit import run_after_commit
from tableformat.cli.expire_command import expire
from tableformat.cli.main import cli

RETAIN_3 = {
    "write-only": "false",
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "3",
}


def test_commits_expire_per_the_options(kit) -> None:
    table = kit.table(**RETAIN_3)
    for _ in range(6):
        table.append(kit.rows(2))
    assert [s.id for s in table.snapshots()] == [4, 5, 6]
    assert (kit.root(table) / "snapshot" / "EARLIEST").read_text() == "4"
    assert files_under(kit.root(table)) == reachable_files(table.context)


def test_the_write_command_says_what_after_commit_maintenance_did(kit, tmp_path) -> None:
    table = kit.table(**RETAIN_3)
    for _ in range(3):
        table.append(kit.rows(2))
    source = tmp_path / "rows.parquet"
    pq.write_table(kit.rows(2), source)
    result = CliRunner().invoke(cli, ["write", table.location, str(source)])
    assert result.exit_code == 0, result.output
    first, second = result.stdout.splitlines()
    assert first == "committed snapshot 4 (APPEND, 2 rows)"
    assert re.fullmatch(r"after commit: expire: expired 1 snapshot\(s\); deleted \d+ file\(s\), [\d.]+ KiB", second)
    done = table.context.store.snapshot_ids()
    assert done == [2, 3, 4]
    quiet = CliRunner().invoke(cli, ["-q", "write", table.location, str(source)])
    assert (quiet.exit_code, quiet.stdout) == (0, "")


def test_write_only_disables_expire_on_commit(kit) -> None:
    table = kit.table(**{**RETAIN_3, "write-only": "true"})
    for _ in range(6):
        table.append(kit.rows(2))
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5, 6]
    assert run_after_commit(table.context) == []


def test_a_failing_expiration_never_fails_the_commit(kit) -> None:
    table = kit.table(**RETAIN_3)
    for _ in range(3):
        table.append(kit.rows(2))
    table.create_tag("t", 1)
    (kit.root(table) / "tag" / "tag-t").write_bytes(b"garbage")  # expiration now refuses to run
    snapshot = table.append(kit.rows(2))
    assert snapshot is not None and snapshot.id == 4
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4]


def run(*args: str):
    return CliRunner().invoke(expire, list(args), catch_exceptions=False)


def history(kit, count: int = 5):
    table = kit.table()
    for _ in range(count):
        table.append(kit.rows(2))
    table.drop_partitions([{"part": 0}])
    return table


def test_cli_json_and_dry_run(kit) -> None:
    table = history(kit)
    root = str(kit.root(table))
    before = files_under(kit.root(table))
    dry = run(root, "--retain-min", "1", "--time-retained", "0s", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.output)
    assert planned["dry_run"] is True and planned["expired_snapshots"] == 5
    assert files_under(kit.root(table)) == before
    real = run(root, "--retain-min", "1", "--time-retained", "0s", "--json", "--parallelism", "2")
    assert real.exit_code == 0, real.output
    done = json.loads(real.output)
    assert done["dry_run"] is False
    assert sorted(done["deleted_paths"]) == sorted(planned["deleted_paths"])
    for key in (
        "expired_snapshots",
        "earliest_snapshot_id",
        "deleted_data_files",
        "deleted_manifest_files",
        "deleted_manifest_list_files",
        "deleted_files",
        "deleted_bytes",
    ):
        assert done[key] == planned[key]
    assert done["earliest_snapshot_id"] == 6


def test_cli_text_output_and_limit(kit) -> None:
    table = history(kit)
    result = run(str(kit.root(table)), "--retain-min", "1", "--time-retained", "0s", "--limit", "2")
    assert result.exit_code == 0
    assert result.output.startswith("expired 2 snapshot(s); earliest snapshot is 3;")
    assert [s.id for s in table.snapshots()] == [3, 4, 5, 6]


def test_cli_bad_input_is_a_usage_error(kit) -> None:
    table = history(kit)
    root = str(kit.root(table))
    before = files_under(kit.root(table))
    for args in (
        ["--retain-min", "0"],
        ["--retain-min", "5", "--retain-max", "2"],
        ["--time-retained", "soon"],
        ["--time-retained", "-1h"],
        ["--limit", "0"],
        ["--storage-option", "novalue"],
    ):
        result = CliRunner().invoke(expire, [root, *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
    assert files_under(kit.root(table)) == before
    result = CliRunner().invoke(expire, [root, "--retain-min", "20"])  # valid: nothing to expire
    assert result.exit_code == 0
    assert files_under(kit.root(table)) == before | {"snapshot/EARLIEST"}


def test_cli_table_errors_exit_1(kit, tmp_path) -> None:
    result = CliRunner().invoke(expire, [str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    table = history(kit)
    (kit.root(table) / "manifest" / table.snapshot(2).base_manifest_list).write_bytes(b"junk")
    result = CliRunner().invoke(expire, [str(kit.root(table)), "--retain-min", "1", "--time-retained", "0s"])
    assert result.exit_code == 1
    assert table.snapshot(2).base_manifest_list in result.output
