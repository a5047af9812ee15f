"""Erasure against concurrent writers: another writer appends rows with the same keys while the erasure runs (they
are new rows, never touched by the erasure's guarded commit: a second erasure removes them), and a concurrent
compaction replaces the files the erasure is rewriting (the erasure plans again and erases the rows from the files
that replaced them: no matching row is left behind because of a race). The interference runs at a chosen read
through ``InterferingFileIO`` or between plan and execute."""

from __future__ import annotations

from pathlib import Path

from support.erase_tables import STANDARD_APPENDS, all_rows, event_rows, events_table
from support.faults import InterferingFileIO, faulty_context
from support.operations import compact

from tableformat.cleanup.erase import ERASURE
from tableformat.cleanup.kernel.parameters import coerce_overrides
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table


def test_rows_appended_between_plan_and_commit_are_kept_and_a_second_erasure_removes_them(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", STANDARD_APPENDS)
    ctx = table.context
    config = ERASURE.configure(ctx, coerce_overrides("erase", ERASURE.parameters, {"where": "user_id = 7"}))
    plan = ERASURE.plan(ctx, config, 0)
    writer = Table.open(table.location)
    writer.append(event_rows([7, 41], 0, seq=9))  # the same key, written meanwhile

    result = ERASURE.execute(ctx, plan, config, None)

    assert result.snapshot_id == 7 and result.erased_rows == 1  # the row it planned on, not the new one
    remaining = [(r["user_id"], str(r["amount"])) for r in all_rows(table) if r["user_id"] in (7, 41)]
    assert remaining == [(7, "7.09"), (41, "41.09")]
    again = Table.open(table.location).erase("user_id = 7")
    assert again.erased_rows == 1 and len(again.rewritten_paths) == 1
    assert [r["user_id"] for r in all_rows(table) if r["user_id"] in (7, 41)] == [41]


def test_a_writer_appending_the_same_keys_while_the_erasure_reads(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", STANDARD_APPENDS)
    other = Table.open(table.location)

    def append_same_key() -> None:
        other.append(event_rows([3, 99], 2, seq=8))

    io = InterferingFileIO(table.context.io, "data-", append_same_key)
    result = TableMaintenance(faulty_context(table.context, io)).erase("user_id = 3")

    assert io.ran == 1 and result.erased_rows == 2 and result.snapshot_id == 7  # after the writer's snapshot 6
    assert [(r["user_id"], str(r["amount"])) for r in all_rows(table) if r["user_id"] in (3, 99)] == [
        (3, "3.08"),
        (99, "99.08"),
    ]
    assert table.maintenance.check().ok


def test_a_compaction_replacing_the_files_being_erased_is_followed(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", STANDARD_APPENDS, **{"compaction.min.file-num": "2"})
    before = all_rows(table)
    other = Table.open(table.location)
    compacted: list[int] = []

    def compact_meanwhile() -> None:
        compacted.append(len(compact(other.context).compacted_files))

    io = InterferingFileIO(table.context.io, "data-", compact_meanwhile)
    result = TableMaintenance(faulty_context(table.context, io)).erase("user_id IN (0, 15)")

    assert io.ran == 1 and compacted == [4]  # the two files of day 0 (users 0 and 15) and the two of day 1
    assert all_rows(table) == [r for r in before if r["user_id"] not in (0, 15)]
    assert result.erased_rows == 4 and result.skipped_files == () and result.backlog == 0  # days 0 and 2
    assert any("planned again 1 time(s)" in note for note in result.notes)
    assert table.maintenance.verify_erasure("user_id IN (0, 15)").matches > 0  # old snapshots still hold them
    purged = table.erase("user_id IN (0, 15)", purge=True)
    assert purged.erased_rows == 0 and purged.pinned_by == ()
    assert table.maintenance.verify_erasure("user_id IN (0, 15)").certified
