"""Durability on local disk: a commit's files, and the directories naming them, are flushed (fsync) before the
snapshot that names them is linked; an expiration's journal before the first deletion it describes. The system calls
are recorded as they happen on real files (``os.fsync``, ``os.link``, ``os.unlink`` wrapped, then called through)."""

from __future__ import annotations

import errno
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, files_under

from tableformat import Table
from tableformat.io.local import LocalFileIO

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.string())])


def rows(ids: list[int], dts: list[str]) -> pa.Table:
    return pa.table({"id": ids, "dt": dts}, schema=SCHEMA)


class Calls:
    """``os.fsync``, ``os.link`` and ``os.unlink`` in the order they happen: (call, path)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, str]] = []
        self.fail_fsync_of: str | None = None
        fsync, link, unlink = os.fsync, os.link, os.unlink

        def recorded_fsync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            self.seen.append(("fsync", path))
            name = os.path.basename(path)
            if path == self.fail_fsync_of or (self.fail_fsync_of == "data" and name.startswith("data-")):
                raise OSError(errno.EIO, "Input/output error")
            fsync(fd)

        def recorded_link(src: str, dst: str, *args: object, **kwargs: object) -> None:
            self.seen.append(("link", os.fspath(dst)))
            link(src, dst, *args, **kwargs)  # type: ignore[arg-type]

        def recorded_unlink(path: str, *args: object, **kwargs: object) -> None:
            self.seen.append(("unlink", os.fspath(path)))
            unlink(path, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "fsync", recorded_fsync)
        monkeypatch.setattr(os, "link", recorded_link)
        monkeypatch.setattr(os, "unlink", recorded_unlink)

    def synced_before(self, call: str, path: str) -> set[str]:
        """The paths fsynced before the first ``call`` of ``path``."""
        index = self.seen.index((call, path))
        return {p for c, p in self.seen[:index] if c == "fsync"}

    def synced(self) -> set[str]:
        return {p for c, p in self.seen if c == "fsync"}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    yield Calls(monkeypatch)


def test_a_commit_flushes_its_files_and_their_directories_before_linking_the_snapshot(
    tmp_path: Path, calls: Calls
) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["dt"])
    table.append(rows([1], ["a"]))
    before = files_under(root)
    calls.seen.clear()

    table.append(rows([2, 3], ["a", "b"]))  # a new partition: b's directories are created by this commit

    new = files_under(root) - before
    data = {f for f in new if f.startswith("dt=")}
    manifests = {f for f in new if f.startswith("manifest/")}
    assert len(data) == 2 and len(manifests) == 3  # a file per partition; the delta manifest and two lists
    assert new == data | manifests | {"snapshot/snapshot-2"}  # LATEST was there already
    directories = {"", "dt=a", "dt=a/bucket-0", "dt=b", "dt=b/bucket-0", "manifest"}
    synced = calls.synced_before("link", str(root / "snapshot/snapshot-2"))
    snapshot_temp = {p for p in synced if os.path.basename(p).startswith(".snapshot-2.")}
    assert len(snapshot_temp) == 1  # the snapshot's own bytes, flushed by the atomic create itself
    assert synced - snapshot_temp == {str(root / f) if f else str(root) for f in data | manifests | directories}
    # after the link: the snapshot directory, so that the link itself survives
    assert calls.synced() - synced == {str(root / "snapshot")}


@pytest.mark.parametrize("failing", ["data file", "its directory"])
def test_a_commit_whose_file_cannot_be_flushed_creates_no_snapshot_and_leaves_no_metadata(
    tmp_path: Path, calls: Calls, failing: str
) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["dt"])
    table.append(rows([1], ["a"]))
    before = files_under(root)
    if failing == "data file":
        calls.fail_fsync_of = "data"  # any data file (its name is known once written)
    else:
        calls.fail_fsync_of = str(root / "dt=a" / "bucket-0")  # the directory naming the new data file

    with pytest.raises(OSError, match="Input/output error"):
        table.append(rows([2], ["a"]))

    assert ("link", str(root / "snapshot/snapshot-2")) not in calls.seen
    assert files_under(root) == before  # the attempt's manifests and the append's data file are removed
    assert [r["id"] for r in Table.open(str(root)).to_arrow().to_pylist()] == [1]


def test_an_expiration_journal_is_flushed_before_the_first_deletion(tmp_path: Path, calls: Calls) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["dt"])
    for i in range(3):
        table.append(rows([i], ["a"]))
    table.overwrite(rows([9], ["a"]), partition={"dt": "a"})  # the first three data files are no longer live
    calls.seen.clear()

    result = expire_snapshots(
        table.context, retain_min=1, retain_max=1, time_retained=0, limit=100, now_ms=FAR_FUTURE_MS
    )

    assert result.expired_snapshots == 3
    journals = [p for c, p in calls.seen if c == "fsync" and "expire-journal" in os.path.basename(p)]
    assert len(journals) == 1
    first_unlink = next(i for i, (c, p) in enumerate(calls.seen) if c == "unlink" and not p.endswith(".tmp"))
    flushed = {p for c, p in calls.seen[:first_unlink] if c == "fsync"}
    assert {journals[0], str(root / "snapshot"), str(root)} <= flushed
    assert calls.seen[first_unlink][1] != journals[0]  # the journal goes last, after what it describes


def _sync_in_child(paths: list[str]) -> None:
    LocalFileIO().sync(paths[:1], paths[1:])  # the parent's fsync threads are not in this process


# Python 3.12+ warns (DeprecationWarning, an error here) on a fork while other threads exist: here they do, on purpose.
@pytest.mark.filterwarnings(r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\):DeprecationWarning")
def test_a_process_forked_after_a_sync_syncs_with_threads_of_its_own(tmp_path: Path) -> None:
    paths = [str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path)]
    for path in paths[:2]:
        Path(path).write_bytes(b"x")
    LocalFileIO().sync(paths[:2], paths[2:])  # starts this process's threads
    child = multiprocessing.get_context("fork").Process(target=_sync_in_child, args=(paths,))
    child.start()
    child.join(timeout=120)  # a bound for a hang, not a synchronisation: the child ends at once when it works
    if child.exitcode is None:
        child.kill()  # hung, waiting on threads that were never started in it
    assert child.exitcode == 0


def test_missing_files_are_passed_over_and_a_failure_is_raised_after_every_call_ended(
    tmp_path: Path, calls: Calls
) -> None:
    paths = [str(tmp_path / name) for name in ("a", "b", "c")]
    for path in paths:
        Path(path).write_bytes(b"x")
    calls.fail_fsync_of = paths[1]
    with pytest.raises(OSError, match="Input/output error"):
        LocalFileIO().sync([*paths, str(tmp_path / "gone")], [str(tmp_path)])
    assert sorted(p for c, p in calls.seen if c == "fsync") == sorted([*paths, str(tmp_path)])
