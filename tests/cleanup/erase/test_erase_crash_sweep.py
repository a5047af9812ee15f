"""A fault at every write and delete of an erasure with purge (three rewrite commits, one per file, then the purge's
snapshot expiration), before or after it takes effect, transient or a crash, then a re-run: the table holds
exactly the rows without the erased ones, every kept row once, and once the re-run's purge is done no Parquet
file under the root holds an erased row (the certificate passes); after orphan cleanup no file is left that the
table does not reference."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from support.erase_tables import STANDARD_APPENDS, events_table, left_behind
from support.faults import FaultyFileIO, fault_at_every_point, faulty_context
from support.tables import FAR_FUTURE_MS

from tableformat.context import TableContext
from tableformat.errors import TableFormatError
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table

WHERE = "user_id IN (3, 25)"
ERASED = {3, 25}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Counter[tuple[object, ...]]]:
    root = tmp_path_factory.mktemp("base") / "t"
    events_table(root, STANDARD_APPENDS, **{"compaction.commit.max-files": "1"})
    return root, Counter(r for r in _rows(root) if r[0] not in ERASED)


def _rows(root: Path) -> Counter[tuple[object, ...]]:
    return Counter((r["user_id"], str(r["amount"])) for r in Table.open(str(root)).to_arrow().to_pylist())


def _erase(ctx: TableContext) -> None:
    TableMaintenance(ctx).erase(WHERE, purge=True, now_ms=FAR_FUTURE_MS)


def _points(root: Path) -> int:
    ctx = TableContext.load(str(root))
    counter = FaultyFileIO(ctx.io)
    result = TableMaintenance(faulty_context(ctx, counter)).erase(WHERE, purge=True, now_ms=FAR_FUTURE_MS)
    assert len(result.snapshot_ids) == 3 and len(result.rewritten_paths) == 3 and result.erased_rows == 3
    assert result.purged_snapshot_ids == (1, 2, 3, 4, 5, 6, 7)
    return counter.count


@pytest.mark.slow
@pytest.mark.parametrize("sticky", [False, True], ids=["transient", "crash"])
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_fault_at_every_write_and_delete_then_a_rerun_erases_everything(
    base: tuple[Path, Counter[tuple[object, ...]]], tmp_path: Path, mode: str, sticky: bool
) -> None:
    source, expected = base
    scratch = tmp_path / "scratch"
    shutil.copytree(source, scratch)
    total = _points(scratch)
    assert total >= 30  # data files, manifests, lists, snapshots, hints of three commits, then the purge's deletes
    failures = []
    # the purge's expiration reports a failed journal write as its own error: TableFormatError is tolerated too
    tolerated = (OSError, TableFormatError)
    for point, root, faulty in fault_at_every_point(source, tmp_path, total, mode, sticky, _erase, tolerated):
        _erase(TableContext.load(str(root)))  # the re-run
        where = f"point {point} ({faulty.calls[point - 1]})"
        if _rows(root) != expected:
            failures.append(f"{where}: rows {sorted(_rows(root))}")
            continue
        failures += [f"{where}: {problem}" for problem in left_behind(root, WHERE)]
        if _rows(root) != expected:
            failures.append(f"{where}: rows after orphan cleanup {sorted(_rows(root))}")
        shutil.rmtree(root)
    assert failures == []
