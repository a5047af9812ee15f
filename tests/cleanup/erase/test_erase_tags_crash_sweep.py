"""A fault at every write and delete of ``erase --purge --include-tags`` (the table's rewrite, the tag's rewrite and
its replacement, the purge), as after a crash, then a re-run: the table and the tag read exactly as before minus the
erased rows, no Parquet file under the root holds one (the certificate passes), and after orphan cleanup no file is
left that the table does not reference."""

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


def _rows(root: Path, **at: object) -> Counter[tuple[object, ...]]:
    table = Table.open(str(root))
    return Counter((r["user_id"], str(r["amount"])) for r in table.to_arrow(**at).to_pylist())


@pytest.fixture(scope="module")
def base(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Counter[tuple[object, ...]], Counter[tuple[object, ...]]]:
    root = tmp_path_factory.mktemp("base") / "t"
    table = events_table(root, STANDARD_APPENDS)
    table.create_tag("month-end", 3)
    table_rows = Counter(r for r in _rows(root) if r[0] not in ERASED)
    tag_rows = Counter(r for r in _rows(root, tag="month-end") if r[0] not in ERASED)
    return root, table_rows, tag_rows


def _erase(ctx: TableContext) -> None:
    TableMaintenance(ctx).erase(WHERE, purge=True, include_tags=True, now_ms=FAR_FUTURE_MS)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_crash_at_every_write_and_delete_then_a_rerun_erases_the_tag_too(
    base: tuple[Path, Counter[tuple[object, ...]], Counter[tuple[object, ...]]], tmp_path: Path, mode: str
) -> None:
    source, expected, tagged = base
    counting = tmp_path / "count"
    shutil.copytree(source, counting)
    ctx = TableContext.load(str(counting))
    counter = FaultyFileIO(ctx.io)
    result = TableMaintenance(faulty_context(ctx, counter)).erase(
        WHERE, purge=True, include_tags=True, now_ms=FAR_FUTURE_MS
    )
    assert result.rewritten_tags == ("month-end",) and result.pinned_by == ()
    failures = []
    for point, root, faulty in fault_at_every_point(
        source, tmp_path, counter.count, mode, True, _erase, (OSError, TableFormatError)
    ):
        _erase(TableContext.load(str(root)))  # the re-run
        where = f"point {point} ({faulty.calls[point - 1]})"
        if _rows(root) != expected or _rows(root, tag="month-end") != tagged:
            failures.append(f"{where}: rows {sorted(_rows(root))} / tag {sorted(_rows(root, tag='month-end'))}")
            continue
        failures += [f"{where}: {problem}" for problem in left_behind(root, WHERE)]
        shutil.rmtree(root)
    assert failures == []
