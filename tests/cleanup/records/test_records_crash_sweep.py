"""A fault at every write and delete of a record expiration (a metadata-only drop and two rewrite commits), before
or after it takes effect, transient or a crash, then a re-run: no row is lost or duplicated, the table holds
exactly the unexpired rows, and after snapshot expiration and orphan cleanup no file is left that the table does
not reference (the files a failed rewrite wrote are reclaimed)."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from support.faults import FaultyFileIO, fault_at_every_point, faulty_context
from support.operations import expire_records, expire_snapshots, remove_orphan_files
from support.tables import FAR_FUTURE_MS, files_under, reachable_files
from support.ttl_tables import DAY, NOW, TIME_TYPES, append, kept, ttl_table

from tableformat.context import TableContext
from tableformat.table import Table

KIND = TIME_TYPES[1]  # BIGINT epoch seconds


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[object, ...]]]:
    root = tmp_path_factory.mktemp("base") / "t"
    table = ttl_table(root, KIND, **{"compaction.commit.max-files": "1", "manifest.merge-min-count": "2"})
    append(table, KIND, [0, 1], [NOW - 40 * DAY, NOW - 35 * DAY])  # dropped by metadata
    append(table, KIND, [2, 3, 4], [NOW - 31 * DAY, None, NOW - DAY])  # rewritten
    append(table, KIND, [5, 6], [NOW - 45 * DAY, NOW - 2 * DAY])  # rewritten (second commit)
    append(table, KIND, [7], [NOW - 3 * DAY])  # untouched
    everything = [(r["id"], r["ts"]) for r in table.to_arrow(include_expired=True).to_pylist()]
    return root, sorted((r for r in everything if kept(KIND, r[1])), key=repr)


def _rows(root: Path) -> Counter[tuple[object, ...]]:
    return Counter((r["id"], r["ts"]) for r in Table.open(str(root)).to_arrow(include_expired=True).to_pylist())


def _points(root: Path) -> int:
    ctx = TableContext.load(str(root))
    counter = FaultyFileIO(ctx.io)
    result = expire_records(faulty_context(ctx, counter), now_ms=NOW)
    assert len(result.snapshot_ids) == 3 and len(result.dropped_files) == 1 and len(result.rewritten_files) == 2
    return counter.count


@pytest.mark.parametrize("sticky", [False, True], ids=["transient", "crash"])
@pytest.mark.parametrize("mode", ["before", "after"])
def test_a_fault_at_every_write_then_a_rerun_keeps_every_row_once(
    base: tuple[Path, list[tuple[object, ...]]], tmp_path: Path, mode: str, sticky: bool
) -> None:
    source, expected = base
    scratch = tmp_path / "scratch"
    shutil.copytree(source, scratch)
    total = _points(scratch)
    assert total >= 15  # data files, manifests, lists, snapshots and hints of three commits
    failures = []
    for point, root, faulty in fault_at_every_point(
        source, tmp_path, total, mode, sticky, lambda ctx: expire_records(ctx, now_ms=NOW)
    ):
        expire_records(TableContext.load(str(root)), now_ms=NOW)  # the re-run
        if _rows(root) != Counter(expected):
            failures.append(f"point {point} ({faulty.calls[point - 1]}): rows {sorted(_rows(root), key=repr)}")
            continue
        clean = TableContext.load(str(root))
        expire_snapshots(clean, retain_min=1, retain_max=1, now_ms=FAR_FUTURE_MS)
        remove_orphan_files(TableContext.load(str(root)), force=True, now_ms=FAR_FUTURE_MS)
        leaked = files_under(root) - reachable_files(TableContext.load(str(root)))
        if leaked or _rows(root) != Counter(expected):
            failures.append(f"point {point} ({faulty.calls[point - 1]}): leaked {sorted(leaked)}")
    assert failures == []
