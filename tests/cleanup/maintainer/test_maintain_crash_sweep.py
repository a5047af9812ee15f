"""A fault at every write and delete of a maintainer pass (before or after it takes effect, transient or a crash
that leaves its lease behind), then a re-run once that lease has expired: the table ends exactly as after a clean
pass (nothing live lost, nothing leaked), and every retained snapshot and tag reads its rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.faults import FaultyFileIO
from support.tables import age_path
from support.warehouses import FakeClock, table_files, table_with_commits, wrapping_opener

from tableformat.cleanup.maintainer import MaintainSettings, TableTarget, maintain_table
from tableformat.cleanup.maintainer.lease import CLOCK_SKEW_MS
from tableformat.io.fileio import FileIO
from tableformat.table import Table

START = 1_900_000_000_000
SETTINGS = MaintainSettings()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("base") / "t"
    table = table_with_commits(root, 8, **{"file-operation.thread-num": "1", "snapshot.num-retained.min": "3"})
    table.create_tag("keep", snapshot_id=2)
    stray = root / "bucket-0" / "data-stray-0.parquet"
    stray.write_bytes(b"not referenced")
    age_path(stray, 3 * 86_400)  # older than orphan-files.older-than (1 d)
    return root


def _files(root: Path) -> set[str]:
    """The table's files without the hints: a hint write that failed is only logged (readers list instead)."""
    return {f for f in table_files(root) if f not in ("snapshot/EARLIEST", "snapshot/LATEST")}


def _reads(root: Path) -> dict[str, list[int]]:
    table = Table.open(str(root))
    found = {
        f"snapshot {s.id}": sorted(table.to_arrow(snapshot_id=s.id).column("id").to_pylist()) for s in table.snapshots()
    }
    found["tag keep"] = sorted(table.to_arrow(tag="keep").column("id").to_pylist())
    return found


def _run(root: Path, clock: FakeClock, wrap: object = None) -> object:
    opener = wrapping_opener(wrap) if wrap is not None else wrapping_opener(lambda io: io)  # type: ignore[arg-type]
    return maintain_table(TableTarget(name="t", location=str(root)), SETTINGS, owner="o", clock=clock, opener=opener)


@pytest.fixture(scope="module")
def clean(base: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[set[str], dict[str, list[int]], int]:
    scratch = tmp_path_factory.mktemp("clean") / "t"
    shutil.copytree(base, scratch)
    counter: list[FaultyFileIO] = []

    def count(inner: FileIO) -> FileIO:
        counter.append(FaultyFileIO(inner))
        return counter[-1]

    report = _run(scratch, FakeClock(START), count)
    assert report.ok and [n for n, _ in report.operations] == ["expire", "remove-orphans"]  # type: ignore[attr-defined]
    assert "bucket-0/data-stray-0.parquet" not in table_files(scratch)
    return _files(scratch), _reads(scratch), counter[0].count


@pytest.mark.parametrize("sticky", [False, True], ids=["transient", "crash"])
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_fault_at_every_write_and_delete_then_a_rerun_ends_as_a_clean_pass(
    base: Path, clean: tuple[set[str], dict[str, list[int]], int], tmp_path: Path, mode: str, sticky: bool
) -> None:
    expected_files, expected_reads, points = clean
    assert points >= 15  # journal, EARLIEST, deletes of snapshots, lists, the stray, lease files, the state
    for point in range(1, points + 1):
        scratch = tmp_path / f"p{point}"
        shutil.copytree(base, scratch)
        clock = FakeClock(START)
        faulty: list[FaultyFileIO] = []

        def wrap(inner: FileIO, point: int = point, faulty: list[FaultyFileIO] = faulty) -> FileIO:
            faulty.append(FaultyFileIO(inner, fail_at=point, mode=mode, sticky=sticky))  # type: ignore[arg-type]
            return faulty[-1]

        _run(scratch, clock, wrap)
        assert faulty[0].fired is not None, point
        clock.advance(SETTINGS.lease_duration_ms + CLOCK_SKEW_MS)  # a lease the crash left behind has expired
        rerun = _run(scratch, clock)
        assert rerun.ok, (point, rerun.errors)  # type: ignore[attr-defined]
        assert _files(scratch) == expected_files, point
        assert _reads(scratch) == expected_reads, point
        shutil.rmtree(scratch)
