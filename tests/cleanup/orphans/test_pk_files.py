"""Orphan cleanup and check on the files primary-key tables add: changelog data files, changelog manifests and
lists, file-index sidecars and statistics files. For each kind: a planted orphan is found and removed when old
enough, a referenced one is never proposed, and ``check`` lists exactly the orphans of the dry run."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.orphan_tables import id_part_table, plant_stray
from support.pk_files import (
    assert_unreadable_metadata_stops_cleanup_and_check,
    attach_changelog,
    attach_statistics,
    copy_snapshot_to_changelog,
)
from support.tables import (
    DAY_S,
    age_files,
    files_under,
)

from tableformat import Table
from tableformat.cleanup.check import CheckResult, check_table
from tableformat.cleanup.orphans import OrphanPlan, plan_orphan_removal


def dry_run_and_check(table: Table) -> tuple[OrphanPlan, CheckResult]:
    plan = plan_orphan_removal(table.context)
    checked = check_table(table.context)
    assert checked.orphan_paths == tuple(o.path for o in plan.orphans)
    assert checked.orphan_files == len(plan.orphans) and checked.orphan_bytes == plan.orphan_bytes
    assert checked.skipped_unknown == plan.skipped_unknown
    return plan, checked


def proposed(plan: OrphanPlan) -> set[str]:
    return {o.path for o in plan.orphans}


def uid() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return id_part_table(tmp_path / "t", appends=(0, 100, 200))


def root_of(table: Table) -> Path:
    return Path(table.context.layout.root)


# --- changelog data files, manifests and lists ------------------------------------------------------------------


def test_changelog_files_of_every_root_are_kept_and_planted_ones_removed(table: Table) -> None:
    root = root_of(table)
    live = attach_changelog(table, 2, (0,), sidecars=True) | attach_changelog(table, 3, (1,), files=3)
    age_files(root, 10 * DAY_S)
    orphans = {
        plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet"),
        plant_stray(root, f"part=1/bucket-0/changelog-{uid()}-1.orc"),
        plant_stray(root, f"part=1/bucket-0/changelog-{uid()}-0.parquet.index"),
        plant_stray(root, f"part=0/bucket-0/data-{uid()}-0.parquet-1.index"),  # a rewritten file index
        plant_stray(root, f"manifest/manifest-{uid()}-changelog-0"),  # pypaimon's changelog manifest name
        plant_stray(root, f"manifest/manifest-list-{uid()}-changelog"),
    }
    fresh = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet", days=0)
    unknown = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.txt")

    plan, checked = dry_run_and_check(table)

    assert proposed(plan) == orphans
    assert not proposed(plan) & live and fresh not in proposed(plan)
    assert plan.skipped_unknown == (unknown,)
    assert checked.ok and checked.missing_files == ()
    before = files_under(root)
    result = remove_orphan_files(table.context)
    assert set(result.deleted_paths) == orphans
    assert before - files_under(root) == orphans
    assert live <= files_under(root)
    assert dry_run_and_check(table)[0].orphans == ()


def test_check_verifies_changelog_files_and_names_their_kind(table: Table) -> None:
    root = root_of(table)
    live = attach_changelog(table, 3, (1,), files=2, sidecars=True)
    victim = sorted(p for p in live if p.endswith(".parquet"))[0]
    (root / victim).unlink()

    checked = check_table(table.context)

    assert not checked.ok
    assert [(p.path, p.kind, p.referenced_by) for p in checked.missing_files] == [(victim, "changelog", "snapshot 3")]


def test_changelog_of_an_expired_snapshot_is_found_and_check_agrees(table: Table) -> None:
    root = root_of(table)
    expired = attach_changelog(table, 1, (0,), files=2)
    kept = attach_changelog(table, 3, (1,), files=2)
    expire_snapshots(table.context, retain_min=1, retain_max=1)
    age_files(root, 10 * DAY_S)

    plan, checked = dry_run_and_check(table)

    # whatever expiration itself deleted of snapshot 1's changelog, every remaining file of it is an orphan
    left = {p for p in expired if (root / p).exists()}
    assert left <= proposed(plan)
    assert not proposed(plan) & kept
    assert checked.ok
    remove_orphan_files(table.context)
    assert not expired & files_under(root) and kept <= files_under(root)


def test_a_changelog_root_keeps_its_files_after_its_snapshot_is_gone(table: Table) -> None:
    root = root_of(table)
    decoupled = attach_changelog(table, 2, (0,), files=2)
    changelog_root = copy_snapshot_to_changelog(table, 2)
    for sid in (1, 2):
        (root / "snapshot" / f"snapshot-{sid}").unlink()
    age_files(root, 10 * DAY_S)
    orphan = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet")

    plan, checked = dry_run_and_check(table)

    assert orphan in proposed(plan) and not proposed(plan) & decoupled
    assert checked.ok and checked.roots == 2  # snapshot 3 and changelog 2
    remove_orphan_files(table.context)
    assert decoupled <= files_under(root) and (root / changelog_root).exists()


def test_changelog_file_prefix_option_decides_which_names_are_changelog_files(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100, 200), **{"changelog-file.prefix": "cl-"})
    root = root_of(table)
    live = attach_changelog(table, 3, (1,), files=2, prefix="cl-")
    age_files(root, 10 * DAY_S)
    orphan = plant_stray(root, f"part=0/bucket-0/cl-{uid()}-0.parquet")
    other = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet")

    plan, _ = dry_run_and_check(table)

    assert proposed(plan) == {orphan} and not proposed(plan) & live
    assert plan.skipped_unknown == (other,)


def test_unreadable_changelog_manifest_deletes_nothing(table: Table) -> None:
    root = root_of(table)
    live = attach_changelog(table, 3, (1,), files=2)
    manifest = next(p for p in live if p.startswith("manifest/manifest-") and not p.startswith("manifest/manifest-l"))
    (root / manifest).write_bytes(b"not avro")
    age_files(root, 10 * DAY_S)
    plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet")
    assert_unreadable_metadata_stops_cleanup_and_check(table, manifest)


def test_check_takes_the_cutoff_remove_orphans_takes(table: Table) -> None:
    root = root_of(table)
    attach_changelog(table, 1, (0,), files=1)
    fresh = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet", days=0)

    default = check_table(table.context)
    now = check_table(table.context, older_than=timedelta(0), force=True)
    dry = remove_orphan_files(table.context, older_than=timedelta(0), force=True, dry_run=True)

    assert default.orphan_paths == ()
    assert fresh in now.orphan_paths and now.orphan_paths == dry.deleted_paths
    assert now.to_json()["orphan_paths"] == list(now.orphan_paths)


# --- statistics files -------------------------------------------------------------------------------------------


def test_statistics_of_every_root_are_kept_and_planted_ones_removed(table: Table) -> None:
    root = root_of(table)
    live = {attach_statistics(table, 2), attach_statistics(table, 3)}
    table.create_tag("t1", 2)
    age_files(root, 10 * DAY_S)
    orphan = plant_stray(root, f"statistics/stat-{uid()}-0")
    fresh = plant_stray(root, f"statistics/stat-{uid()}-1", days=0)
    unknown = plant_stray(root, "statistics/notes.txt")

    plan, checked = dry_run_and_check(table)

    assert proposed(plan) == {orphan} and fresh not in proposed(plan)
    assert plan.skipped_unknown == (unknown,)
    assert checked.ok
    (root / sorted(live)[0]).unlink()
    assert [p.kind for p in check_table(table.context).missing_files] == ["statistics"]


def test_statistics_of_an_expired_snapshot_become_an_orphan(table: Table) -> None:
    root = root_of(table)
    old = attach_statistics(table, 1)
    kept = attach_statistics(table, 3)
    expire_snapshots(table.context, retain_min=1, retain_max=1)
    age_files(root, 10 * DAY_S)

    plan, _ = dry_run_and_check(table)

    assert (old in proposed(plan)) == (root / old).exists()
    assert kept not in proposed(plan)


def test_check_cli_takes_older_than_as_remove_orphans_does(table: Table) -> None:
    from click.testing import CliRunner

    from tableformat.cli.main import cli

    root = root_of(table)
    fresh = plant_stray(root, f"part=0/bucket-0/changelog-{uid()}-0.parquet", days=0.5)
    runner = CliRunner()
    refused = runner.invoke(cli, ["check", str(root), "--older-than", "10m"])
    assert refused.exit_code == 2 and "--force" in refused.output
    checked = json.loads(runner.invoke(cli, ["check", str(root), "--older-than", "1h", "--json"]).stdout)
    dry = json.loads(
        runner.invoke(cli, ["remove-orphans", str(root), "--older-than", "1h", "--dry-run", "--json"]).stdout
    )
    assert checked["orphan_paths"] == dry["deleted_paths"] == [fresh]
    text = runner.invoke(cli, ["check", str(root), "--older-than", "1h"]).stdout
    assert f"orphans:\n  {fresh}\n" in text
