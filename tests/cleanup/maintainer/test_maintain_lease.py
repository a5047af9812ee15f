"""The maintenance lease: one maintainer per table, takeover only after expiry, renewal, and a maintainer that
lost its lease stops before its next delete. Fake clocks; real files; a real killed process."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.warehouses import FakeClock, snapshot_ids, table_files, table_with_commits, wrapping_opener

from tableformat.cleanup.maintainer import MaintainSettings, TableLease, TableTarget, maintain_table
from tableformat.cleanup.maintainer.lease import CLOCK_SKEW_MS
from tableformat.context import TableContext
from tableformat.errors import LeaseLostError
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

MINUTE = 60_000
DURATION = 10 * MINUTE

NO_COSTS = {"requests": {}, "counted_requests": {}, "estimated_cost_usd": 0.0, "freed_storage_usd_per_month": 0.0}
"""The costs of a stopped run: it raised, so none are reported (docs/cost.md)."""


def _lease(root: Path, owner: str, clock: FakeClock) -> TableLease:
    return TableLease(TableContext.load(str(root)).store, owner, DURATION, clock, host="host-" + owner)


def _two(root: Path) -> tuple[FakeClock, TableLease, TableLease]:
    """A table at ``root`` and two maintainers' leases on it, sharing a fake clock."""
    table_with_commits(root, 1)
    clock = FakeClock()
    return clock, _lease(root, "a", clock), _lease(root, "b", clock)


def _leases(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".tablefmt").iterdir() if p.name.startswith("lease-"))


def test_one_holder_at_a_time_takeover_only_after_expiry_and_skew(tmp_path: Path) -> None:
    clock, a, b = _two(tmp_path / "t")
    assert a.acquire() and _leases(tmp_path / "t") == ["lease-0"]
    assert not b.acquire() and b.holder is not None and b.holder.owner == "a"
    clock.advance(DURATION + CLOCK_SKEW_MS - 1)
    assert not b.acquire()  # expired, but within the clock-skew margin
    clock.advance(1)
    assert b.acquire() and _leases(tmp_path / "t") == ["lease-1"]
    with pytest.raises(LeaseLostError, match="expired"):
        a.check()


def test_renewal_at_half_time_keeps_the_lease_and_a_takeover_is_noticed(tmp_path: Path) -> None:
    clock, a, b = _two(tmp_path / "t")
    assert a.acquire()
    clock.advance(DURATION // 2)
    a.check()  # renews: a new generation, the old one deleted
    assert _leases(tmp_path / "t") == ["lease-1"] and a.held is not None and a.held.generation == 1
    clock.advance(DURATION // 2 + 1)  # past the first expiry, within the renewed one
    a.check()
    assert not b.acquire()
    # b takes over once a's renewed lease has expired; a (stalled meanwhile) notices before its next change
    clock.advance(DURATION + CLOCK_SKEW_MS)
    assert b.acquire()
    a.clock = lambda: a.held.acquired_ms + 1 if a.held else 0  # a stalled clock: its own lease looks valid
    with pytest.raises(LeaseLostError, match="taken over"):
        a.check()


def test_release_lets_the_next_maintainer_in_at_once(tmp_path: Path) -> None:
    _clock, a, b = _two(tmp_path / "t")
    assert a.acquire()
    a.release()
    assert _leases(tmp_path / "t") == ["lease-1"]  # the released marker
    assert b.acquire() and _leases(tmp_path / "t") == ["lease-2"]


def _hold_and_die(root: str, now_ms: int) -> None:
    lease = TableLease(TableContext.load(root).store, "killed", DURATION, lambda: now_ms, host="dead-host")
    assert lease.acquire()
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_maintainers_lease_blocks_until_it_expires_then_the_next_run_takes_over(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table_with_commits(root, 6)
    clock = FakeClock()
    process = multiprocessing.get_context("spawn").Process(target=_hold_and_die, args=(str(root), clock.now))
    process.start()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL
    target = TableTarget(name="t", location=str(root))
    blocked = maintain_table(target, MaintainSettings(), owner="next", clock=clock)
    assert blocked.skipped.startswith("leased by dead-host (pid ") and blocked.operations == ()
    assert snapshot_ids(root) == [1, 2, 3, 4, 5, 6]
    clock.advance(DURATION + CLOCK_SKEW_MS)
    taken = maintain_table(target, MaintainSettings(), owner="next", clock=clock)
    assert taken.ok and [name for name, _ in taken.operations] == ["expire", "remove-orphans"]
    assert snapshot_ids(root) == [5, 6]


class _SlowDeletes(ForwardingFileIO):
    """Each delete request takes ``step`` ms of the fake clock (a maintainer stalled mid-run)."""

    def __init__(self, inner: FileIO, clock: FakeClock, step: int) -> None:
        super().__init__(inner)
        self.clock, self.step, self.batches = clock, step, 0

    def delete_files(self, paths):  # type: ignore[no-untyped-def]
        if all("/.tablefmt/" in p for p in paths):  # the run's claim (tableformat/claims.py): not the table's files
            return self.inner.delete_files(paths)
        self.batches += 1
        self.clock.advance(self.step)
        return self.inner.delete_files(paths)


def test_a_maintainer_that_loses_its_lease_stops_before_its_next_delete_and_a_rerun_finishes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table_with_commits(root, 12, **{"file-operation.thread-num": "1"})
    clean = tmp_path / "clean"
    table_with_commits(clean, 0)
    clock = FakeClock()
    slow: list[_SlowDeletes] = []

    def wrap(inner: FileIO) -> FileIO:
        slow.append(_SlowDeletes(inner, clock, DURATION + 1))  # the lease is gone after the first delete
        return slow[-1]

    settings = MaintainSettings(operations=("expire",))
    target = TableTarget(name="t", location=str(root))
    report = maintain_table(target, settings, owner="slow", clock=clock, opener=wrapping_opener(wrap))
    assert not report.ok and "lease" in report.errors[0][1] and "expired" in report.errors[0][1]
    # the journal write went through (before the stall), one snapshot delete batch ran, then the guard refused
    assert slow[0].batches == 1
    clock.advance(CLOCK_SKEW_MS)
    rerun = maintain_table(target, settings, owner="next", clock=clock)
    assert rerun.ok and snapshot_ids(root) == [11, 12]
    assert {f for f in table_files(root) if f.startswith("snapshot/.expire-journal")} == set()


def test_a_lost_lease_keeps_saying_why_on_every_later_check(tmp_path: Path) -> None:
    root = tmp_path / "t"
    clock, a, b = _two(root)
    assert a.acquire()
    clock.advance(DURATION)
    for _ in range(3):  # a clean-up step that writes after the first refusal hears the same reason
        with pytest.raises(LeaseLostError) as raised:
            a.check()
        assert str(raised.value) == f"the maintenance lease on {root} expired; stopping before the next change"
    a.release()  # a lost lease is not released: nothing is written
    assert _leases(root) == ["lease-0"]

    clock.advance(CLOCK_SKEW_MS)
    assert b.acquire()
    stalled = clock.now + 1
    b.clock = lambda: stalled  # b stalls: its own lease looks valid to it
    clock.advance(DURATION + CLOCK_SKEW_MS)
    assert _lease(root, "c", clock).acquire()
    for _ in range(3):
        with pytest.raises(LeaseLostError) as raised:
            b.check()
        assert str(raised.value) == f"the maintenance lease on {root} was taken over; stopping"
    with pytest.raises(LeaseLostError) as raised:
        _lease(root, "d", clock).check()
    assert str(raised.value) == f"no maintenance lease held on {root}"


def test_checks_from_many_delete_threads_at_half_time_renew_once_and_all_pass(tmp_path: Path) -> None:
    clock, a, _ = _two(tmp_path / "t")
    assert a.acquire()
    clock.advance(DURATION // 2)
    threads = 8
    barrier = threading.Barrier(threads, timeout=60)

    def check() -> None:
        barrier.wait()  # all at once, as a deleter's parallel batches do
        a.check()

    with ThreadPoolExecutor(threads) as pool:
        outcomes = [f.exception() for f in [pool.submit(check) for _ in range(threads)]]
    assert outcomes == [None] * threads
    assert a.held is not None and a.held.generation == 1 and _leases(tmp_path / "t") == ["lease-1"]


def test_a_compaction_that_outlives_its_lease_reports_that_it_expired(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table_with_commits(root, 6, **{"compaction.min.file-num": "2", "file-operation.thread-num": "1"})
    clock = FakeClock()

    class StallOnFirstWrite(ForwardingFileIO):
        """The first file written (the compacted data file) takes longer than the lease."""

        stalled = False

        def write_bytes(self, path: str, data: bytes) -> None:
            if not StallOnFirstWrite.stalled:
                StallOnFirstWrite.stalled = True
                clock.advance(DURATION + 1)
            self.inner.write_bytes(path, data)

    settings = MaintainSettings(operations=("compact", "expire"))
    target = TableTarget(name="t", location=str(root))
    report = maintain_table(target, settings, owner="slow", clock=clock, opener=wrapping_opener(StallOnFirstWrite))
    assert StallOnFirstWrite.stalled and not report.ok
    # the rewrite's clean-up of its written file is refused too, and must not replace the reason with another one
    assert [message for _, message in report.errors] == [
        f"the maintenance lease on {root} expired; stopping before the next change"
    ]
    assert snapshot_ids(root) == [1, 2, 3, 4, 5, 6]  # nothing committed, nothing expired


class _StallAfter(ForwardingFileIO):
    """After the first ``delete_listed`` whose paths contain ``marker`` went through, the fake clock jumps past the
    lease (the maintainer stalled right after that delete)."""

    def __init__(self, inner: FileIO, clock: FakeClock, marker: str) -> None:
        super().__init__(inner)
        self.clock, self.marker, self.stalled = clock, marker, False

    def delete_listed(self, paths):  # type: ignore[no-untyped-def]
        deleted = self.inner.delete_listed(paths)
        if not self.stalled and any(self.marker in p for p in paths):
            self.stalled = True
            self.clock.advance(DURATION + 1)
        return deleted


def test_a_pass_that_loses_its_lease_reports_what_each_operation_did_before_and_the_loss(tmp_path: Path) -> None:
    from tableformat.cli.maintain_command import human_line

    root = tmp_path / "t"
    table_with_commits(root, 6, **{"compaction.min.file-num": "2", "file-operation.thread-num": "1"})
    clock = FakeClock()
    opener = wrapping_opener(lambda inner: _StallAfter(inner, clock, "/snapshot/snapshot-"))
    sizes = {f"snapshot/snapshot-{i}": (root / "snapshot" / f"snapshot-{i}").stat().st_size for i in range(1, 6)}
    settings = MaintainSettings(operations=("compact", "expire", "remove-orphans"))
    target = TableTarget(name="t", location=str(root))
    report = maintain_table(target, settings, owner="slow", clock=clock, opener=opener)

    # compact ran to the end (snapshot 7); expire deleted snapshots 1-5, then the lease was gone before its data files
    expired = f"the maintenance lease on {root} expired; stopping before the next change"
    assert snapshot_ids(root) == [6, 7]
    document = report.to_json()
    assert (document["ok"], document["error"], document["lease_lost"]) == (False, f"expire: {expired}", expired)
    assert list(document["operations"]) == ["compact", "expire"]  # remove-orphans never started
    assert document["operations"]["compact"]["snapshot_ids"] == [7]
    assert len(document["operations"]["compact"]["compacted_paths"]) == 6
    assert document["operations"]["expire"] == {
        "dry_run": False,
        "deleted_files": len(sizes),
        "deleted_paths": list(sizes),
        "deleted_bytes": sum(sizes.values()),
        "removed_dirs": [],
        "notes": [],
        "backlog": 0,
        "run_id": None,
        "deferred_files": 0,
        "deferred_bytes": 0,
        "undo_until": None,
        "undo_until_ms": None,
        **NO_COSTS,
        "stopped": expired,
        "snapshot_ids": [],
    }
    assert report.reclaimed_bytes == sum(sizes.values())
    line = human_line(report)
    assert line.startswith(
        f"FAILED t: expire: {expired} - compact: merged 6 file(s) in 1 group(s) into 1 file(s), 6 row(s) read, "
        "0 expired (snapshot(s) 7); expire: stopped before finishing, after deleting 5 file(s) ["
    ), line
    assert not (root / ".tablefmt" / "maintain-state").exists()  # the state is the lease holder's to write


def test_a_lease_lost_just_before_the_state_is_written_still_reports_the_operations(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table_with_commits(root, 6, **{"file-operation.thread-num": "1"})
    clock = FakeClock()
    opener = wrapping_opener(lambda inner: _StallAfter(inner, clock, "/snapshot/.expire-journal"))
    report = maintain_table(
        TableTarget(name="t", location=str(root)), MaintainSettings(operations=("expire",)), owner="slow", clock=clock,
        opener=opener,
    )  # fmt: skip
    expired = f"the maintenance lease on {root} expired; stopping before the next change"
    assert (report.ok, report.errors, report.lease_lost) == (False, (("", expired),), expired)
    assert [name for name, _ in report.operations] == ["expire"]
    assert report.operations[0][1].to_json()["expired_snapshot_ids"] == [1, 2, 3, 4]
    assert snapshot_ids(root) == [5, 6] and not (root / ".tablefmt" / "maintain-state").exists()


def test_a_compaction_that_loses_its_lease_after_a_commit_reports_the_snapshot_and_keeps_its_files(
    tmp_path: Path,
) -> None:
    from tableformat.cli.maintain_command import human_line

    root = tmp_path / "t"
    table_with_commits(root, 6, **{"compaction.min.file-num": "2", "file-operation.thread-num": "1"})
    clock = FakeClock()

    class StallAfterCommit(ForwardingFileIO):
        """The maintainer stalls right after its first snapshot file is created (before the LATEST hint)."""

        stalled = False

        def write_if_absent(self, path: str, data: bytes) -> bool:
            created = self.inner.write_if_absent(path, data)
            if created and "/snapshot/snapshot-" in path and not StallAfterCommit.stalled:
                StallAfterCommit.stalled = True
                clock.advance(DURATION + 1)
            return created

    before = table_files(root)
    settings = MaintainSettings(operations=("compact", "expire"))
    target = TableTarget(name="t", location=str(root))
    report = maintain_table(target, settings, owner="slow", clock=clock, opener=wrapping_opener(StallAfterCommit))
    expired = f"the maintenance lease on {root} expired; stopping before the next change"
    assert (report.errors, report.lease_lost) == ((("compact", expired),), expired)
    assert {name: result.to_json() for name, result in report.operations} == {
        "compact": {
            "dry_run": False,
            "deleted_files": 0,
            "deleted_paths": [],
            "deleted_bytes": 0,
            "removed_dirs": [],
            "notes": [],
            "backlog": 0,
            "run_id": None,
            "deferred_files": 0,
            "deferred_bytes": 0,
            "undo_until": None,
            "undo_until_ms": None,
            **NO_COSTS,
            "stopped": expired,
            "snapshot_ids": [7],
        }
    }
    assert human_line(report).startswith(
        f"FAILED t: compact: {expired} - compact: stopped before finishing, after committing snapshot(s) 7 [0 B freed, "
    )
    # snapshot 7 landed (its hint write was refused), and the files it references were not cleaned up as a failed
    # rewrite's: the guard refused that too
    assert snapshot_ids(root) == [1, 2, 3, 4, 5, 6, 7]
    new = {f for f in table_files(root) - before if f.startswith("bucket-0/")}
    assert len(new) == 1 and Table.open(str(root)).to_arrow().num_rows == 6
