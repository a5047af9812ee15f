"""Orphan cleanup on real tables: exact sets of deletions for planted files, dry run, cutoffs, directories."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from support.operations import remove_orphan_files
from support.orphan_tables import id_part_table, plant_stray
from support.tables import (
    DAY_S,
    age_files,
    age_path,
    dirs_under,
    files_under,
    id_part_rows,
)

from tableformat import Table, ValidationError
from tableformat.cleanup.orphans import OrphanResult, plan_orphan_removal

# --- fixtures and helpers of this module (files on disk and ageing: tests/support/tables.py) ------------------------


def data_name() -> str:
    return f"data-{uuid.uuid4()}-0.parquet"


def temp_name(name: str) -> str:
    return f".{name}.{uuid.uuid4()}.tmp"


def rollback_to(root: Path, snapshot_id: int, newest: int) -> None:
    """What pypaimon's rollback does to metadata: delete newer snapshot files, rewrite LATEST (files stay)."""
    for sid in range(snapshot_id + 1, newest + 1):
        (root / "snapshot" / f"snapshot-{sid}").unlink()
    (root / "snapshot" / "LATEST").write_text(str(snapshot_id))


class Scenario:
    """A table with every kind of leftover, and the exact set of files a cleanup with a 1 day cutoff must delete."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.table = id_part_table(root)
        t = self.table
        t.append(id_part_rows(0, 40))  # snapshot 1
        t.append(id_part_rows(100, 40))  # snapshot 2
        t.create_tag("keep")  # tag on snapshot 2, which a rollback will remove
        before = files_under(root)
        t.append(id_part_rows(200, 40))  # snapshot 3: rolled back below, never tagged
        self.rolled_back = {f for f in files_under(root) - before if not f.startswith("snapshot/")}
        rollback_to(root, 1, 3)
        assert len(self.rolled_back) == 4 + 3  # 4 data files, a delta manifest, base + delta manifest lists

        before = files_under(root)
        t.write_files(id_part_rows(300, 10, parts=(1, 9)))  # a failed job: written, never committed; part=9 is new
        self.uncommitted = files_under(root) - before
        assert any(f.startswith("part=9/") for f in self.uncommitted)
        age_files(root, 10 * DAY_S)

        self.planted_old = {
            plant_stray(root, f"part=0/bucket-0/{data_name()}"),
            plant_stray(root, f"part=3/bucket-0/{data_name()}.index"),
            plant_stray(root, f"part=2/bucket-0/{temp_name(data_name())}"),
            plant_stray(root, f"manifest/manifest-{uuid.uuid4()}-0"),
            plant_stray(root, f"manifest/manifest-list-{uuid.uuid4()}-1"),
            plant_stray(root, f"manifest/index-manifest-{uuid.uuid4()}-0"),
            plant_stray(root, f"statistics/stat-{uuid.uuid4()}-0"),
            plant_stray(root, f"snapshot/{temp_name('snapshot-4')}"),
            plant_stray(root, f"tag/{temp_name('tag-x')}"),
            plant_stray(root, f"part=5/bucket-0/{data_name()}"),  # a partition no snapshot knows
        }
        self.fresh = {
            plant_stray(root, f"part=1/bucket-0/{data_name()}", days=0),
            plant_stray(root, f"manifest/manifest-{uuid.uuid4()}-0", days=0),
            plant_stray(root, f"snapshot/{temp_name('snapshot-2')}", days=0.01),
        }
        self.unknown = {
            plant_stray(root, "part=0/bucket-0/notes.txt"),
            plant_stray(root, "part=0/bucket-0/part-00000-c000.snappy.parquet"),
            plant_stray(root, f"part=0/bucket-0/manifest-{uuid.uuid4()}-0"),
            plant_stray(root, f"manifest/{data_name()}"),
            plant_stray(root, "manifest/random.bin"),
            plant_stray(root, "README.md"),
            plant_stray(root, f"part=0/{data_name()}"),
            plant_stray(root, "snapshot/snapshot-x"),
            plant_stray(root, "index/index-abc-0"),
        }
        self.never_seen = {
            plant_stray(root, f"not_a_table_dir/{data_name()}"),
            plant_stray(root, f"other=1/bucket-0/{data_name()}"),
            plant_stray(root, "snapshot/.expire-journal-17"),
            plant_stray(root, "consumer/consumer-reader"),
        }
        (root / "consumer" / "consumer-reader").write_text('{"nextSnapshot": 1}')
        age_path(root / "consumer" / "consumer-reader", 10 * DAY_S)
        self.expected = self.rolled_back | self.uncommitted | self.planted_old


@pytest.fixture
def scenario(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "t")


# --- exact sets --------------------------------------------------------------------------------------------------


def test_deletes_exactly_the_orphans(scenario: Scenario) -> None:
    before = files_under(scenario.root)
    result = remove_orphan_files(scenario.table.context)

    assert set(result.deleted_paths) == scenario.expected
    assert before - files_under(scenario.root) == scenario.expected
    assert result.orphan_files == len(scenario.expected)
    assert result.orphan_bytes == result.deleted_bytes > 0
    assert set(result.skipped_unknown) == scenario.unknown
    assert not result.failed and not result.dry_run
    # the table and its tag still read in full
    table = Table.open(str(scenario.root))
    assert table.to_arrow().num_rows == 40
    assert table.to_arrow(tag="keep").num_rows == 80
    # nothing is left to do
    again = remove_orphan_files(table.context)
    assert again.orphan_files == 0 and again.deleted_paths == ()


def test_dry_run_lists_exactly_what_the_real_run_deletes(scenario: Scenario) -> None:
    before = files_under(scenario.root)
    dry = remove_orphan_files(scenario.table.context, dry_run=True)
    assert dry.dry_run
    assert files_under(scenario.root) == before
    assert set(dry.deleted_paths) == scenario.expected

    real = remove_orphan_files(scenario.table.context)
    assert real.deleted_paths == dry.deleted_paths
    assert real.orphan_bytes == dry.orphan_bytes
    assert real.removed_dirs == dry.removed_dirs


@pytest.mark.parametrize("parallelism", [1, 2, 16])
def test_plan_does_not_depend_on_parallelism(scenario: Scenario, parallelism: int) -> None:
    plan = plan_orphan_removal(scenario.table.context, parallelism=parallelism)
    assert {o.path for o in plan.orphans} == scenario.expected


def test_cutoff_protects_younger_files(scenario: Scenario) -> None:
    ctx = scenario.table.context
    assert remove_orphan_files(ctx, older_than=timedelta(days=11), dry_run=True).orphan_files == 0
    # the smallest cutoff allowed without force (1 h) still keeps the fresh files and the 15 min old temp file
    result = remove_orphan_files(ctx, older_than=timedelta(hours=1), dry_run=True)
    assert set(result.deleted_paths) == scenario.expected
    # forced to 0, every unreferenced table file goes, even fresh ones; unknown names still never
    forced = remove_orphan_files(ctx, older_than=timedelta(0), force=True, now_ms=int(time.time() * 1000) + 1000)
    assert set(forced.deleted_paths) == scenario.expected | scenario.fresh
    assert scenario.unknown <= files_under(scenario.root)


def test_table_option_sets_the_default_cutoff(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", **{"orphan-files.older-than": "20 d"})
    table.append(id_part_rows(0, 4))
    stray = plant_stray(tmp_path / "t", f"part=0/bucket-0/{data_name()}", days=10)
    assert remove_orphan_files(table.context, dry_run=True).orphan_files == 0
    assert remove_orphan_files(table.context, older_than=timedelta(days=7), dry_run=True).deleted_paths == (stray,)


# --- refused cutoffs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("older_than", [timedelta(minutes=59), timedelta(0)])
def test_cutoff_under_one_hour_needs_force(tmp_path: Path, older_than: timedelta) -> None:
    table = id_part_table(tmp_path / "t")
    table.append(id_part_rows(0, 4))
    with pytest.raises(ValidationError) as refused:
        remove_orphan_files(table.context, older_than=older_than)
    assert str(refused.value) == (  # in Python's words: the keyword arguments to pass
        f"older_than={older_than!r} is under the 1 h minimum: files of writers still running would be deleted; "
        "pass force=True if no writer is running"
    )
    assert remove_orphan_files(table.context, older_than=older_than, force=True).orphan_files == 0


def test_cutoff_in_the_future_is_always_refused(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t")
    for force in (False, True):
        with pytest.raises(ValidationError, match=r"^older_than \(orphan-files.older-than\) must be >= 0 ms and <= "):
            remove_orphan_files(table.context, older_than=timedelta(hours=-2), force=force)


def test_short_table_option_needs_force(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", **{"orphan-files.older-than": "10 min"})
    with pytest.raises(ValidationError):
        remove_orphan_files(table.context)
    remove_orphan_files(table.context, force=True)


@pytest.mark.parametrize("parallelism", [0, -1])
def test_bad_parallelism_is_refused(tmp_path: Path, parallelism: int) -> None:
    table = id_part_table(tmp_path / "t")
    with pytest.raises(ValidationError, match="parallelism"):
        remove_orphan_files(table.context, parallelism=parallelism)


# --- directories -----------------------------------------------------------------------------------------------------


def test_directories_are_never_deleted_recursively(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = id_part_table(root)
    table.append(id_part_rows(0, 8))
    disguised = root / "part=0" / "bucket-0" / data_name()  # a directory named like a data file
    disguised.mkdir()
    plant_stray(root, f"part=0/bucket-0/{disguised.name}/inner")
    (root / "part=0" / "bucket-0" / "subdir").mkdir()
    stray = plant_stray(root, f"part=6/bucket-0/{data_name()}")  # only file of a partition: its dirs may go
    empty_old = root / "part=7" / "bucket-0"
    empty_old.mkdir(parents=True)
    empty_fresh = root / "part=8" / "bucket-0"
    empty_fresh.mkdir(parents=True)
    keep_unknown = plant_stray(root, "part=4/bucket-0/notes.txt")
    for meta in ("tag", "consumer", "statistics", "index"):
        (root / meta).mkdir(exist_ok=True)
    age_files(root, 10 * DAY_S)
    for path in (empty_fresh, empty_fresh.parent):
        age_path(path, 0)
    dirs_before = dirs_under(root)

    result = remove_orphan_files(table.context)

    assert result.deleted_paths == (stray,)
    assert set(result.removed_dirs) == {"part=6/bucket-0", "part=6", "part=7/bucket-0", "part=7"}
    assert dirs_before - dirs_under(root) == set(result.removed_dirs)
    assert (root / "part=0" / "bucket-0" / disguised.name / "inner").exists()
    assert keep_unknown in files_under(root)
    assert root.exists() and (root / "tag").is_dir() and (root / "consumer").is_dir()
    assert Table.open(str(root)).to_arrow().num_rows == 8


def test_files_kept_by_branches(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = id_part_table(root)
    table.append(id_part_rows(0, 8))
    before = files_under(root)
    table.append(id_part_rows(100, 8))  # snapshot 2: copied into a branch, then rolled back in main
    branch_only = {f for f in files_under(root) - before if not f.startswith("snapshot/")}
    branch = root / "branch" / "branch-dev"
    (branch / "schema").mkdir(parents=True)
    (branch / "snapshot").mkdir()
    (branch / "schema" / "schema-0").write_bytes((root / "schema" / "schema-0").read_bytes())
    (branch / "snapshot" / "snapshot-2").write_bytes((root / "snapshot" / "snapshot-2").read_bytes())
    table.append(id_part_rows(200, 8))  # snapshot 3: branch tag only
    tagged = files_under(root) - before - branch_only
    tagged = {f for f in tagged if not f.startswith("snapshot/")}
    (branch / "tag").mkdir()
    (branch / "tag" / "tag-t3").write_bytes((root / "snapshot" / "snapshot-3").read_bytes())
    rollback_to(root, 1, 3)
    stray = plant_stray(root, f"part=1/bucket-0/{data_name()}")
    branch_temp = plant_stray(root, f"branch/branch-dev/snapshot/{temp_name('snapshot-3')}")
    age_files(root, 10 * DAY_S)

    result = remove_orphan_files(table.context)

    assert set(result.deleted_paths) == {stray, branch_temp}
    assert branch_only | tagged <= files_under(root)


def test_empty_table_and_table_without_snapshots(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = id_part_table(root)
    assert remove_orphan_files(table.context).orphan_files == 0
    table.write_files(id_part_rows(0, 4))  # the first commit of the table failed: its files are orphans
    age_files(root, 10 * DAY_S)
    result = remove_orphan_files(table.context)
    assert len(result.deleted_paths) == 4
    assert files_under(root) == {"schema/schema-0"}


def test_result_json(scenario: Scenario) -> None:
    result = remove_orphan_files(scenario.table.context, dry_run=True)
    assert isinstance(result, OrphanResult)
    doc = result.to_json()
    for key in ("orphan_files", "orphan_bytes", "deleted_paths", "dry_run", "skipped_unknown"):
        assert key in doc
    assert doc["dry_run"] is True and doc["orphan_files"] == len(scenario.expected)
    assert sorted(doc["deleted_paths"]) == sorted(scenario.expected)  # type: ignore[call-overload]
    with pytest.raises(AttributeError):
        result.orphan_files = 0  # type: ignore[misc]


def test_manifests_only_a_middle_snapshot_names_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Merged-away manifests are named only by the base lists of the snapshots between the first and the last,
    which the data selection does not read. When an old manifest-like file is still unreferenced after the lists
    that selection reads, every other list is read before anything is called an orphan."""
    from tableformat.cleanup import roots as references

    root = tmp_path / "t"
    table = id_part_table(root, **{"manifest.merge-min-count": "2", "manifest.full-compaction-threshold-size": "1"})
    for i in range(8):
        table.append(id_part_rows(i * 10, 4))
    store = table.context.store
    middle_only = set()
    for sid in range(2, 8):
        middle_only |= {m.file_name for m in store.read_manifest_list(store.read_snapshot(sid).base_manifest_list)}
    for sid in (1, 8):
        snapshot = store.read_snapshot(sid)
        for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list):
            middle_only -= {m.file_name for m in store.read_manifest_list(name)}
    assert middle_only, "the table must have manifests that only middle snapshots name"
    read_lists: list[str] = []
    original = references.References._read_list

    def spy(self: references.References, name: str) -> object:
        read_lists.append(name)
        return original(self, name)

    monkeypatch.setattr(references.References, "_read_list", spy)
    age_files(root, 10 * DAY_S)
    strays = {
        plant_stray(root, f"manifest/manifest-{uuid.uuid4()}-0"),
        plant_stray(root, f"part=1/bucket-0/{data_name()}"),
    }
    before = files_under(root)
    result = remove_orphan_files(table.context)
    assert set(result.deleted_paths) == strays
    assert files_under(root) == before - strays
    every_list = {name for sid in range(1, 9) for name in store.read_snapshot(sid).manifest_lists()}
    assert set(read_lists) == every_list  # the middle base lists were read: old manifests were in question
    for sid in range(1, 9):
        assert table.to_arrow(snapshot_id=sid).num_rows == 4 * sid

    read_lists.clear()  # manifests young again, one old data stray: only the selection's lists are read
    for path in (root / "manifest").iterdir():
        age_path(path, 0)
    stray = plant_stray(root, f"part=2/bucket-0/{data_name()}")
    assert remove_orphan_files(table.context).deleted_paths == (stray,)
    middle_bases = {store.read_snapshot(sid).base_manifest_list for sid in range(2, 8)}
    assert not middle_bases & set(read_lists)
