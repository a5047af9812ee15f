"""Concurrency: many writer processes on S3, and commits + expiration + orphan cleanup + readers on one local table.

What "readers of retained snapshots never fail" means here (docs/reliability.md): a reader picks a snapshot id
that exists (the latest, or any id between EARLIEST and LATEST) and reads it fully. If the read fails, the failure
is a violation unless the snapshot file is gone when the reader checks right after the failure, i.e. unless the
snapshot was expired while it was being read (expiration deletes the snapshot file before any of its data files).
Successful reads must be exact: no row twice, and for every writer a prefix of its commits.

Processes start through the spawn context, wait on a barrier, and stop on an event; every loop is bounded.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultyFileIO, InterferingFileIO, faulty_context
from support.operations import expire_snapshots, remove_orphan_files
from support.processes import join_all
from support.tables import DAY_S, age_files, files_under, reachable_files, row_counts

from tableformat.errors import CommitConflictError, CommitError, SnapshotNotFoundError
from tableformat.table import Table

from .kit import SCHEMA, batch

SPAWN = multiprocessing.get_context("spawn")
JOIN_TIMEOUT_S = 240
READS_WANTED = 10
"""Successful reads the reader makes before any writer's last commit (the reader rule is not checked vacuously)."""
WRITER_BASE = 1_000_000


def writer_row(writer: int, commit: int) -> tuple[int, str]:
    return (WRITER_BASE * (writer + 1) + commit, f"w{writer % 3}")


# --- (a) 8 processes x 25 appends on S3 ---------------------------------------------------------------------------
def _s3_writer(url: str, storage_options: dict[str, Any], writer: int, commits: int, barrier: Any) -> None:
    table = Table.open(url, storage_options)
    barrier.wait(timeout=120)
    for commit in range(commits):
        table.append(batch([writer_row(writer, commit)]))


@pytest.mark.s3
@pytest.mark.slow  # about a minute: SeaweedFS delays the losers of a conditional-PUT race in 1 s steps
def test_eight_processes_times_25_appends_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    writers, commits = 8, 25
    Table.create(url, SCHEMA, partition_keys=["part"], options={"write-only": "true"}, storage_options=options)
    barrier = SPAWN.Barrier(writers)
    processes = [
        SPAWN.Process(target=_s3_writer, args=(url, options, w, commits, barrier), name=f"s3-writer-{w}")
        for w in range(writers)
    ]
    for process in processes:
        process.start()
    join_all(processes, JOIN_TIMEOUT_S)
    assert [p.exitcode for p in processes] == [0] * writers
    table = Table.open(url, options)
    snapshots = table.snapshots()
    assert [s.id for s in snapshots] == list(range(1, writers * commits + 1))  # 0 lost, 0 duplicated
    assert row_counts(table.to_arrow()) == Counter(writer_row(w, c) for w in range(writers) for c in range(commits))
    assert Counter(s.commit_user for s in snapshots).most_common()[0][1] == commits  # one snapshot per commit
    assert len({s.commit_user for s in snapshots}) == writers


# --- (b) commits + expiration + orphan cleanup + a reader, on local disk ------------------------------------------
INITIAL = [(i, f"p{i % 3}") for i in range(6)]
ORPHANS = (
    "part=p0/bucket-0/data-0e1f0000-0000-4000-8000-0000000000a1-0.parquet",
    "manifest/manifest-0e1f0000-0000-4000-8000-0000000000a2-0",
    "manifest/manifest-list-0e1f0000-0000-4000-8000-0000000000a2-1",
    "snapshot/.snapshot-3.0e1f0000-0000-4000-8000-0000000000a3.tmp",
)
RETAIN = {"retain_min": 2, "retain_max": 3, "time_retained": 0}


def _report(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document))


def _writer(root: str, writer: int, commits: int, barrier: Any, read_enough: Any, out: str) -> None:
    """Appends; writer 0 also expires after every commit, as the post-commit hook does (a second expirer). The last
    commit waits until the reader has read READS_WANTED snapshots (on a loaded machine the writers could otherwise
    finish before the reader got going)."""
    table = Table.open(root)
    barrier.wait(timeout=120)
    ids, errors = [], []
    for commit in range(commits):
        if commit == commits - 1:
            read_enough.wait(timeout=60)  # not reached in time: the test's reads assertion says so
        snapshot = None
        for _attempt in range(5):  # G2b: an id taken and expired meanwhile fails the commit, and it is retried
            try:
                snapshot = table.append(batch([writer_row(writer, commit)]))
                break
            except CommitConflictError:
                continue
        assert snapshot is not None
        ids.append(snapshot.id)
        if writer == 0:
            try:
                expire_snapshots(table.context, **RETAIN, parallelism=2)
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    _report(Path(out), {"snapshots": ids, "errors": errors})


def _expirer(root: str, barrier: Any, stop: Any, out: str) -> None:
    ctx = Table.open(root).context
    barrier.wait(timeout=120)
    runs, expired, errors = 0, [], []
    for _ in range(10_000):
        last = stop.is_set()
        try:
            result = expire_snapshots(ctx, **RETAIN, parallelism=2)
            expired += list(result.expired_snapshot_ids)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
        if last:
            break
        stop.wait(0.02)  # pacing on two cores; the loop ends on the event
    _report(Path(out), {"runs": runs, "expired": expired, "errors": errors})


def _orphan_cleaner(root: str, barrier: Any, stop: Any, out: str) -> None:
    ctx = Table.open(root).context
    barrier.wait(timeout=120)
    runs, deleted, errors = 0, [], []
    for _ in range(10_000):
        last = stop.is_set()
        backlog = 0
        try:  # the default guard (older than 1 day); one orphan per run: the limited path runs many times
            result = remove_orphan_files(ctx, parallelism=2, max_files=1)
            deleted += list(result.deleted_paths)
            errors += list(result.failed)
            backlog = result.backlog
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
        if last and not backlog:  # after the writers stopped, until nothing is left for a next run
            break
        stop.wait(0.02)
    _report(Path(out), {"runs": runs, "deleted": deleted, "errors": errors})


def _check_rows(rows: Counter[tuple[int, str]], total: int | None, snapshot_id: int) -> str | None:
    """None if the rows are a consistent state: no duplicate, the initial rows of that snapshot, and a prefix of
    every writer's commits (snapshots 1..3 are the initial history, two rows each)."""
    if any(n > 1 for n in rows.values()):
        return f"duplicated rows {[r for r, n in rows.items() if n > 1]}"
    if total is not None and sum(rows.values()) != total:
        return f"{sum(rows.values())} rows but the snapshot records {total}"
    initial = INITIAL[: 2 * min(snapshot_id, 3)]
    if {r for r in rows if r[0] < WRITER_BASE} != set(initial):
        return f"initial rows {sorted(r for r in rows if r[0] < WRITER_BASE)} != {initial}"
    by_writer: dict[int, list[int]] = {}
    for row_id, _ in rows:
        if row_id >= WRITER_BASE:
            by_writer.setdefault(row_id // WRITER_BASE - 1, []).append(row_id % WRITER_BASE)
    for writer, commits in by_writer.items():
        if sorted(commits) != list(range(len(commits))):
            return f"writer {writer}'s commits are not a prefix: {sorted(commits)}"
    return None


def _reader(root: str, barrier: Any, stop: Any, read_enough: Any, out: str) -> None:
    table = Table.open(root)
    store = table.context.store
    barrier.wait(timeout=120)
    reads, violations = 0, []
    tolerated: dict[str, int] = {}

    def read(snapshot_id: int, what: str) -> None:
        nonlocal reads
        try:
            snapshot = store.read_snapshot(snapshot_id)
            rows = row_counts(table.to_arrow(snapshot_id=snapshot_id))
        except Exception as exc:
            if store.snapshot_exists(snapshot_id):
                violations.append(f"{what} {snapshot_id} still exists but its read failed: {type(exc).__name__}: {exc}")
            else:  # expired while being read: allowed (test_read_of_a_snapshot_expired_meanwhile_says_so)
                tolerated[type(exc).__name__] = tolerated.get(type(exc).__name__, 0) + 1
            return
        reads += 1
        if reads >= READS_WANTED:
            read_enough.set()
        problem = _check_rows(rows, snapshot.total_record_count, snapshot_id)
        if problem:
            violations.append(f"{what} {snapshot_id}: {problem}")

    for _ in range(5_000):
        last = stop.is_set()
        latest = store.latest_snapshot_id()
        if latest is not None:
            read(latest, "latest snapshot")
        earliest = store.earliest_snapshot_id()
        if earliest is not None and latest is not None:
            for snapshot_id in range(earliest, latest + 1):
                read(snapshot_id, "snapshot")
        try:
            problem = _check_rows(row_counts(table.to_arrow(tag="keep")), len(INITIAL), 3)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            violations.append(f"tag keep: {problem}")
        if last:
            break
    _report(Path(out), {"reads": reads, "tolerated": tolerated, "violations": violations[:20]})


def _traceback_of(process: Any) -> str:
    return f"{process.name} exited with {process.exitcode}"


@pytest.mark.slow
def test_commits_expiration_orphan_cleanup_and_readers_at_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for start in range(0, len(INITIAL), 2):
        table.append(batch(INITIAL[start : start + 2]))
    table.create_tag("keep", 3)
    for rel in ORPHANS:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"left behind by a crashed writer")
    age_files(root, 2 * DAY_S)  # old enough for the 1-day guard: live files, tag files and orphans alike
    old_data = {p for p in files_under(root) if p.endswith(".parquet")} - set(ORPHANS)
    first_new = table.latest_snapshot().id + 1  # type: ignore[union-attr]

    writers, commits = 3, 15
    barrier = SPAWN.Barrier(writers + 3)
    stop, read_enough = SPAWN.Event(), SPAWN.Event()
    out = {name: str(tmp_path / f"{name}.json") for name in ("expirer", "cleaner", "reader")}
    workers = [
        SPAWN.Process(
            target=_writer,
            args=(str(root), w, commits, barrier, read_enough, str(tmp_path / f"w{w}.json")),
            name=f"w{w}",
        )
        for w in range(writers)
    ]
    others = [
        SPAWN.Process(target=_expirer, args=(str(root), barrier, stop, out["expirer"]), name="expirer"),
        SPAWN.Process(target=_orphan_cleaner, args=(str(root), barrier, stop, out["cleaner"]), name="cleaner"),
        SPAWN.Process(target=_reader, args=(str(root), barrier, stop, read_enough, out["reader"]), name="reader"),
    ]
    for process in workers + others:
        process.start()
    try:
        join_all(workers, JOIN_TIMEOUT_S)
    finally:
        stop.set()
        join_all(others, JOIN_TIMEOUT_S)
    assert [p.exitcode for p in workers + others] == [0] * (writers + 3), [_traceback_of(p) for p in workers + others]
    results = {name: json.loads(Path(path).read_text()) for name, path in out.items()}
    written = [json.loads((tmp_path / f"w{w}.json").read_text()) for w in range(writers)]
    committed = [i for report in written for i in report["snapshots"]]
    assert [report["errors"] for report in written] == [[]] * writers

    # Every commit made exactly one snapshot, and the latest holds every row exactly once.
    assert sorted(committed) == list(range(first_new, first_new + writers * commits))
    final = Table.open(str(root))
    expected_rows = Counter(INITIAL) + Counter(writer_row(w, c) for w in range(writers) for c in range(commits))
    assert row_counts(final.to_arrow()) == expected_rows

    # Readers never failed on a snapshot that was still retained, and they really read (while the writers wrote).
    reader = results["reader"]
    assert reader["violations"] == []
    assert reader["reads"] >= READS_WANTED, reader

    # Maintenance ran without errors; it expired snapshots and deleted the planted orphans, nothing live.
    assert results["expirer"]["errors"] == [] and results["expirer"]["expired"], results["expirer"]
    cleaner = results["cleaner"]
    assert cleaner["errors"] == [], cleaner
    assert set(ORPHANS) <= set(cleaner["deleted"])
    assert old_data <= files_under(root), f"live data deleted: {sorted(old_data - files_under(root))}"
    ctx = final.context
    reachable = reachable_files(ctx)
    assert not reachable & set(cleaner["deleted"]), sorted(reachable & set(cleaner["deleted"]))
    assert reachable <= files_under(root)
    present = {s.id for s in final.snapshots()}
    history_rows = {sid: row_counts(final.to_arrow(snapshot_id=sid)) for sid in present}
    for sid, rows in history_rows.items():
        assert _check_rows(rows, final.snapshot(sid).total_record_count, sid) is None

    # Quiesced: one more expiration and an orphan cleanup without writers leave exactly the reachable files.
    expire_snapshots(ctx, **RETAIN)
    remove_orphan_files(ctx, older_than=timedelta(0), force=True, now_ms=int(time.time() * 1000) + 60_000)
    assert files_under(root) == reachable_files(Table.open(str(root)).context)
    table_after = Table.open(str(root))
    assert row_counts(table_after.to_arrow()) == expected_rows
    assert row_counts(table_after.to_arrow(tag="keep")) == Counter(INITIAL)


def test_reader_rule_is_not_vacuous(tmp_path: Path) -> None:
    """A snapshot whose data file vanished while it is still retained is exactly what the reader reports."""
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(batch(INITIAL))
    next(root.rglob("*.parquet")).unlink()
    out = tmp_path / "reader.json"
    barrier, stop = SPAWN.Barrier(1), SPAWN.Event()
    stop.set()
    _reader(str(root), barrier, stop, SPAWN.Event(), str(out))
    report = json.loads(out.read_text())
    assert report["reads"] == 0 and len(report["violations"]) >= 2
    assert "still exists but its read failed" in report["violations"][0]


@pytest.mark.parametrize("trigger", ["manifest-list-", "manifest-"])
def test_read_of_a_snapshot_expired_meanwhile_says_so(tmp_path: Path, trigger: str) -> None:
    """A reader that picked snapshot 1 while it existed, and lost it to an expiration before reading its manifest
    list (or its manifests), gets "snapshot 1 does not exist / was expired", not "corrupt metadata"."""
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(batch(INITIAL[:2]))
    table.overwrite(batch(INITIAL[2:4]), None)
    table.overwrite(batch(INITIAL[4:]), None)  # snapshot 1 now shares nothing with the latest

    def expire() -> None:
        result = expire_snapshots(Table.open(str(root)).context, retain_min=1, retain_max=1, time_retained=0)
        assert 1 in result.expired_snapshot_ids

    ctx = Table.open(str(root)).context
    reader = Table(faulty_context(ctx, InterferingFileIO(ctx.io, trigger, expire)))
    with pytest.raises(SnapshotNotFoundError, match="snapshot 1"):
        reader.to_arrow(snapshot_id=1)


class _CommitsAndExpiresFirst(FaultyFileIO):
    """Just before this writer creates ``snapshot-<target>``, another writer commits twice and an expiration with
    retain 1 removes every older snapshot, ``snapshot-<target>`` included: the id is free again (ABA)."""

    def __init__(self, inner: Any, target: int, interfere: Any) -> None:
        super().__init__(inner)
        self.target = target
        self.interfere = interfere

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.interfere is not None and path.endswith(f"/snapshot/snapshot-{self.target}"):
            interfere, self.interfere = self.interfere, None
            interfere()
        return super().write_if_absent(path, data)


def test_commit_whose_snapshot_id_was_expired_meanwhile_is_not_lost(tmp_path: Path) -> None:
    """A slow writer read snapshot 3 as the latest and prepares snapshot 4; meanwhile others commit 4 and 5 and an
    expiration (retain 1) deletes snapshots 1..4. Creating snapshot-4 then succeeds, but nothing descends from it:
    the writer must not report success for a commit that is not in the table. Either its rows are in the latest
    snapshot, or it fails with a CommitError and a retry with the same identifier commits them exactly once."""
    root = tmp_path / "t"
    Table.create(str(root), SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    other = Table.open(str(root))
    for start in range(0, len(INITIAL), 2):
        other.append(batch(INITIAL[start : start + 2]))

    def interfere() -> None:
        other.append(batch([writer_row(1, 0)]))
        other.append(batch([writer_row(1, 1)]))
        # judged 1 ms later: with time-retained 0 a successor committed in this very millisecond still keeps its
        # predecessor (the rule is strict, as Paimon's), and the commits above can take under a millisecond
        later = time.time_ns() // 1_000_000 + 1
        result = expire_snapshots(other.context, retain_min=1, time_retained=0, now_ms=later)
        assert result.expired_snapshot_ids == (1, 2, 3, 4)

    ctx = Table.open(str(root)).context
    slow = Table(faulty_context(ctx, _CommitsAndExpiresFirst(ctx.io, 4, interfere)))
    mine = batch([writer_row(0, 0)])
    try:
        slow.append(mine, commit_user="slow-writer", commit_identifier=1)
    except CommitError:
        Table.open(str(root)).append(mine, commit_user="slow-writer", commit_identifier=1)
    expected = Counter(INITIAL) + Counter([writer_row(0, 0), writer_row(1, 0), writer_row(1, 1)])
    assert row_counts(Table.open(str(root)).to_arrow()) == expected
