"""``orphan-files.max-files``: one run deletes at most that many orphans and leaves the rest, counted as its backlog,
to the next run; the dry run names exactly what the run deletes; the audit record lists exactly those; the
candidates beyond the limit are counted, never stat'ed; runs in turn delete every orphan and nothing else. Run
twice by conftest.py, the second time with every data candidate spilled to disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from support.inventories import local_rows, write_plain_list
from support.operations import check, remove_orphan_files
from support.orphan_tables import id_part_table, plant_stray
from support.tables import DAY_S, age_files, files_under

from tableformat import Table
from tableformat.audit import audit_run_files
from tableformat.cli.main import cli
from tableformat.io.fileio import FileInfo
from tableformat.io.forwarding import ForwardingFileIO

STRAYS = 9
LIMIT = 4


def stray_table(root: Path) -> tuple[Table, set[str]]:
    """A committed table (two appends) and STRAYS old unreferenced data files over two partitions."""
    table = id_part_table(root, appends=[0, 100])
    age_files(root, 10 * DAY_S)
    strays = {plant_stray(root, f"part={n % 2}/bucket-0/data-{uuid.uuid4()}-0.parquet") for n in range(STRAYS)}
    table.set_options({"orphan-files.max-files": str(LIMIT)})
    return Table.open(str(root)), strays


class CountingStats(ForwardingFileIO):
    """Counts stat_file calls on data files; lists without stats as the local FileIO does."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.stats: list[str] = []

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        return self.inner.list_dir_without_file_stats(path)

    def stat_file(self, path: str) -> FileInfo | None:
        if path.endswith(".parquet"):
            self.stats.append(path)
        return self.inner.stat_file(path)


def test_a_run_deletes_at_most_the_limit_and_counts_the_rest_as_backlog(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table, strays = stray_table(root)
    ctx = table.context
    preview = remove_orphan_files(ctx, dry_run=True)
    assert len(preview.deleted_paths) == LIMIT and set(preview.deleted_paths) <= strays
    assert preview.backlog == STRAYS - LIMIT and preview.orphan_files == LIMIT
    note = f"stopped at {LIMIT} orphan(s) (orphan-files.max-files): up to {STRAYS - LIMIT} more unreferenced file(s)"
    assert any(n.startswith(note) for n in preview.notes)
    before = files_under(root)
    result = remove_orphan_files(ctx)
    assert result.deleted_paths == preview.deleted_paths and result.backlog == STRAYS - LIMIT and not result.failed
    assert before - files_under(root) == set(result.deleted_paths)
    audited = audit_run_files(ctx.store, result.run_id)
    assert sorted(row.path for row in audited) == sorted(result.deleted_paths)
    second = remove_orphan_files(ctx)
    assert len(second.deleted_paths) == LIMIT and second.backlog == STRAYS - 2 * LIMIT
    assert not set(second.deleted_paths) & set(result.deleted_paths)
    third = remove_orphan_files(ctx)
    assert len(third.deleted_paths) == STRAYS - 2 * LIMIT and third.backlog == 0
    assert not any("orphan-files.max-files" in n for n in third.notes)
    assert set(result.deleted_paths) | set(second.deleted_paths) | set(third.deleted_paths) == strays
    assert before - files_under(root) == strays  # every stray, and nothing else
    assert Table.open(str(root)).to_arrow().num_rows == 16


def test_candidates_beyond_the_limit_are_counted_not_stated(tmp_path: Path) -> None:
    table, _ = stray_table(tmp_path / "t")
    counting = CountingStats(table.context.io)
    result = remove_orphan_files(table.context.with_io(counting), dry_run=True)
    assert len(result.deleted_paths) == LIMIT and result.backlog == STRAYS - LIMIT
    assert len(counting.stats) == LIMIT  # on local disk the stats run inline: one per orphan, none beyond


def test_a_file_list_run_stops_at_the_same_limit(tmp_path: Path) -> None:
    table, strays = stray_table(tmp_path / "t")
    source = write_plain_list(tmp_path / "files.parquet", local_rows(tmp_path / "t"), file_format="parquet")
    result = remove_orphan_files(table.context, file_list=str(source))
    assert len(result.deleted_paths) == LIMIT and set(result.deleted_paths) <= strays
    assert result.backlog == STRAYS - LIMIT


def test_the_cli_reports_the_backlog_and_max_files_overrides_the_option(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _, strays = stray_table(root)
    out = CliRunner().invoke(cli, ["remove-orphans", str(root), "--dry-run", "--json"])
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["backlog"] == STRAYS - LIMIT and len(document["deleted_paths"]) == LIMIT
    out = CliRunner().invoke(cli, ["remove-orphans", str(root), "--max-files", "7", "--json"])
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["backlog"] == STRAYS - 7 and len(document["deleted_paths"]) == 7
    assert set(document["deleted_paths"]) <= strays
    bad = CliRunner().invoke(cli, ["remove-orphans", str(root), "--max-files", "0"])
    assert bad.exit_code == 2 and bad.output.strip().startswith("error: Invalid value for '--max-files'")
    assert bad.output.strip().count("\n") == 0
    assert files_under(root) >= strays - set(document["deleted_paths"])  # the refused run deleted nothing


def test_processes_with_different_string_hashes_take_the_same_orphans(tmp_path: Path) -> None:
    """Spilled candidates come back in an order every process shares (spill.py hashes with CRC-32): a dry run in
    one process names exactly what a run in another deletes."""
    root = tmp_path / "t"
    table, strays = stray_table(root)
    table.set_options({"orphan-files.candidates-in-memory": "1"})

    def dry_run(seed: str) -> list[str]:
        command = [sys.executable, "-m", "tableformat.cli.main", "remove-orphans", str(root), "--dry-run", "--json"]
        done = subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        paths: list[str] = json.loads(done.stdout)["deleted_paths"]
        return paths

    first, second = dry_run("1"), dry_run("2")
    assert first == second and len(first) == LIMIT and set(first) <= strays
    assert remove_orphan_files(Table.open(str(root)).context).deleted_paths == tuple(first)


def test_check_counts_the_orphans_of_one_run_and_the_backlog_beyond(tmp_path: Path) -> None:
    table, strays = stray_table(tmp_path / "t")
    result = check(table.context)
    assert result.ok and result.orphan_files == LIMIT and set(result.orphan_paths) <= strays
    assert result.orphan_backlog == STRAYS - LIMIT and result.to_json()["orphan_backlog"] == STRAYS - LIMIT
    assert f"and up to {STRAYS - LIMIT} more beyond orphan-files.max-files" in "\n".join(result.summary())


def test_files_the_undo_window_keeps_never_count_toward_the_limit(tmp_path: Path) -> None:
    """With an undo window, a run defers its orphans instead of deleting them; they stay unreferenced, and the next
    run must take the next orphans, not stall on the kept ones."""
    root = tmp_path / "t"
    table, strays = stray_table(root)
    table.set_options({"maintenance.undo-window": "1 d"})
    ctx = Table.open(str(root)).context
    runs = [remove_orphan_files(ctx) for _ in range(3)]
    assert [len(run.deferred_paths) for run in runs] == [LIMIT, LIMIT, STRAYS - 2 * LIMIT]
    assert [run.backlog for run in runs] == [STRAYS - LIMIT, STRAYS - 2 * LIMIT, 0]
    assert set().union(*(set(run.deferred_paths) for run in runs)) == strays  # each deferred once, all of them
    assert "8 unreferenced file(s) are kept by the undo window (not orphans)" in runs[2].notes
    assert remove_orphan_files(ctx).deferred_paths == ()  # nothing left but what the window keeps
