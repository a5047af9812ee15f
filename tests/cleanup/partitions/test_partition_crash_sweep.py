"""A fault at every write of a partition expiration (before or after it takes effect, transient or a crash),
then a re-run: every expired partition is dropped exactly once, no partition that should stay loses a row, and
every earlier snapshot still reads its rows. The drop only writes metadata (it never deletes a file)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from support.faults import FaultyFileIO, fault_at_every_point, faulty_context
from support.partition_tables import assert_history_reads, fill, ms, partitioned_table, rows

from tableformat.cleanup.kernel import run_operation
from tableformat.cleanup.partitions import PARTITION_EXPIRATION
from tableformat.context import TableContext
from tableformat.model.snapshot import CommitKind
from tableformat.table import Table

NOW = ms(2026, 1, 10, 12)
EXPIRED = ["2025-12-30", "2026-01-01", "2026-01-02"]
KEPT = ["2026-01-08", "2026-01-09"]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[tuple[object, ...]]]]:
    root = tmp_path_factory.mktemp("base") / "t"
    options = {
        "partition.expiration-time": "5d",
        "partition.expiration-batch-size": "2",  # two drop snapshots: a crash between them is swept too
        "file-operation.thread-num": "1",
        "manifest.merge-min-count": "2",  # the drop's commit merges manifests: those writes are swept too
    }
    table = partitioned_table(root, [("dt", pa.string())], ["dt"], **options)
    history = fill(table, [{"dt": d} for d in EXPIRED + KEPT])
    return root, history


def _expire(ctx: TableContext) -> None:
    run_operation(PARTITION_EXPIRATION, ctx, {}, now_ms=NOW)


def _points(root: Path) -> int:
    ctx = TableContext.load(str(root))
    counter = FaultyFileIO(ctx.io)
    _expire(faulty_context(ctx, counter))
    deletes = [path for op, path in counter.calls if op == "delete_files"]
    assert [p.rsplit("/", 2)[-2] for p in deletes] == [".tablefmt"]  # an uninterrupted run deletes only its claim
    return counter.count


@pytest.mark.parametrize("sticky", [False, True], ids=["transient", "crash"])
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_fault_at_every_write_then_a_rerun_drops_each_partition_once(
    base: tuple[Path, dict[int, list[tuple[object, ...]]]], tmp_path: Path, mode: str, sticky: bool
) -> None:
    source, history = base
    scratch = tmp_path / "scratch"
    shutil.copytree(source, scratch)
    total = _points(scratch)
    assert total >= 10  # two drops: manifest, merged manifests, two lists, snapshot, hint each
    failures = []
    for point, root, faulty in fault_at_every_point(source, tmp_path, total, mode, sticky, _expire):
        _expire(TableContext.load(str(root)))  # the re-run
        table = Table.open(str(root))
        drops = [s for s in table.snapshots() if s.commit_kind == CommitKind.OVERWRITE]
        expected_rows = [r for r in history[max(history)] if r[1] in KEPT]
        if rows(table) != expected_rows or sum(-(s.delta_record_count or 0) for s in drops) != 2 * len(EXPIRED):
            failures.append(f"point {point} ({faulty.calls[point - 1]}): rows {rows(table)}, drops {len(drops)}")
        assert_history_reads(table, history)
        data_files = {p.name for p in root.rglob("data-*")}
        assert data_files == {p.name for p in source.rglob("data-*")}, point  # no data file ever deleted
    assert failures == []
