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
from support.erase_tables import STANDARD_APPENDS, events_table
from support.faults import FaultyFileIO, faulty_context
from support.operations import remove_orphan_files
from support.tables import FAR_FUTURE_MS, files_under, reachable_files

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
    for point in range(1, total + 1):
        root = tmp_path / f"p{point}"
        shutil.copytree(source, root)
        ctx = TableContext.load(str(root))
        faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
        try:
            _erase(faulty_context(ctx, faulty))
        except (OSError, TableFormatError):  # the purge's expiration reports a failed journal write as its own
            pass
        _erase(TableContext.load(str(root)))  # the re-run
        where = f"point {point} ({faulty.calls[point - 1]})"
        if _rows(root) != expected:
            failures.append(f"{where}: rows {sorted(_rows(root))}")
            continue
        certificate = TableMaintenance(TableContext.load(str(root))).verify_erasure(WHERE)
        if not certificate.certified:
            failures.append(f"{where}: erased rows left in {certificate.matched_files} {certificate.unreadable}")
        remove_orphan_files(TableContext.load(str(root)), force=True, now_ms=FAR_FUTURE_MS)
        leaked = files_under(root) - reachable_files(TableContext.load(str(root)))
        if leaked or _rows(root) != expected:
            failures.append(f"{where}: leaked {sorted(leaked)}")
        shutil.rmtree(root)
    assert failures == []
