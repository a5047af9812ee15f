"""Crash safety: a failure injected at every delete (and write) of an expiration, then a re-run.

After each crash every snapshot still listed and every tag reads exactly its rows; after the re-run the table is
byte-for-byte the table an uninterrupted run leaves.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, context_with_io, files_under, reachable_files, rows_of, tree_bytes

from tableformat.cleanup.snapshots.journal import list_journals
from tableformat.errors import MaintenanceError
from tableformat.layout import EARLIEST
from tableformat.table import Table

SETTINGS = {"retain_min": 3, "time_retained": 0, "limit": 100}


def build(kit) -> Table:
    table = kit.table(name="base", **{"manifest.merge-min-count": "3", "consumer.expiration-time": "1 h"})
    for i in range(9):
        table.append(kit.rows(4, parts=(0, 1, 2)))
        if i == 3:
            table.overwrite(kit.rows(2, parts=(1,)), {"part": 1})
        if i == 5:
            table.drop_partitions([{"part": 2}])
    table.create_tag("kept", 4)
    table.create_tag("short", 6, time_retained=dt.timedelta(minutes=5))
    return table


def readable(root: Path, rows: dict[int, list[tuple[int, int]]], tags: dict[str, list[tuple[int, int]]]) -> None:
    table = Table.open(str(root))
    for snapshot in table.snapshots():
        assert rows_of(table.to_arrow(snapshot_id=snapshot.id)) == rows[snapshot.id]
    for tag in table.tags():
        assert rows_of(table.to_arrow(tag=tag.name)) == tags[tag.name]


@pytest.fixture
def scenario(kit, tmp_path: Path):
    table = build(kit)
    base = kit.root(table)
    rows = kit.snapshot_rows(table)
    tags = {t.name: rows_of(table.to_arrow(tag=t.name)) for t in table.tags()}
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    result = expire_snapshots(Table.open(str(reference)).context, **SETTINGS, now_ms=FAR_FUTURE_MS)
    assert result.deleted_data_files > 0 and result.deleted_manifests > 0 and result.expired_tags == ("short",)
    return base, rows, tags, tree_bytes(reference), result


def test_crash_at_every_delete_then_rerun(kit, tmp_path, scenario) -> None:
    base, rows, tags, expected, reference = scenario
    total = len(reference.deleted_paths) + 1  # + the journal itself (a crash at the claim's removal is no failure)
    for point in range(1, total + 2):
        copy = tmp_path / f"crash-{point}"
        shutil.copytree(base, copy)
        ctx = context_with_io(copy, kit.CrashingIO(crash_at_delete=point))
        parallelism = 1 if point % 2 else 3
        try:
            expire_snapshots(ctx, **SETTINGS, parallelism=parallelism, now_ms=FAR_FUTURE_MS)
            crashed = False
        except kit.Crash:
            crashed = True
        assert crashed == (point <= total), point
        readable(copy, rows, tags)
        again = expire_snapshots(Table.open(str(copy)).context, **SETTINGS, now_ms=FAR_FUTURE_MS)
        assert without_claims(tree_bytes(copy)) == expected, point  # a crashed run's claim lapses by itself
        if crashed:
            assert len(again.completed_journals) == 1
        shutil.rmtree(copy)


@pytest.mark.parametrize("point", [2, 3], ids=["journal-fails", "earliest-fails"])
def test_crash_at_journal_and_hint_writes(kit, tmp_path, scenario, point) -> None:
    """On local disk the journal is written first, then EARLIEST (execute.py, steps 1-2), after the run's claim (write
    1): write 2 (the journal) fails and nothing moved; write 3 (EARLIEST) fails and the journal is there without
    EARLIEST. In both nothing is
    deleted, every snapshot still reads, and the re-run leaves exactly the uninterrupted result."""
    base, rows, tags, expected, _ = scenario
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    before = files_under(copy)
    earliest = Table.open(str(copy)).context.store.read_hint(EARLIEST)
    with pytest.raises(kit.Crash):
        expire_snapshots(
            context_with_io(copy, kit.CrashingIO(crash_at_write=point)), **SETTINGS, now_ms=FAR_FUTURE_MS
        )
    ctx = Table.open(str(copy)).context
    assert len(list_journals(ctx)) == (0 if point == 2 else 1)
    assert ctx.store.read_hint(EARLIEST) == earliest
    assert before <= files_under(copy)  # nothing deleted
    readable(copy, rows, tags)
    again = expire_snapshots(ctx, **SETTINGS, now_ms=FAR_FUTURE_MS)
    assert len(again.completed_journals) == (0 if point == 2 else 1)
    assert tree_bytes(copy) == expected


def test_a_hint_ahead_without_a_journal_is_expired_again(tmp_path, scenario) -> None:
    """The state only object stores can leave (journal and EARLIEST PUTs at once, the journal's failing): EARLIEST
    at the plan's end, no journal, nothing deleted. Every snapshot still reads, and the next run plans from the real
    first snapshot (the one before the hint exists) and leaves exactly the uninterrupted result; a planner that
    trusted the hint would leave the snapshots below it behind."""
    base, rows, tags, expected, reference = scenario
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    ctx = Table.open(str(copy)).context
    assert ctx.store.read_hint(EARLIEST) != reference.earliest_snapshot
    ctx.store.write_hint(EARLIEST, reference.earliest_snapshot)
    assert list_journals(ctx) == []
    readable(copy, rows, tags)
    again = expire_snapshots(Table.open(str(copy)).context, **SETTINGS, now_ms=FAR_FUTURE_MS)
    assert again.completed_journals == ()
    assert tree_bytes(copy) == expected


def test_dry_run_after_a_crash_lists_what_the_rerun_deletes(kit, tmp_path, scenario) -> None:
    base, *_ = scenario
    copy = tmp_path / "copy"
    shutil.copytree(base, copy)
    with pytest.raises(kit.Crash):
        expire_snapshots(
            context_with_io(copy, kit.CrashingIO(crash_at_delete=8)), **SETTINGS, now_ms=FAR_FUTURE_MS
        )
    ctx = Table.open(str(copy)).context
    assert len(list_journals(ctx)) == 1
    dry = expire_snapshots(ctx, **SETTINGS, dry_run=True, now_ms=FAR_FUTURE_MS)
    real = expire_snapshots(ctx, **SETTINGS, now_ms=FAR_FUTURE_MS)
    assert sorted(dry.deleted_paths) == sorted(real.deleted_paths)
    assert dry.completed_journals == real.completed_journals != ()
    assert list_journals(ctx) == []


def test_rerun_counts_the_journal_against_the_limit(kit, tmp_path) -> None:
    table = kit.table()
    for _ in range(10):
        table.append(kit.rows(2))
    root = kit.root(table)
    with pytest.raises(kit.Crash):
        expire_snapshots(context_with_io(root, kit.CrashingIO(crash_at_delete=2)), retain_min=1, time_retained=0,
                         limit=3, now_ms=FAR_FUTURE_MS)
    again = expire_snapshots(table.context, retain_min=1, time_retained=0, limit=3, now_ms=FAR_FUTURE_MS)
    assert again.expired_snapshot_ids[-1] == 3 and set(again.expired_snapshot_ids) <= {1, 2, 3}
    assert [s.id for s in table.snapshots()] == list(range(4, 11))


def crash_after_journal(kit, table: Table) -> Path:
    with pytest.raises(kit.Crash):
        expire_snapshots(
            context_with_io(kit.root(table), kit.CrashingIO(crash_at_delete=1)),
            retain_min=1, time_retained=0, limit=100, now_ms=FAR_FUTURE_MS,
        )
    journals = list_journals(table.context)
    assert len(journals) == 1
    return Path(journals[0])


def small(kit) -> Table:
    table = kit.table()
    for _ in range(4):
        table.append(kit.rows(2))
    table.drop_partitions([{"part": 0}])
    return table


def test_unreadable_journal_stops_before_deleting(kit) -> None:
    table = small(kit)
    journal = crash_after_journal(kit, table)
    journal.write_bytes(b"{not json")
    before = files_under(kit.root(table))
    with pytest.raises(MaintenanceError, match=journal.name):
        expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=FAR_FUTURE_MS)
    assert files_under(kit.root(table)) == before


@pytest.mark.parametrize("field, bad", [("manifests", "schema/schema-0"), ("dataFiles", "../../etc/passwd"),
                                        ("snapshotFiles", "snapshot/LATEST"), ("tagFiles", "/abs/tag-x")])
def test_tampered_journal_is_refused(kit, field, bad) -> None:
    table = small(kit)
    journal = crash_after_journal(kit, table)
    document = json.loads(journal.read_bytes())
    document[field].append([bad, 1, []] if field == "dataFiles" else [bad, 1])
    journal.write_text(json.dumps(document))
    before = files_under(kit.root(table))
    with pytest.raises(MaintenanceError, match="unsafe"):
        expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=FAR_FUTURE_MS)
    assert files_under(kit.root(table)) == before


def test_journal_of_a_changed_table_is_discarded(kit) -> None:
    table = small(kit)
    journal = crash_after_journal(kit, table)
    document = json.loads(journal.read_bytes())
    document["fingerprints"][0][1] = "manifest-list-someone-else-0"  # as if snapshot ids were reused
    journal.write_text(json.dumps(document))
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=FAR_FUTURE_MS)
    assert result.completed_journals == ()
    assert list_journals(table.context) == []
    assert files_under(kit.root(table)) == reachable_files(table.context)


def without_claims(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {path: data for path, data in tree.items() if not path.startswith(".tablefmt/")}
