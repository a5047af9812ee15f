"""What expiration deletes: exact file sets after append / overwrite / drop histories, tags, dry runs, failures."""

from __future__ import annotations

import datetime as dt
import shutil
import threading

import pytest
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, files_under, reachable_files, rows_of

from tableformat.cleanup.snapshots import execute_expiration, plan_expiration
from tableformat.cleanup.snapshots.config import ExpireConfig
from tableformat.errors import MaintenanceError
from tableformat.table import Table

EVERYTHING = {"retain_min": 1, "time_retained": 0, "limit": 1000}


def expire(kit, table: Table, **kwargs):
    return expire_snapshots(table.context, **{**EVERYTHING, "now_ms": FAR_FUTURE_MS, **kwargs})


def data_paths(table: Table, snapshot_id: int, part: int | None = None) -> set[str]:
    root = table.context.layout.root + "/"
    return {
        f.path[len(root) :]
        for f in table.files(snapshot_id)
        if part is None or f.partition["part"] == part
    }


def assert_exact(kit, table: Table, before: set[str], result) -> None:
    """Deleted = exactly what the result reports; what is left = exactly what retained snapshots and tags need."""
    after = files_under(kit.root(table))
    assert set(result.deleted_paths) == before - after
    assert len(result.deleted_paths) == len(set(result.deleted_paths))
    assert after == reachable_files(table.context)


def test_append_only_deletes_metadata_only(kit) -> None:
    table = kit.table()
    for _ in range(12):
        table.append(kit.rows(4))
    expired = [table.snapshot(i) for i in range(1, 12)]
    before = files_under(kit.root(table))
    rows = kit.snapshot_rows(table)
    result = expire(kit, table)
    assert result.expired_snapshot_ids == tuple(range(1, 12))
    assert result.deleted_data_files == 0 and result.deleted_manifests == 0
    assert {p for p in result.deleted_paths if p.startswith("manifest/")} == {
        f"manifest/{n}" for s in expired for n in (s.base_manifest_list, s.delta_manifest_list)
    }
    assert result.deleted_manifest_lists == 22
    assert kit.snapshot_rows(table) == {12: rows[12]}
    assert_exact(kit, table, before, result)


def test_overwrite_history_deletes_replaced_files(kit) -> None:
    table = kit.table()
    table.append(kit.rows(4))
    table.append(kit.rows(4))
    replaced = data_paths(table, 2, part=0)
    table.overwrite(kit.rows(3, parts=(0,)), {"part": 0})
    table.append(kit.rows(2))
    before = files_under(kit.root(table))
    rows = kit.snapshot_rows(table)
    result = expire(kit, table, retain_min=2)
    assert result.expired_snapshot_ids == (1, 2)
    assert {p for p in result.deleted_paths if "bucket-" in p} == replaced
    assert result.deleted_data_files == len(replaced) == 2
    assert kit.snapshot_rows(table) == {3: rows[3], 4: rows[4]}
    assert_exact(kit, table, before, result)


def test_drop_partition_frees_its_files_only_when_the_drop_expires(kit) -> None:
    table = kit.table()
    for _ in range(5):
        table.append(kit.rows(4, parts=(0, 1)))
    dropped = data_paths(table, 5, part=1)
    table.drop_partitions([{"part": 1}])  # snapshot 6
    table.append(kit.rows(2, parts=(0,)))
    first = expire(kit, table, limit=5)  # expires 1..5: the drop (delta of 6) is processed with end = 6
    assert first.expired_snapshot_ids == (1, 2, 3, 4, 5)
    assert {p for p in first.deleted_paths if "bucket-" in p} == dropped
    assert not any((kit.root(table) / p).exists() for p in dropped)
    assert files_under(kit.root(table)) == reachable_files(table.context)


def test_bytes_and_counts_match_the_files(kit) -> None:
    table = kit.table()
    for _ in range(3):
        table.append(kit.rows(4))
    table.drop_partitions([{"part": 0}])
    root = kit.root(table)
    sizes = {p: (root / p).stat().st_size for p in files_under(root)}
    result = expire(kit, table)
    assert result.deleted_bytes == sum(sizes[p] for p in result.deleted_paths)
    assert result.deleted_data_files == sum(1 for p in result.deleted_paths if "bucket-" in p) == 3
    assert result.deleted_manifest_lists == sum(1 for p in result.deleted_paths if "manifest-list-" in p)
    assert result.deleted_manifests == sum(
        1 for p in result.deleted_paths if p.startswith("manifest/manifest-") and "manifest-list-" not in p
    )


def test_merged_manifests_are_deleted_once_unreferenced(kit) -> None:
    table = kit.table(**{"manifest.merge-min-count": "2", "manifest.target-file-size": "1 mb"})
    for _ in range(8):
        table.append(kit.rows(2))
    table.overwrite(kit.rows(2, parts=(1,)), {"part": 1})
    for _ in range(3):
        table.append(kit.rows(2))
    before = files_under(kit.root(table))
    rows = kit.snapshot_rows(table)
    result = expire(kit, table, retain_min=2)
    assert result.deleted_manifests > 0
    assert kit.snapshot_rows(table) == {i: rows[i] for i in (11, 12)}
    assert_exact(kit, table, before, result)


def test_tags_protect_their_files_then_expire_by_time(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(4))
    table.create_tag("keep", 2)
    table.create_tag("ttl", 3, time_retained=dt.timedelta(hours=1))
    tag_rows = {name: rows_of(table.to_arrow(tag=name)) for name in ("keep", "ttl")}
    table.drop_partitions([{"part": 0}])  # snapshot 5
    table.append(kit.rows(2, parts=(1,)))
    dropped = data_paths(table, 4, part=0)
    protected = data_paths(table, 3, part=0)
    kept = data_paths(table, 2)
    before = files_under(kit.root(table))
    # Tags still young: everything both tags hold survives.
    result = expire_snapshots(table.context, **{**EVERYTHING, "now_ms": table.snapshot(6).time_millis + 1})
    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5)
    assert result.expired_tags == ()
    assert {p for p in result.deleted_paths if "bucket-" in p} == dropped - protected
    assert {name: rows_of(table.to_arrow(tag=name)) for name in ("keep", "ttl")} == tag_rows
    assert_exact(kit, table, before, result)
    # Far later the ttl tag has expired: its tag file and the files only it held go.
    before = files_under(kit.root(table))
    result = expire(kit, table)
    assert result.expired_tags == ("ttl",)
    assert "tag/tag-ttl" in result.deleted_paths
    assert {p for p in result.deleted_paths if "bucket-" in p} == protected - kept
    assert [t.name for t in table.tags()] == ["keep"]
    assert rows_of(table.to_arrow(tag="keep")) == tag_rows["keep"]
    assert_exact(kit, table, before, result)


def test_dry_run_lists_exactly_what_the_real_run_deletes(kit, tmp_path) -> None:
    table = kit.table(name="orig")
    for i in range(6):
        table.append(kit.rows(4))
        if i == 3:
            table.drop_partitions([{"part": 1}])
    table.create_tag("t", 2)
    root = kit.root(table)
    before = files_under(root)
    dry = expire(kit, table, retain_min=2, dry_run=True)
    assert dry.dry_run and files_under(root) == before
    real = expire(kit, table, retain_min=2)
    assert not real.dry_run
    assert sorted(dry.deleted_paths) == sorted(real.deleted_paths)
    assert (dry.expired_snapshot_ids, dry.deleted_data_files, dry.deleted_manifests, dry.deleted_manifest_lists,
            dry.deleted_bytes, dry.earliest_snapshot) == (
        real.expired_snapshot_ids, real.deleted_data_files, real.deleted_manifests, real.deleted_manifest_lists,
        real.deleted_bytes, real.earliest_snapshot)


def test_dry_run_on_a_copy_matches(kit, tmp_path) -> None:
    table = kit.table(name="a")
    for i in range(8):
        table.append(kit.rows(4))
        if i in (2, 5):
            table.overwrite(kit.rows(2, parts=(0,)), {"part": 0})
    shutil.copytree(kit.root(table), tmp_path / "b")
    copy = Table.open(str(tmp_path / "b"))
    dry = expire(kit, table, retain_min=3, dry_run=True)
    real = expire(kit, copy, retain_min=3)
    run_only = {"dry_run": None, "run_id": None, "requests": None, "counted_requests": None, "estimated_cost_usd": None}
    assert dry.to_json() | run_only == real.to_json() | run_only  # the requests: the dry run's estimate, the run's


def test_result_json_has_the_documented_keys(kit) -> None:
    table = kit.table()
    table.append(kit.rows(2))
    table.append(kit.rows(2))
    document = expire(kit, table).to_json()
    for key in ("expired_snapshots", "earliest_snapshot_id", "deleted_data_files", "deleted_manifest_files",
                "deleted_manifest_list_files", "deleted_bytes", "dry_run", "deleted_paths", "deleted_files",
                "backlog"):  # fmt: skip
        assert key in document
    assert document["expired_snapshots"] == 1 and document["earliest_snapshot_id"] == 2
    assert document["deleted_files"] == len(document["deleted_paths"])


def corrupt(path) -> None:
    with open(path, "wb") as handle:
        handle.write(b"\x00garbage")


def test_unreadable_delta_manifest_deletes_nothing(kit) -> None:
    table = kit.table()
    for _ in range(3):
        table.append(kit.rows(2))
    table.drop_partitions([{"part": 0}])
    table.append(kit.rows(2))
    drop = table.snapshot(4)
    manifest = table.context.store.read_manifest_list(drop.delta_manifest_list)[0].file_name
    corrupt(table.context.layout.manifest_file(manifest))
    before = files_under(kit.root(table))
    with pytest.raises(MaintenanceError, match=manifest):
        expire(kit, table)
    assert files_under(kit.root(table)) == before


def test_unreadable_manifest_list_deletes_nothing(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(2))
    name = table.snapshot(2).base_manifest_list
    (kit.root(table) / "manifest" / name).unlink()
    before = files_under(kit.root(table))
    with pytest.raises(MaintenanceError, match=name):
        expire(kit, table)
    assert files_under(kit.root(table)) == before


def test_unreadable_tag_deletes_nothing(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(2))
    table.create_tag("t", 2)
    table.drop_partitions([{"part": 1}])
    corrupt(table.context.layout.tag_file("t"))
    before = files_under(kit.root(table))
    with pytest.raises(MaintenanceError, match="tag-t"):
        expire(kit, table)
    assert files_under(kit.root(table)) == before


def test_empty_partition_directories_are_removed_when_enabled(kit) -> None:
    table = kit.table(**{"snapshot.clean-empty-directories": "true"})
    table.append(kit.rows(4, parts=(0, 1)))
    table.drop_partitions([{"part": 1}])
    table.append(kit.rows(2, parts=(0,)))
    result = expire(kit, table)
    root = kit.root(table)
    assert not (root / "part=1").exists()
    assert (root / "part=0" / "bucket-0").is_dir()
    assert set(result.removed_dirs) == {"part=1/bucket-0", "part=1"}


def test_empty_directories_stay_by_default(kit) -> None:
    table = kit.table()
    table.append(kit.rows(4, parts=(0, 1)))
    table.drop_partitions([{"part": 1}])
    table.append(kit.rows(2, parts=(0,)))
    expire(kit, table)
    assert (kit.root(table) / "part=1" / "bucket-0").is_dir()


def test_tag_created_after_planning_is_honoured(kit) -> None:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(4))
    table.drop_partitions([{"part": 0}])
    table.append(kit.rows(2, parts=(1,)))
    config = ExpireConfig(retain_min=1, retain_max=100, time_retained_ms=0, limit=100)
    plan = plan_expiration(table.context, config, FAR_FUTURE_MS)
    assert 3 in plan.expired_snapshots
    table.create_tag("late", 3)  # between planning and deleting
    expected = rows_of(table.to_arrow(tag="late"))
    late_files = data_paths(table, 3)
    result = execute_expiration(table.context, plan, config=config)
    assert rows_of(table.to_arrow(tag="late")) == expected
    assert not set(result.deleted_paths) & late_files
    assert files_under(kit.root(table)) == reachable_files(table.context)


def test_two_expirers_racing_keep_every_retained_file(kit) -> None:
    table = kit.table()
    for i in range(16):
        table.append(kit.rows(4))
        if i % 5 == 4:
            table.drop_partitions([{"part": i % 2}])
    table.create_tag("t", 7)
    rows = kit.snapshot_rows(table)
    tag_rows = rows_of(table.to_arrow(tag="t"))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            other = Table.open(str(kit.root(table)))
            for _ in range(3):
                expire(kit, other, retain_min=4, limit=5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    expire(kit, table, retain_min=4)  # finishes whatever a racing run left
    assert kit.snapshot_rows(table) == {i: rows[i] for i in range(max(rows) - 3, max(rows) + 1)}
    assert rows_of(table.to_arrow(tag="t")) == tag_rows
    assert files_under(kit.root(table)) == reachable_files(table.context)
