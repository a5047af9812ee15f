"""Commit safety: concurrent writers, lost races, retried commits, failures that leave nothing behind."""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from support.tables import files_under

from tableformat import Table
from tableformat.commit.committer import COMMIT_LOG_PROPERTY, read_commit_log
from tableformat.errors import StorageError
from tableformat.io.local import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("writer", pa.int32()), ("dt", pa.string())])


def batch(ids: Sequence[int], writer: int = 0, dt_value: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "writer": [writer] * len(ids), "dt": [dt_value] * len(ids)}, schema=SCHEMA)


def _writer_process(path: str, writer: int, commits: int) -> None:
    table = Table.open(path)
    for i in range(commits):
        table.append(batch([writer * 1000 + i], writer, f"p{i % 4}"))


@pytest.mark.slow
def test_eight_processes_times_25_appends_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    Table.create(path, SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer_process, args=(path, w, 25)) for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * 8
    table = Table.open(path)
    assert [s.id for s in table.snapshots()] == list(range(1, 201))
    ids = table.to_arrow().column("id").to_pylist()
    assert sorted(ids) == sorted(w * 1000 + i for w in range(8) for i in range(25))
    assert table.latest_snapshot().total_record_count == 200  # type: ignore[union-attr]


def test_lost_race_is_replanned_against_the_new_latest(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    first = Table.create(path, SCHEMA, partition_keys=["dt"])
    first.append(batch([1, 2], dt_value="a"))
    second = Table.open(path)
    # Both writers saw snapshot 1; the overwrite from `second` must delete what is live when it commits.
    first.append(batch([3], dt_value="a"))
    second.overwrite(batch([9], dt_value="a"), partition={"dt": "a"})
    assert sorted(second.to_arrow().column("id").to_pylist()) == [9]


def test_retried_commit_is_recognised_after_old_snapshots_are_gone(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = Table.create(path, SCHEMA, options={"write-only": "true"})
    table.append(batch([1]), commit_user="job-1", commit_identifier=7)
    for i in range(5):
        table.append(batch([100 + i]))
    for snapshot_id in (1, 2, 3):  # as if expired
        (tmp_path / "t" / "snapshot" / f"snapshot-{snapshot_id}").unlink()
    again = table.append(batch([1]), commit_user="job-1", commit_identifier=7)
    assert again is not None and again.id == 6  # the existing latest is returned, nothing committed
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 100, 101, 102, 103, 104]
    parquet = [f for f in files_under(tmp_path / "t") if f.endswith(".parquet")]
    assert len(parquet) == 6  # the retried write's data file was removed
    assert read_commit_log(table.latest_snapshot())["job-1"] == 7


def test_commit_log_is_bounded(tmp_path: Path) -> None:
    table = Table.create(
        str(tmp_path / "t"), SCHEMA, options={"commit.dedup.retained-users": "3", "write-only": "true"}
    )
    for user in range(5):
        table.append(batch([user]), commit_user=f"u{user}", commit_identifier=1)
    latest = table.latest_snapshot()
    assert latest is not None and COMMIT_LOG_PROPERTY in (latest.properties or {})
    assert read_commit_log(latest) == {"u2": 1, "u3": 1, "u4": 1}


class FailingSnapshotIO(LocalFileIO):
    """Fails the snapshot create before it takes effect."""

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            raise PermissionError(13, "injected: snapshot write refused")
        return super().write_if_absent(path, data)


class AmbiguousSnapshotIO(LocalFileIO):
    """Applies the snapshot create, then reports a failure (acknowledgement lost)."""

    def write_if_absent(self, path: str, data: bytes) -> bool:
        created = super().write_if_absent(path, data)
        if "/snapshot/snapshot-" in path:
            raise TimeoutError("injected: response lost after the write was applied")
        return created


def test_failed_commit_writes_nothing(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"])
    table.append(batch([1]))
    before = files_under(tmp_path / "t")
    table.context.io = FailingSnapshotIO()
    table.context.store.io = table.context.io
    with pytest.raises(OSError, match="injected"):
        table.append(batch([2, 3], dt_value="b"))
    assert files_under(tmp_path / "t") == before


def test_ambiguous_snapshot_write_is_resolved_by_reading_it_back(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    table.context.io = AmbiguousSnapshotIO()
    table.context.store.io = table.context.io
    snapshot = table.append(batch([1, 2]))
    assert snapshot is not None and snapshot.id == 1
    assert [s.id for s in table.snapshots()] == [1]  # not committed a second time as snapshot 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2]


def test_missing_data_file_is_a_clear_error(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    table.append(batch([1]))
    for parquet in (tmp_path / "t").rglob("*.parquet"):
        parquet.unlink()
    with pytest.raises(StorageError, match="missing"):
        table.to_arrow()


class ExpireOnFirstListRead(LocalFileIO):
    """Runs a callback (another writer + an expiration) the first time a manifest list is read."""

    def __init__(self, callback: object) -> None:
        self.callback = callback
        self.fired = False

    def read_bytes(self, path: str) -> bytes:
        if not self.fired and "/manifest/manifest-list-" in path:
            self.fired = True
            self.callback()  # type: ignore[operator]
        return super().read_bytes(path)


def test_commit_whose_base_snapshot_is_expired_meanwhile_replans(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    table = Table.create(path, SCHEMA, options={"write-only": "true"})
    table.append(batch([1]))
    other = Table.open(path)

    def concurrent_writer_and_expirer() -> None:
        other.append(batch([2]))
        other.append(batch([3]))
        result = other.maintenance.expire_snapshots(retain_min=1, retain_max=1, time_retained=0)
        assert result.expired_snapshot_ids == (1, 2)

    slow = Table.open(path)
    slow.context.io = ExpireOnFirstListRead(concurrent_writer_and_expirer)
    slow.context.store.io = slow.context.io
    snapshot = slow.append(batch([4]))
    assert snapshot is not None and snapshot.id == 4
    assert sorted(Table.open(path).to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
