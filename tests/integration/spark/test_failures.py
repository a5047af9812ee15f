"""Task retries, failed jobs and a commit that raises after its snapshot landed (the session runs local[2,3])."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from support.ci import optional

optional("pyspark")

from spark_support import FAILING_BATCH, FaultySource, data_files_on_disk, rows

from tableformat import Table

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

ROWS = 200
BATCH_ROWS = 10


@pytest.fixture(scope="module")
def faulty(spark: Any) -> Any:
    """The session with the fault-injecting source registered and small Arrow batches (one file per batch)."""
    spark.dataSource.register(FaultySource)
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))
    yield spark
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)


def _write(spark: Any, path: str, markers: Path, fault: str, start: int = 0) -> None:
    frame = spark.range(start, start + ROWS, numPartitions=2).selectExpr("id", "cast(id % 2 as int) as p")
    (
        frame.write.format("tablefmt_faulty")
        .mode("append")
        .option("partitionBy", "p")
        .option("write-buffer-size", "1 b")
        .option("fault", fault)
        .option("fault.marker-dir", str(markers))
        .save(path)
    )


def _markers(markers: Path, prefix: str) -> list[str]:
    return sorted(n for n in os.listdir(markers) if n.startswith(prefix))


def test_task_retried_after_failure_leaves_no_orphan_and_no_duplicate(faulty: Any, tmp_path: Path) -> None:
    path, markers = str(tmp_path / "t"), tmp_path / "markers"
    markers.mkdir()
    _write(faulty, path, markers, "task-once")
    assert len(_markers(markers, "task-failure-0-")) == 1  # attempt 0 of task 0 failed after writing files
    assert _markers(markers, "abort-") == []
    table = Table.open(path)
    assert len(table.snapshots()) == 1
    ids = sorted(r["id"] for r in table.to_arrow().to_pylist())
    assert ids == list(range(ROWS))
    assert data_files_on_disk(path) == {f.path for f in table.files()}
    # every batch flushed its own files: the failed attempt had written some before it failed
    assert len(table.files()) >= 2 * FAILING_BATCH
    assert rows(faulty.read.format("tablefmt").load(path).selectExpr("count(*)", "count(distinct id)")) == [
        (ROWS, ROWS)
    ]


def test_failed_job_leaves_no_snapshot_and_no_file(faulty: Any, tmp_path: Path) -> None:
    path, markers = str(tmp_path / "t"), tmp_path / "markers"
    markers.mkdir()
    _write(faulty, path, markers, "task-once")  # snapshot 1
    table = Table.open(path)
    before = data_files_on_disk(path)
    with pytest.raises(Exception, match="injected task failure"):
        _write(faulty, path, markers, "task-always", start=ROWS)
    assert len(_markers(markers, "task-failure-")) == 1 + 3  # the first job's one, then all 3 attempts
    assert len(_markers(markers, "abort-")) == 1
    assert [s.id for s in table.snapshots()] == [1]
    assert data_files_on_disk(path) == before  # task 1's files removed by abort, task 0's by the task itself
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == list(range(ROWS))


def test_abort_after_landed_commit_keeps_every_file(faulty: Any, tmp_path: Path) -> None:
    path, markers = str(tmp_path / "t"), tmp_path / "markers"
    markers.mkdir()
    with pytest.raises(Exception, match="injected failure after the snapshot landed"):
        _write(faulty, path, markers, "after-commit")
    assert _markers(markers, "after-commit") == ["after-commit"]
    assert len(_markers(markers, "abort-")) == 1  # Spark called abort(); it must not have deleted anything
    table = Table.open(path)
    assert len(table.snapshots()) == 1
    assert data_files_on_disk(path) == {f.path for f in table.files()}
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == list(range(ROWS))
