"""Fault-injection sweeps: every mutating call of append, static overwrite, drop-partition, expiration and orphan
cleanup fails once, before or after it takes effect, either transiently or as a crash (every later call refused).

After each failure, and again after a re-run (commits are retried with the same commit user and identifier):

* every present snapshot and tag reads exactly the rows the history says (a missing file fails the read);
* no commit is applied twice: exactly one new snapshot, row multisets exact;
* nothing leaks: after a transient fault the files on disk are exactly the files reachable from the snapshots and
  tags (plus metadata roots); after a crash, whatever the crash left behind is found by orphan cleanup, and an
  expiration re-run leaves exactly what an uninterrupted run leaves.

Every sweep first runs the operation in counting mode to learn its call points, then fails each of them, and
reports all failing points at once.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import DAY_S, FAR_FUTURE_MS, age_files, files_under, reachable_files

from tableformat.context import TableContext
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

from .kit import History, Model, batch, build_history, chain, check_reads, copy_table

PROFILES = {
    # Commits only; maintenance is run separately (the sweeps of expiration and orphan cleanup use this table).
    "write-only": {
        "write-only": "true",
        "snapshot.clean-empty-directories": "true",
        "file-operation.thread-num": "1",
        "manifest.merge-min-count": "2",  # every commit merges manifests: the merge writes are swept too
    },
    # Every commit expires inline down to 2 snapshots: faults also hit the expiration that follows a commit.
    "inline-expire": {
        "snapshot.num-retained.min": "2",
        "snapshot.num-retained.max": "4",
        "snapshot.time-retained": "0 ms",
        "snapshot.clean-empty-directories": "true",
        "file-operation.thread-num": "1",
    },
}
VARIANTS = [(mode, sticky) for sticky in (False, True) for mode in ("before", "after")]
COMMIT_USER = "sweep-job"
COMMIT_ID = 41


@dataclass(frozen=True)
class CommitOp:
    name: str
    run: Callable[[Table], Any]
    expect: Callable[[Model], Any]


APPEND_ROWS = [(100, "p0"), (101, "p4")]
OVERWRITE_ROWS = [(200, "p1"), (201, "p1")]
COMMIT_OPS = {
    "append": CommitOp(
        "append",
        lambda t: t.append(batch(APPEND_ROWS), commit_user=COMMIT_USER, commit_identifier=COMMIT_ID),
        lambda m: m.append(APPEND_ROWS),
    ),
    "overwrite": CommitOp(
        "overwrite",
        lambda t: t.overwrite(
            batch(OVERWRITE_ROWS), {"part": "p1"}, commit_user=COMMIT_USER, commit_identifier=COMMIT_ID
        ),
        lambda m: m.overwrite("p1", OVERWRITE_ROWS),
    ),
    # drop_partitions takes no commit identifier: its re-run is the same drop, a no-op once the first landed.
    "drop": CommitOp("drop", lambda t: t.drop_partitions([{"part": "p0"}]), lambda m: m.drop("p0")),
}


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, History, Model]]:
    """One pristine table per profile, copied for every failure point."""
    result = {}
    for profile, options in PROFILES.items():
        root = tmp_path_factory.mktemp("base") / profile
        history = build_history(root, options)
        model = Model()
        model.current = history.rows[max(history.rows)].copy()
        result[profile] = (root, history, model)
    return result


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A directory for the per-point copies: RAM-backed where available (the sweeps copy a table per point)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        directory = Path(tempfile.mkdtemp(prefix="tablefmt-sweep-", dir=shm))
        try:
            yield directory
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    else:
        yield tmp_path


def _context(root: Path) -> TableContext:
    return Table.open(str(root)).context


def _count_points(root: Path, run: Callable[[TableContext], Any]) -> list[tuple[str, str]]:
    ctx = _context(root)
    counter = FaultyFileIO(ctx.io)
    run(faulty_context(ctx, counter))
    return [(op, path.rsplit("/", 2)[-1]) for op, path in counter.calls]


def _run_faulty(root: Path, run: Callable[[TableContext], Any], point: int, mode: str, sticky: bool) -> FaultyFileIO:
    """Run with the fault armed; any exception must come from the fault (directly or as the cause)."""
    ctx = _context(root)
    faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
    try:
        run(faulty_context(ctx, faulty))
    except Exception as exc:
        if not any(isinstance(e, InjectedFault) for e in chain(exc)):
            raise AssertionError(f"the failure surfaced as an unrelated error: {type(exc).__name__}: {exc}") from exc
    assert faulty.fired is not None, "the sweep never reached this call point (the operation is not deterministic?)"
    return faulty


def _orphan_cleanup_everything(root: Path) -> Any:
    """Orphan cleanup with a cutoff after every file's mtime (no writer runs in the sweeps)."""
    return remove_orphan_files(
        _context(root),
        older_than=timedelta(0),
        force=True,
        parallelism=1,
        now_ms=int(time.time() * 1000) + 60_000,
    )


def _assert_same_files(on_disk: set[str], expected: set[str]) -> None:
    """A crashed run's claim (.tablefmt/claim-*) is no table file: it lapses, or the next orphan cleanup deletes it."""
    on_disk = {path for path in on_disk if not path.startswith(".tablefmt/claim-")}
    extra, missing = sorted(on_disk - expected), sorted(expected - on_disk)
    assert not extra and not missing, f"after the re-run: extra {extra}, missing {missing}"


def _report(failures: list[str], total: int) -> None:
    assert not failures, f"{len(failures)} of {total} failure points broke an invariant:\n" + "\n".join(failures)


# --- commits ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("profile", "op_name"),
    # The inline expiration after a commit is the same code for every commit kind: swept once, after an append.
    [("write-only", "append"), ("write-only", "overwrite"), ("write-only", "drop"), ("inline-expire", "append")],
)
def test_commit_survives_a_fault_at_every_call(
    bases: dict[str, tuple[Path, History, Model]], scratch: Path, profile: str, op_name: str
) -> None:
    base, base_history, base_model = bases[profile]
    op = COMMIT_OPS[op_name]
    base_ids = sorted(s.id for s in Table.open(str(base)).snapshots())
    new_id = base_ids[-1] + 1
    expected = base_history.copy()
    model = Model()
    model.current = base_model.current.copy()
    expected.record(new_id, op.expect(model))

    def run(ctx: TableContext) -> Any:
        return op.run(Table(ctx))

    points = _count_points(copy_table(base, scratch / "count"), run)
    assert ("write_if_absent", f"snapshot-{new_id}") in points
    manifests = [name for op, name in points if name.startswith("manifest-") and not name.startswith("manifest-list-")]
    assert len(manifests) == (2 if profile == "write-only" else 1)  # write-only: the delta and a merged manifest
    failures: list[str] = []
    cases = list(itertools.product(range(1, len(points) + 1), VARIANTS))
    for number, (point, (mode, sticky)) in enumerate(cases):
        root = copy_table(base, scratch / f"case-{number}")
        label = f"point {point} {points[point - 1]} {mode}{' crash' if sticky else ''}"
        try:
            _run_faulty(root, run, point, mode, sticky)
            check_reads(root, expected)  # right after the failure: old or new state, never broken
            op.run(Table.open(str(root)))  # the retry: same commit user and identifier (drop: same drop)
            ids = check_reads(root, expected)
            assert ids[-1] == new_id, f"latest snapshot {ids[-1]}, expected exactly one new snapshot {new_id}"
            if profile == "write-only":
                assert ids == [*base_ids, new_id], f"snapshots {ids}"
            reachable = reachable_files(_context(root))
            assert reachable <= files_under(root), f"referenced files missing: {sorted(reachable - files_under(root))}"
            # the table's own expiration finishes an interrupted inline expiration
            expire_snapshots(_context(root), parallelism=1)
            if not sticky:  # the failed attempt's own clean-up ran: nothing may be left behind
                left = files_under(root) - reachable_files(_context(root))
                assert not left, f"a transient fault leaked {sorted(left)}"
            else:  # a crash leaves files behind: orphan cleanup must recognise every one
                _orphan_cleanup_everything(root)
                left = files_under(root) - reachable_files(_context(root))
                assert not left, f"orphan cleanup cannot reclaim what the crash left: {sorted(left)}"
                # expiring everything but the latest leaks nothing either
                expire_snapshots(
                    _context(root), retain_min=1, time_retained=0, limit=100, parallelism=1, now_ms=FAR_FUTURE_MS
                )
                assert check_reads(root, expected) == [new_id]
                left = files_under(root) - reachable_files(_context(root))
                assert not left, f"expiration re-run left {sorted(left)}"
        except AssertionError as exc:
            failures.append(f"{label}: {exc}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    _report(failures, len(cases))


# --- expiration ---------------------------------------------------------------------------------------------------
EXPIRE_SETTINGS: dict[str, Any] = {"retain_min": 1, "time_retained": 0, "limit": 100, "parallelism": 1}


@pytest.fixture(scope="module")
def expire_base(bases: dict[str, tuple[Path, History, Model]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The write-only history plus a short-lived tag on snapshot 4, so expiration also expires a tag."""
    base, _, _ = bases["write-only"]
    root = copy_table(base, tmp_path_factory.mktemp("expire") / "t")
    Table.open(str(root)).create_tag("short", 4, time_retained=timedelta(minutes=1))
    return root


class BulkDeletes(ForwardingFileIO):
    """Local disk with an object store's delete path: each step in one delete call, and expiration asks which data
    files and manifests exist ahead of deleting them (FileIO.existing_files), as on S3."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.bulk_delete = True


@pytest.mark.parametrize("bulk", [False, True], ids=["local", "bulk-deletes"])
def test_expiration_survives_a_fault_at_every_call(
    bases: dict[str, tuple[Path, History, Model]], expire_base: Path, scratch: Path, bulk: bool
) -> None:
    _, history, _ = bases["write-only"]
    history = history.copy()
    history.tags["short"] = 4

    def run(ctx: TableContext) -> Any:
        ctx = faulty_context(ctx, BulkDeletes(ctx.io)) if bulk else ctx
        return expire_snapshots(ctx, **EXPIRE_SETTINGS, now_ms=FAR_FUTURE_MS)

    reference = copy_table(expire_base, scratch / "reference")
    done = run(_context(reference))
    assert done.expired_tags == ("short",) and done.deleted_data_files > 0
    expected_files = files_under(reference)
    expected_history = History(history.rows, {"t2": 2})
    assert expected_files == reachable_files(_context(reference))

    points = _count_points(copy_table(expire_base, scratch / "count"), run)
    written = {"write_bytes", "delete_files", "remove_empty_dir", "write_if_absent"}  # the last: the audit record
    assert {op for op, _ in points} == written
    failures: list[str] = []
    cases = list(itertools.product(range(1, len(points) + 1), VARIANTS))
    for number, (point, (mode, sticky)) in enumerate(cases):
        root = copy_table(expire_base, scratch / f"case-{number}")
        label = f"point {point} {points[point - 1]} {mode}{' crash' if sticky else ''}"
        try:
            _run_faulty(root, run, point, mode, sticky)
            present = check_reads_tolerating_expired_tag(root, history)
            assert "t2" in present, "the permanent tag vanished"
            run(_context(root))  # the re-run finishes the journal
            check_reads(root, expected_history)
            _assert_same_files(files_under(root), expected_files)
        except AssertionError as exc:
            failures.append(f"{label}: {exc}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    _report(failures, len(cases))


def check_reads_tolerating_expired_tag(root: Path, history: History) -> set[str]:
    """check_reads, where the short-lived tag may already be gone; returns the tags present."""
    table = Table.open(str(root))
    present = {t.name: t.snapshot.id for t in table.tags()}
    check_reads(root, History(history.rows, present))
    assert set(present) <= set(history.tags), f"unknown tags {present}"
    return set(present)


# --- orphan cleanup -----------------------------------------------------------------------------------------------
ORPHAN_FILES = (
    "part=p0/bucket-0/data-0e1f0000-0000-4000-8000-000000000001-0.parquet",
    "part=p9/bucket-0/data-0e1f0000-0000-4000-8000-000000000002-0.parquet",
    "manifest/manifest-0e1f0000-0000-4000-8000-000000000003-0",
    "manifest/manifest-list-0e1f0000-0000-4000-8000-000000000003-1",
    "snapshot/.snapshot-7.0e1f0000-0000-4000-8000-000000000004.tmp",
)
UNKNOWN_FILE = "part=p0/bucket-0/notes.txt"


@pytest.fixture(scope="module")
def orphan_base(bases: dict[str, tuple[Path, History, Model]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The write-only history, two days old, plus old orphans (a crashed writer's leftovers) and an unknown file."""
    base, _, _ = bases["write-only"]
    root = copy_table(base, tmp_path_factory.mktemp("orphans") / "t")
    for rel in (*ORPHAN_FILES, UNKNOWN_FILE):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"left behind by a crashed writer")
    (root / "part=p8" / "bucket-0").mkdir(parents=True)
    age_files(root, 2 * DAY_S)
    return root


def test_orphan_cleanup_survives_a_fault_at_every_call(
    bases: dict[str, tuple[Path, History, Model]], orphan_base: Path, scratch: Path
) -> None:
    _, history, _ = bases["write-only"]

    def run(ctx: TableContext) -> Any:
        return remove_orphan_files(ctx, parallelism=1)  # the default 1-day guard

    reference = copy_table(orphan_base, scratch / "reference")
    done = run(_context(reference))
    assert sorted(done.deleted_paths) == sorted(ORPHAN_FILES)
    assert done.skipped_unknown == (UNKNOWN_FILE,)
    expected_files = files_under(reference)
    assert expected_files == reachable_files(_context(reference)) | {UNKNOWN_FILE}
    assert not (reference / "part=p8").exists() and not (reference / "part=p9").exists()

    def recover(root: Path) -> None:  # one more run, as after a crash
        run(_context(root))

    _sweep_orphan_cleanup(orphan_base, scratch, history, run, recover, expected_files, len(ORPHAN_FILES))


def _sweep_orphan_cleanup(
    base: Path,
    scratch: Path,
    history: History,
    run: Callable[[TableContext], Any],
    recover: Callable[[Path], Any],
    expected_files: set[str],
    orphans_deleted: int,
) -> None:
    """A fault at every call of ``run`` (which deletes ``orphans_deleted`` orphans, then its claim) on a copy of
    ``base``, then ``recover``: the reads stay right, and the files end as ``expected_files``."""
    points = _count_points(copy_table(base, scratch / "count"), run)
    deletes = [name for op, name in points if op == "delete_files"]
    assert len(deletes) == orphans_deleted + 1 and deletes[-1].startswith("claim-")  # last, the run's claim
    failures: list[str] = []
    cases = list(itertools.product(range(1, len(points) + 1), VARIANTS))
    for number, (point, (mode, sticky)) in enumerate(cases):
        root = copy_table(base, scratch / f"case-{number}")
        label = f"point {point} {points[point - 1]} {mode}{' crash' if sticky else ''}"
        try:
            _run_faulty(root, run, point, mode, sticky)
            check_reads(root, history)
            recover(root)
            check_reads(root, history)
            _assert_same_files(files_under(root), expected_files)
        except AssertionError as exc:
            failures.append(f"{label}: {exc}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    _report(failures, len(cases))


def test_counting_mode_numbers_each_deleted_path(tmp_path: Path) -> None:
    """The wrapper itself: a batch delete is one call point per path; 'before' and 'after' differ by one file."""
    from tableformat.io.local import LocalFileIO

    paths = [str(tmp_path / f"f{i}") for i in range(4)]
    for mode, survivors in (("before", ["f2", "f3"]), ("after", ["f3"])):
        for path in paths:
            Path(path).write_bytes(b"x")
        faulty = FaultyFileIO(LocalFileIO(), fail_at=4, mode=mode)  # type: ignore[arg-type]
        faulty.write_bytes(str(tmp_path / "w"), b"1")  # call point 1
        with pytest.raises(InjectedFault) as raised:
            faulty.delete_files(paths)  # points 2..5; the 3rd path (f2) is point 4
        assert raised.value.point == 4 and raised.value.path == paths[2]
        assert sorted(p.name for p in tmp_path.glob("f*")) == survivors
        assert faulty.delete_files(paths[3:]) == [paths[3]]  # transient: later calls pass
    crashed = FaultyFileIO(LocalFileIO(), fail_at=1, mode="after", sticky=True)
    with pytest.raises(InjectedFault):
        crashed.write_bytes(str(tmp_path / "a"), b"1")
    with pytest.raises(InjectedFault):
        crashed.write_bytes(str(tmp_path / "b"), b"1")
    assert (tmp_path / "a").exists() and not (tmp_path / "b").exists() and crashed.refused == 1


def test_a_limited_orphan_cleanup_survives_a_fault_at_every_call(
    bases: dict[str, tuple[Path, History, Model]], orphan_base: Path, scratch: Path
) -> None:
    """``max_files=2``: a fault at any call of the first run, then runs until no backlog is left, ends with exactly
    the files of runs that were never interrupted (every orphan deleted, nothing else)."""
    _, history, _ = bases["write-only"]

    def run(ctx: TableContext) -> Any:
        return remove_orphan_files(ctx, parallelism=1, max_files=2)

    def until_done(root: Path) -> list[Any]:
        results = [run(_context(root))]
        while results[-1].backlog and len(results) < 5:
            results.append(run(_context(root)))
        return results

    reference = copy_table(orphan_base, scratch / "reference")
    done = until_done(reference)
    assert [len(r.deleted_paths) for r in done] == [2, 2, 1] and [r.backlog for r in done] == [3, 1, 0]
    assert sorted(p for r in done for p in r.deleted_paths) == sorted(ORPHAN_FILES)
    expected_files = files_under(reference)

    def recover(root: Path) -> None:
        assert until_done(root)[-1].backlog == 0

    _sweep_orphan_cleanup(orphan_base, scratch, history, run, recover, expected_files, 2)
