"""Orphan cleanup and check from a file list (``file_list=``, ``--file-list``) on local disk: the same orphans as
the listing run, the cutoff capped at the list's creation time, stale entries, entries outside the root, bad sources
(one line, exit 2, nothing deleted). S3 Inventory reports on a real S3 server: test_file_list_s3.py."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.inventories import directory_put, local_rows, write_plain_list, write_s3_inventory
from support.operations import check, remove_orphan_files
from support.orphan_tables import id_part_table, plant_stray
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, age_path, files_under, id_part_rows

from tableformat import Table
from tableformat.cli.main import cli
from tableformat.errors import FileListError

DAY_MS = DAY_S * 1000


def data_name() -> str:
    return f"data-{uuid.uuid4()}-0.parquet"


class Scenario:
    """A table with old orphans of every kind, fresh ones, unknown files and a nested table."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "t"
        self.table = id_part_table(self.root, appends=[0, 100])
        self.table.write_files(id_part_rows(300, 10, parts=(1, 9)))  # written, never committed
        nested = Table.create(str(self.root / "part=7"), ID_PART_SCHEMA)
        nested.append(id_part_rows(0, 4, parts=(0,)))
        age_files(self.root, 10 * DAY_S)
        plant_stray(self.root, f"part=0/bucket-0/{data_name()}")
        plant_stray(self.root, f"part=3/bucket-0/{data_name()}.index")
        plant_stray(self.root, f"manifest/manifest-{uuid.uuid4()}-0")
        plant_stray(self.root, f"manifest/manifest-list-{uuid.uuid4()}-1")
        plant_stray(self.root, f"statistics/stat-{uuid.uuid4()}-0")
        plant_stray(self.root, f"part=1/bucket-0/{data_name()}", days=0)  # too young
        plant_stray(self.root, "part=0/bucket-0/notes.txt")  # unknown
        plant_stray(self.root, f"other=1/bucket-0/{data_name()}")  # an unknown directory: never entered
        self.sibling = plant_stray(tmp_path, f"u/part=0/bucket-0/{data_name()}")  # another table's root, outside

    def listed(self, tmp_path: Path, name: str, file_format: str) -> str:
        """A plain list of every file under ``tmp_path`` (the table and its sibling), made now."""
        return str(write_plain_list(tmp_path / name, local_rows(tmp_path), file_format=file_format))


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path)


@pytest.mark.parametrize("file_format", ["csv", "parquet"])
def test_a_file_list_deletes_exactly_what_the_listing_run_deletes(
    scenario: Scenario, tmp_path: Path, file_format: str
) -> None:
    ctx = scenario.table.context
    by_listing = remove_orphan_files(ctx, dry_run=True)
    assert len(by_listing.deleted_paths) == 7  # 2 uncommitted data files and the 5 old strays
    source = scenario.listed(tmp_path, f"files.{file_format}", file_format)
    before = files_under(scenario.root)
    result = remove_orphan_files(ctx, file_list=source)
    assert result.deleted_paths == by_listing.deleted_paths and not result.failed
    assert before - files_under(scenario.root) == set(by_listing.deleted_paths)
    assert result.skipped_unknown == by_listing.skipped_unknown == ("part=0/bucket-0/notes.txt",)
    assert result.skipped_nested_tables == by_listing.skipped_nested_tables == ("part=7",)
    assert result.removed_dirs == ()  # a list knows no directories: none is removed
    assert (tmp_path / scenario.sibling).exists()
    assert any("the table's directories were not listed" in note for note in result.notes)
    assert Table.open(str(scenario.root)).to_arrow().num_rows == 16


def test_check_from_a_file_list_counts_the_orphans_the_listing_check_counts(scenario: Scenario, tmp_path: Path) -> None:
    ctx = scenario.table.context
    by_listing = check(ctx)
    result = check(ctx, file_list=scenario.listed(tmp_path, "files.csv", "csv"))
    assert result.ok and by_listing.ok
    assert result.orphan_paths == by_listing.orphan_paths and len(result.orphan_paths) == 7
    assert result.referenced_files == by_listing.referenced_files
    assert result.referenced_bytes == by_listing.referenced_bytes
    assert result.skipped_nested_tables == ("part=7",)
    assert result.to_json()["notes"] == list(result.notes) and result.notes


def test_the_cutoff_is_capped_at_the_lists_creation_time(scenario: Scenario, tmp_path: Path) -> None:
    """A file the list shows old but that was written again after the list was made is judged by its new mtime
    against the list's creation time (5 days ago), not against now minus the guard (2 days)."""
    ctx = scenario.table.context
    rewritten = plant_stray(scenario.root, f"part=0/bucket-0/{data_name()}", days=10)
    source = Path(scenario.listed(tmp_path, "files.csv", "csv"))
    age_path(source, 5 * DAY_S)
    age_path(scenario.root / rewritten, 3 * DAY_S)  # after the list: 3 days old now
    by_listing = remove_orphan_files(ctx, dry_run=True, older_than="2d")
    assert rewritten in by_listing.deleted_paths
    result = remove_orphan_files(ctx, older_than="2d", file_list=str(source))
    assert set(result.deleted_paths) == set(by_listing.deleted_paths) - {rewritten}
    assert (scenario.root / rewritten).exists()
    assert abs(result.cutoff_ms - (time.time() * 1000 - 5 * DAY_MS)) < 60_000
    assert any(note.startswith("cutoff capped at the file list's creation time") for note in result.notes)


def test_a_file_the_list_names_that_is_gone_is_no_error(scenario: Scenario, tmp_path: Path) -> None:
    ctx = scenario.table.context
    by_listing = remove_orphan_files(ctx, dry_run=True)
    source = scenario.listed(tmp_path, "files.csv", "csv")
    gone = by_listing.deleted_paths[0]
    (scenario.root / gone).unlink()
    result = remove_orphan_files(ctx, file_list=source)
    assert set(result.deleted_paths) == set(by_listing.deleted_paths) - {gone}
    assert result.failed == ()
    assert "1 file(s) the file list names were already gone (not orphans)" in result.notes


def test_files_the_list_does_not_name_are_never_candidates(scenario: Scenario, tmp_path: Path) -> None:
    ctx = scenario.table.context
    source = scenario.listed(tmp_path, "files.csv", "csv")
    later = plant_stray(scenario.root, f"part=0/bucket-0/{data_name()}", days=10)  # old, but not in the list
    result = remove_orphan_files(ctx, file_list=source)
    assert later not in result.deleted_paths and (scenario.root / later).exists()
    assert later in remove_orphan_files(ctx, dry_run=True).deleted_paths


def test_a_list_that_does_not_cover_the_table_root_is_refused(scenario: Scenario, tmp_path: Path) -> None:
    """A list filtered below the root (here: only the data directories) cannot show where nested tables are: a
    nested table's schema/ would be missing from it too, and its files would look like ours."""
    rows = [row for row in local_rows(scenario.root) if "/part=" in row[0]]
    source = write_plain_list(tmp_path / "data-only.csv", rows, file_format="csv")
    before = files_under(scenario.root)
    with pytest.raises(FileListError, match="names no file of schema/ .* it does not cover the table root"):
        remove_orphan_files(scenario.table.context, file_list=str(source))
    assert files_under(scenario.root) == before


def test_a_path_listed_twice_is_one_file(scenario: Scenario, tmp_path: Path) -> None:
    rows = local_rows(scenario.root)
    source = write_plain_list(tmp_path / "twice.csv", rows + rows, file_format="csv")
    by_listing = remove_orphan_files(scenario.table.context, dry_run=True)
    result = remove_orphan_files(scenario.table.context, file_list=str(source))
    assert result.deleted_paths == by_listing.deleted_paths and result.orphan_files == 7


def test_an_s3_inventory_is_refused_for_a_table_on_local_disk(scenario: Scenario, tmp_path: Path) -> None:
    rows = [(path.lstrip("/"), size, mtime) for path, size, mtime in local_rows(scenario.root)]
    key = write_s3_inventory(
        directory_put(tmp_path / "dest"), "bucket", "dest", rows, file_format="CSV", created_ms=int(time.time() * 1000)
    )
    with pytest.raises(FileListError, match="is not on S3"):
        remove_orphan_files(scenario.table.context, file_list=str(tmp_path / "dest" / key))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"name,size,last_modified\nx,1,2\n", "has no column path"),
        (b"path,size,last_modified\n/elsewhere/x,1,2\n", "names no file under the table root"),
        (b"path,size,last_modified\n{root}/part=0/../../x,1,2\n", "not a plain path below the table root"),
        (b"path,size,last_modified\n{root}/x,big,2\n", "is not a whole number"),
        (b'{"sourceBucket": "b"}', "is not an S3 Inventory manifest"),
    ],
)
def test_a_bad_source_is_one_line_exit_2_and_nothing_is_deleted(
    scenario: Scenario, tmp_path: Path, content: bytes | None, message: str
) -> None:
    source = tmp_path / "bad.csv"
    if content is not None:
        source.write_bytes(content.replace(b"{root}", str(scenario.root).encode()))
    before = files_under(scenario.root)
    with pytest.raises(FileListError, match=message):
        remove_orphan_files(scenario.table.context, file_list=str(source))
    for command in (["remove-orphans"], ["check"]):
        run = CliRunner().invoke(cli, [*command, str(scenario.root), "--file-list", str(source)])
        assert run.exit_code == 2, run.output
        lines = run.stderr.strip().splitlines() if run.stderr else run.output.strip().splitlines()
        assert len(lines) == 1 and message in lines[0]
    assert files_under(scenario.root) == before


def test_the_cli_takes_a_file_list(scenario: Scenario, tmp_path: Path) -> None:
    source = scenario.listed(tmp_path, "files.parquet", "parquet")
    dry = remove_orphan_files(scenario.table.context, dry_run=True)
    run = CliRunner().invoke(cli, ["remove-orphans", str(scenario.root), "--file-list", source, "--json"])
    assert run.exit_code == 0, run.output
    document = json.loads(run.stdout)
    assert document["deleted_paths"] == list(dry.deleted_paths)
    assert any("were not listed" in note for note in document["notes"])
    checked = CliRunner().invoke(cli, ["check", str(scenario.root), "--file-list", source, "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["orphan_paths"] == []
