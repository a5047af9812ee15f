"""Maintenance with Spark: expiration after each Spark commit, maintain(), distributed orphan cleanup."""

from __future__ import annotations

import shutil
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.ci import optional

optional("pyspark")

from spark_support import data_files_on_disk
from support.inventories import local_rows, write_plain_list
from support.operations import remove_orphan_files as local_remove_orphan_files
from support.tables import DAY_S, age_files, paths_under

from tableformat import MaintenanceError, Table
from tableformat.cleanup.snapshots.journal import journal_path
from tableformat.spark import maintain, remove_orphan_files
from tableformat.spark.maintenance import run_distributed_orphan_cleanup

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

DAY_MS = 86_400_000


def _three_writes(spark: Any, path: str, **table_options: str) -> None:
    """Append A, overwrite with B (A becomes unreferenced by the latest snapshot), append C."""
    for mode, ids in (("append", [1, 2]), ("overwrite", [3]), ("append", [4])):
        writer = spark.createDataFrame([(i, "d1") for i in ids], "id long, dt string").write.format("tablefmt")
        writer = writer.mode(mode).option("partitionBy", "dt")
        for key, value in table_options.items():
            writer = writer.option(key, value)
        writer.save(path)


def _referenced(table: Table) -> set[str]:
    return {f.path for s in table.snapshots() for f in table.files(s.id)}


def test_commit_hook_expires_per_table_options(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _three_writes(spark, path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2"})
    table = Table.open(path)
    assert [s.id for s in table.snapshots()] == [2, 3]  # snapshot 1 expired by the hook after the third commit
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == [3, 4]
    assert data_files_on_disk(path) == _referenced(table)  # A's file, deleted by snapshot 2, is gone
    assert len(data_files_on_disk(path)) == 2


def test_maintain_runs_expiration_of_a_write_only_table(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    options = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "write-only": "true"}
    _three_writes(spark, path, **options)
    table = Table.open(path)
    assert [s.id for s in table.snapshots()] == [1, 2, 3]  # write-only: commits never expire
    assert len(data_files_on_disk(path)) == 4  # A was written by two tasks
    report = maintain(spark, path, remove_orphans=True, older_than=timedelta(hours=1))
    assert report.expiration.expired_snapshot_ids == (1,)
    assert report.expiration.deleted_data_files == 2
    assert report.orphans is not None and report.orphans.deleted_paths == ()  # every leftover is fresh
    assert [s.id for s in table.snapshots()] == [2, 3]
    assert data_files_on_disk(path) == _referenced(table)
    assert len(data_files_on_disk(path)) == 2


def _plant(table_dir: Path, rel: str, size: int = 10) -> str:
    target = table_dir / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"x" * size)
    return rel


def test_distributed_orphan_cleanup_deletes_exactly_what_the_local_cleaner_deletes(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "source"
    table = Table.create(str(source), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]}))
    table.overwrite(pa.table({"id": [4], "dt": ["b"]}), partition={"dt": "b"})
    table.create_tag("t1")
    table.append(pa.table({"id": [5], "dt": ["c"]}))
    now_ms = int(time.time() * 1000)
    old_orphans = {
        _plant(source, f"dt=a/bucket-0/data-{uuid.uuid4()}-0.parquet", 100),
        _plant(source, f"dt=zz/bucket-0/data-{uuid.uuid4()}-0.parquet", 200),  # a partition no snapshot knows
        _plant(source, f"manifest/manifest-{uuid.uuid4()}-0", 30),
        _plant(source, f"manifest/manifest-list-{uuid.uuid4()}-0", 40),
        _plant(source, f"snapshot/.snapshot-9.{uuid.uuid4()}.tmp", 50),
    }
    unknown = {_plant(source, "dt=a/bucket-0/notes.txt"), _plant(source, "manifest/README")}
    age_files(source, 2 * DAY_S)  # everything old: referenced files must survive by reference
    young = _plant(source, f"dt=c/bucket-0/data-{uuid.uuid4()}-0.parquet")  # unreferenced but fresh: kept
    local_copy, spark_copy = tmp_path / "local", tmp_path / "spark"
    shutil.copytree(source, local_copy)
    shutil.copytree(source, spark_copy)

    guard = timedelta(days=1)
    local = local_remove_orphan_files(Table.open(str(local_copy)).context, older_than=guard, now_ms=now_ms)
    preview = remove_orphan_files(spark, str(spark_copy), older_than=guard, dry_run=True, now_ms=now_ms)
    assert paths_under(spark_copy) == paths_under(source)  # the dry run deleted nothing
    run = run_distributed_orphan_cleanup(spark, str(spark_copy), older_than=guard, parallelism=2, now_ms=now_ms)
    distributed = run.result
    # executors listed every directory the census walked (the root, snapshot/ schema/ tag/ manifest/, 4 partitions,
    # 4 buckets) and deleted the 5 orphans in one batch (the driver lists only the roots' directories, again,
    # when it reads the references)
    assert (run.prelisted_dirs, run.served_dirs, run.delete_jobs) == (13, 13, 1)

    assert set(local.deleted_paths) == old_orphans
    assert distributed.deleted_paths == local.deleted_paths == preview.deleted_paths
    assert (distributed.orphan_files, distributed.orphan_bytes, distributed.deleted_bytes) == (5, 420, 420)
    assert (local.orphan_files, local.orphan_bytes, local.deleted_bytes) == (5, 420, 420)
    assert set(distributed.skipped_unknown) == set(local.skipped_unknown) == unknown
    assert distributed.removed_dirs == local.removed_dirs == ("dt=zz/bucket-0", "dt=zz")
    assert distributed.failed == local.failed == ()
    assert paths_under(spark_copy) == paths_under(local_copy)
    assert young in paths_under(spark_copy)
    after = Table.open(str(spark_copy))
    assert sorted(r["id"] for r in after.to_arrow().to_pylist()) == [1, 2, 4, 5]
    assert sorted(r["id"] for r in after.to_arrow(tag="t1").to_pylist()) == [1, 2, 4]
    assert sorted(r["id"] for r in after.to_arrow(snapshot_id=1).to_pylist()) == [1, 2, 3]


def test_failing_hook_never_fails_the_job_nor_removes_its_files(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    frame = spark.createDataFrame([(1, "d1"), (2, "d2")], "id long, dt string")
    frame.write.format("tablefmt").mode("append").option("partitionBy", "dt").save(path)
    table = Table.open(path)
    broken = journal_path(table.context, "broken")  # expiration stops on an unreadable journal: the hook fails
    table.context.io.write_bytes(broken, b"not a journal")
    frame.write.format("tablefmt").mode("append").save(path)  # must succeed although its hook raised
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == [1, 1, 2, 2]
    assert data_files_on_disk(path) == _referenced(table)
    with pytest.raises(MaintenanceError, match="unreadable"):  # the same maintenance on demand does raise
        maintain(spark, path)


def test_distributed_orphan_cleanup_from_a_file_list_lists_nothing_on_executors(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "t"
    table = Table.create(str(source), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]}))
    table.overwrite(pa.table({"id": [4], "dt": ["b"]}), partition={"dt": "b"})
    orphans = {
        _plant(source, f"dt=a/bucket-0/data-{uuid.uuid4()}-0.parquet", 100),
        _plant(source, f"dt=b/bucket-0/data-{uuid.uuid4()}-0.parquet", 100),
        _plant(source, f"manifest/manifest-{uuid.uuid4()}-0", 30),
    }
    age_files(source, 2 * DAY_S)
    listed = write_plain_list(tmp_path / "files.csv", local_rows(source), file_format="csv")
    guard = timedelta(days=1)
    preview = local_remove_orphan_files(table.context, older_than=guard, dry_run=True)
    assert orphans <= set(preview.deleted_paths)
    run = run_distributed_orphan_cleanup(spark, str(source), older_than=guard, parallelism=2, file_list=str(listed))
    assert (run.prelisted_dirs, run.served_dirs, run.delete_jobs) == (0, 0, 1)  # no executor listing; one delete job
    assert run.result.deleted_paths == preview.deleted_paths and run.result.failed == ()
    assert not any((source / rel).exists() for rel in preview.deleted_paths)
    assert sorted(r["id"] for r in Table.open(str(source)).to_arrow().to_pylist()) == [1, 2, 4]


def test_distributed_orphan_cleanup_stops_at_max_files_like_the_local_cleaner(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "t"
    table = Table.create(str(source), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    table.append(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]}))
    strays = {_plant(source, f"dt={'ab'[n % 2]}/bucket-0/data-{uuid.uuid4()}-0.parquet", 10) for n in range(5)}
    age_files(source, 2 * DAY_S)
    listed = write_plain_list(tmp_path / "files.csv", local_rows(source), file_format="csv")
    guard = timedelta(days=1)
    preview = local_remove_orphan_files(  # which 2 depends on the order of the source: the same list here
        table.context, older_than=guard, dry_run=True, max_files=2, file_list=str(listed)
    )
    assert len(preview.deleted_paths) == 2 and preview.backlog == 3 and set(preview.deleted_paths) <= strays
    first = remove_orphan_files(spark, str(source), older_than=guard, file_list=str(listed), max_files=2)
    assert first.deleted_paths == preview.deleted_paths and first.backlog == 3 and first.failed == ()
    rest = remove_orphan_files(spark, str(source), older_than=guard, file_list=str(listed), max_files=3)
    assert set(rest.deleted_paths) == strays - set(first.deleted_paths) and rest.backlog == 0
    assert "2 file(s) the file list names were already gone (not orphans)" in rest.notes
    assert not any((source / rel).exists() for rel in strays)
    assert sorted(r["id"] for r in Table.open(str(source)).to_arrow().to_pylist()) == [1, 2, 3]


def test_executors_read_the_manifests_and_an_unreadable_one_deletes_nothing(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "t"
    table = Table.create(str(source), pa.schema([("id", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    for start in range(0, 12, 3):
        table.append(pa.table({"id": [start, start + 1, start + 2], "dt": ["a", "b", "a"]}))
    table.overwrite(pa.table({"id": [100], "dt": ["b"]}), partition={"dt": "b"})  # DELETE entries too
    strays = {_plant(source, f"dt={'ab'[n % 2]}/bucket-0/data-{uuid.uuid4()}-0.parquet", 10) for n in range(3)}
    age_files(source, 2 * DAY_S)
    listed = write_plain_list(tmp_path / "files.csv", local_rows(source), file_format="csv")
    guard = timedelta(days=1)
    local = local_remove_orphan_files(table.context, older_than=guard, dry_run=True, file_list=str(listed))
    assert set(local.deleted_paths) == strays
    run = run_distributed_orphan_cleanup(spark, str(source), older_than=guard, dry_run=True, file_list=str(listed))
    assert run.result.deleted_paths == local.deleted_paths
    manifests = [p for p in (source / "manifest").iterdir() if not p.name.startswith(("manifest-list-", "index-"))]
    assert 1 <= run.manifests_read_on_executors <= len(manifests)
    for path in manifests:  # every manifest damaged: whichever the executors read fails the run
        path.write_bytes(b"not an avro file")
    before = paths_under(source)
    with pytest.raises(MaintenanceError, match="nothing was deleted") as raised:
        remove_orphan_files(spark, str(source), older_than=guard, file_list=str(listed))
    assert "on executors failed: tableformat.errors.CorruptMetadataError: " in str(raised.value)  # one line, the cause
    assert "\n" not in str(raised.value)
    assert paths_under(source) == before
