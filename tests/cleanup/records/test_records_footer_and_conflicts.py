"""Files without time statistics (as other writers leave them) are judged from their Parquet footers; a rewrite
that races a concurrent commit is re-planned or abandoned without losing or duplicating a row; the committer's
guarded REPLACE commits nothing when a replaced file is gone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
from support.faults import faulty_context
from support.operations import compact, expire_records
from support.ttl_tables import DAY, NOW, TIME_TYPES, DataOpenRecordingFileIO, append, kept, rows, ttl_table

from tableformat.cleanup.records import RECORD_EXPIRATION
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import DataFileWriter
from tableformat.layout import NameFactory
from tableformat.model.manifest import EMPTY_STATS
from tableformat.table import Table

KIND = TIME_TYPES[5]  # TIMESTAMP(9)


def _append_without_stats(table: Table, ids: list[int], times: list[int | None]) -> None:
    """Commit a file whose manifest entry records no value statistics (stats mode none, other engines)."""
    ctx = table.context
    data = pa.table({"id": ids, "ts": [KIND.value(t) for t in times], "p": [0] * len(ids)}, schema=table.arrow_schema)
    files = DataFileWriter(ctx.io, ctx.layout, ctx.schema, NameFactory()).write(data)
    bare = [
        dataclasses.replace(f, meta=dataclasses.replace(f.meta, value_stats=EMPTY_STATS, value_stats_cols=()))
        for f in files
    ]
    Committer(ctx.store, ctx.schema).commit(CommitRequest(kind=ChangeKind.APPEND, new_files=bare))


def test_statistics_come_from_the_footer_when_the_manifest_has_none(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND)
    _append_without_stats(table, [0, 1], [NOW - 40 * DAY, NOW - 39 * DAY])  # expired
    _append_without_stats(table, [2, 3, 4], [NOW - 31 * DAY, None, NOW - 1 * DAY])  # straddles
    _append_without_stats(table, [5], [NOW - 2 * DAY])  # live
    everything = rows(table, include_expired=True)
    expected = [r for r in everything if kept(KIND, r[1])]
    assert rows(table) == expected  # without statistics the read path opens every file and filters its rows
    counting = DataOpenRecordingFileIO(table.context.io)
    result = expire_records(faulty_context(table.context, counting), now_ms=NOW)
    assert len(result.dropped_files) == 1 and len(result.rewritten_files) == 1
    assert any("footers were read" in n for n in result.notes)
    dropped = result.dropped_files[0].rsplit("/", 1)[-1]
    rewritten = result.rewritten_files[0].rsplit("/", 1)[-1]
    # The dropped file's footer was read (its statistics), its data never: one open of its tail.
    assert counting.data_reads().count(dropped) == 1
    assert rewritten in counting.data_reads()
    assert (
        rows(table, include_expired=True)
        == expected
        == [(3, None, 0), (4, KIND.value(NOW - DAY), 0), (5, KIND.value(NOW - 2 * DAY), 0)]
    )


def test_a_rewrite_whose_file_was_compacted_meanwhile_is_abandoned_then_redone(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0, 1], [NOW - 31 * DAY, NOW - 1 * DAY])  # straddles
    append(table, KIND, [2], [NOW - 3 * DAY])
    ctx = table.context
    config = RECORD_EXPIRATION.configure(ctx, {})
    plan = RECORD_EXPIRATION.plan(ctx, config, NOW)
    assert len(plan.rewrites) == 1
    other = Table.open(table.location)
    merged = compact(other.context, now_ms=NOW)  # another process compacts both files (dropping row 0 too)
    assert len(merged.compacted_files) == 2 and merged.expired_rows == 1
    result = RECORD_EXPIRATION.execute(ctx, plan, config, None)
    assert result.rewritten_files == () and result.snapshot_ids == ()
    reasons = [reason for _, reason in result.skipped_files]
    assert reasons == ["a file was removed by a concurrent commit; not rewritten"]
    assert rows(table, include_expired=True) == [(1, KIND.value(NOW - DAY), 0), (2, KIND.value(NOW - 3 * DAY), 0)]
    data_files = {p.name for p in (tmp_path / "t").rglob("data-*")}
    assert len(data_files) == 3  # the abandoned rewrite's new file was removed (2 old + 1 compacted)


def test_an_append_during_a_rewrite_is_kept(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND)
    append(table, KIND, [0, 1], [NOW - 31 * DAY, NOW - 1 * DAY])
    ctx = table.context
    config = RECORD_EXPIRATION.configure(ctx, {})
    plan = RECORD_EXPIRATION.plan(ctx, config, NOW)
    append(Table.open(table.location), KIND, [7], [NOW - 40 * DAY])  # appended (already expired) after planning
    result = RECORD_EXPIRATION.execute(ctx, plan, config, None)
    assert len(result.rewritten_files) == 1
    assert rows(table, include_expired=True) == [(1, KIND.value(NOW - DAY), 0), (7, KIND.value(NOW - 40 * DAY), 0)]
    assert len(expire_records(ctx, now_ms=NOW).dropped_files) == 1  # the next run takes it


def test_replace_commits_nothing_when_a_replaced_file_is_gone(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND)
    append(table, KIND, [0], [NOW])
    append(table, KIND, [1], [NOW])
    ctx = table.context
    live = table.plan_files(table.latest_snapshot())
    committer = Committer(ctx.store, ctx.schema)
    first = committer.commit(CommitRequest(kind=ChangeKind.REPLACE, replaced_files=(live[0],)))
    assert first.created and first.snapshot is not None and first.snapshot.delta_record_count == -1
    second = committer.commit(CommitRequest(kind=ChangeKind.REPLACE, replaced_files=tuple(live)))
    assert not second.created and second.snapshot is None
    assert [e.file.file_name for e in second.missing_files] == [live[0].file.file_name]
    assert [r[0] for r in rows(table, include_expired=True)] == [1]
