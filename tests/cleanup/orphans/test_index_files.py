"""Orphan cleanup and check on index files (``index/index-<uuid>-<n>``: deletion vectors, hash indexes; global
index files ``index/<type>-global-index-<uuid>.index``) and index manifests (``manifest/index-manifest-…``), written
in Paimon's formats (tests/support/paimon_index.py): an index file any root's index manifest names is never
proposed, a planted or superseded one is found once old enough, ``check`` lists exactly the dry run's orphans, and an
unreadable index manifest deletes nothing."""

from __future__ import annotations

import uuid
from pathlib import Path

from support.operations import expire_snapshots, remove_orphan_files
from support.orphan_tables import id_part_table, plant_stray
from support.paimon_index import PaimonIndex
from support.pk_files import assert_unreadable_metadata_stops_cleanup_and_check
from support.tables import (
    DAY_S,
    age_files,
    files_under,
)

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cleanup.orphans import OrphanPlan, plan_orphan_removal


def dry_run_and_check(table: Table) -> OrphanPlan:
    plan = plan_orphan_removal(table.context)
    checked = check_table(table.context)
    assert checked.orphan_paths == tuple(o.path for o in plan.orphans)
    assert checked.ok, (checked.missing_files, checked.errors)
    return plan


def proposed(plan: OrphanPlan) -> set[str]:
    return {o.path for o in plan.orphans}


def index_files(root: Path) -> set[str]:
    """Index files in ``index/`` or in bucket directories (``index-file-in-data-file-dir``)."""
    return {f for f in files_under(root) if f.startswith("index/") or "/bucket-0/index-" in f}


def index_manifests(root: Path) -> set[str]:
    return {f for f in files_under(root) if f.startswith("manifest/index-manifest-")}


def data_names(table: Table) -> list[str]:
    return sorted(Path(f.path).name for f in table.files())


def test_index_files_of_every_root_are_kept_and_planted_ones_removed(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100))
    root = Path(table.context.layout.root)
    index = PaimonIndex(table)
    first, second = data_names(table)[:2]
    index.delete_rows({first: [0]})  # snapshot 3: a deletion-vector file
    index.commit([index.hash_index_entry([1, 2, 3], (0,))])  # snapshot 4: a hash index beside it
    index.delete_rows({second: [1]})  # snapshot 5: replaces the first deletion-vector file of that bucket
    live = index_files(root) | index_manifests(root)
    assert len(index_files(root)) == 3 and len(index_manifests(root)) == 3
    age_files(root, 10 * DAY_S)
    u = uuid.uuid4
    orphans = {
        plant_stray(root, f"index/index-{u()}-0"),
        plant_stray(root, f"index/bitmap-global-index-{u()}.index"),
        plant_stray(root, f"manifest/index-manifest-{u()}-0"),
        plant_stray(root, f"manifest/index-manifest-{u()}"),  # pypaimon names index manifests without a counter
    }
    fresh = plant_stray(root, f"index/index-{u()}-1", days=0)
    unknown = {plant_stray(root, "index/index-abc-0"), plant_stray(root, "index/notes.txt")}

    plan = dry_run_and_check(table)

    assert proposed(plan) == orphans and not proposed(plan) & live and fresh not in proposed(plan)
    assert set(plan.skipped_unknown) == unknown
    result = remove_orphan_files(table.context)
    assert set(result.deleted_paths) == orphans
    assert live <= files_under(root) and fresh in files_under(root)
    assert dry_run_and_check(table).orphans == ()


def test_index_files_only_expired_snapshots_named_become_orphans(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100))
    root = Path(table.context.layout.root)
    index = PaimonIndex(table)
    first = data_names(table)[0]
    index.delete_rows({first: [0]})  # snapshot 3
    before = index_files(root) | index_manifests(root)
    index.delete_rows({first: [1]})  # snapshot 4: the vector file of that bucket replaced
    kept_now = (index_files(root) | index_manifests(root)) - before
    expire_snapshots(table.context, retain_min=1, retain_max=1)
    age_files(root, 10 * DAY_S)

    plan = dry_run_and_check(table)

    left = {p for p in before if (root / p).exists()}  # whatever expiration itself removed of them
    assert proposed(plan) & (before | kept_now) == left
    remove_orphan_files(table.context)
    assert not before & files_under(root) and kept_now <= files_under(root)


def test_check_verifies_index_files(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100))
    root = Path(table.context.layout.root)
    index = PaimonIndex(table)
    index.delete_rows({data_names(table)[0]: [0]})
    (victim,) = index_files(root)
    (root / victim).write_bytes(b"short")

    checked = check_table(table.context)

    assert [(p.path, p.kind, p.expected_size == p.actual_size) for p in checked.size_mismatches] == [
        (victim, "index", False)
    ]
    (root / victim).unlink()
    assert [(p.path, p.kind) for p in check_table(table.context).missing_files] == [(victim, "index")]


def test_unreadable_index_manifest_deletes_nothing(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100))
    root = Path(table.context.layout.root)
    index = PaimonIndex(table)
    index.delete_rows({data_names(table)[0]: [0]})
    (manifest,) = index_manifests(root)
    (root / manifest).write_bytes(b"not avro")
    age_files(root, 10 * DAY_S)
    plant_stray(root, f"index/index-{uuid.uuid4()}-0")
    assert_unreadable_metadata_stops_cleanup_and_check(table, manifest)


def test_index_files_in_the_data_file_directory(tmp_path: Path) -> None:
    table = id_part_table(tmp_path / "t", appends=(0, 100), **{"index-file-in-data-file-dir": "true"})
    root = Path(table.context.layout.root)
    index = PaimonIndex(table, in_data_file_dir=True)
    index.delete_rows({data_names(table)[0]: [0]})
    (live,) = {f for f in index_files(root) if not f.startswith("index/")}
    age_files(root, 10 * DAY_S)
    orphan = plant_stray(root, f"{live.rpartition('/')[0]}/index-{uuid.uuid4()}-0")

    plan = dry_run_and_check(table)

    assert proposed(plan) == {orphan}
    remove_orphan_files(table.context)
    assert live in files_under(root) and orphan not in files_under(root)
