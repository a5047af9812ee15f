"""Record-level TTL at a fixed clock, over every supported time type: reads return exactly the unexpired rows (and
every one of them), fully expired files are dropped without a single data-file read, partly expired files are
rewritten with exactly their unexpired rows, null times are kept, history still reads."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.faults import faulty_context
from support.operations import expire_records
from support.ttl_tables import (
    CUTOFF,
    DAY,
    NOW,
    TIME_TYPES,
    DataOpenRecordingFileIO,
    TimeType,
    append,
    kept,
    rows,
    ttl_table,
)

from tableformat.model.snapshot import CommitKind
from tableformat.table import Table

FILES: list[tuple[str, list[int | None]]] = [
    ("expired", [NOW - 40 * DAY, NOW - 39 * DAY, CUTOFF - 1000 * 1000]),
    ("straddle", [CUTOFF - 1 * DAY, None, CUTOFF, CUTOFF - 1, CUTOFF + 999, NOW - 1 * DAY]),
    ("live", [NOW - 10 * DAY, NOW - 5 * DAY]),
    ("nulls", [None, None]),
    ("old-with-null", [NOW - 50 * DAY, None]),
]


def _fill(table: Table, kind: TimeType) -> dict[int, object]:
    values: dict[int, object] = {}
    next_id = 0
    for _, times in FILES:
        ids = list(range(next_id, next_id + len(times)))
        next_id += len(times)
        append(table, kind, ids, times)
        values.update({i: kind.value(t) for i, t in zip(ids, times)})
    return values


@pytest.mark.parametrize("kind", TIME_TYPES, ids=lambda k: k.name)
def test_reads_and_expiry_keep_exactly_the_unexpired_rows(tmp_path: Path, kind: TimeType) -> None:
    table = ttl_table(tmp_path / "t", kind)
    values = _fill(table, kind)
    everything = rows(table, include_expired=True)
    expected = [r for r in everything if kept(kind, r[1])]
    assert len(everything) == 15 and rows(table) == expected  # the read path hides expired rows
    assert len(expected) < len(everything) and any(r[1] is None for r in expected)
    names = {f.path.rsplit("/", 1)[-1]: i for i, f in enumerate(table.files())}
    by_label = {label: name for (label, _), name in zip(FILES, sorted(names, key=names.__getitem__))}
    before = table.latest_snapshot()
    assert before is not None

    counting = DataOpenRecordingFileIO(table.context.io)
    result = expire_records(faulty_context(table.context, counting), now_ms=NOW)

    dropped = {p.rsplit("/", 1)[-1] for p in result.dropped_files}
    rewritten = {p.rsplit("/", 1)[-1] for p in result.rewritten_files}
    partly = {by_label["straddle"], by_label["old-with-null"]}
    assert dropped == {by_label["expired"]}
    assert rewritten == partly
    assert by_label["expired"] not in counting.data_reads()  # dropped by statistics: never opened
    assert set(counting.data_reads()) == partly  # only the rewritten files were read
    assert result.expired_rows == len(everything) - len(expected)
    assert len(result.snapshot_ids) == 2 and len(result.written_files) == 2
    after = Table.open(table.location)
    assert rows(after, include_expired=True) == expected  # the expired rows are gone from the table itself
    assert rows(after) == expected
    kinds = [s.commit_kind for s in after.snapshots()[-2:]]
    assert kinds == [CommitKind.OVERWRITE, CommitKind.OVERWRITE]
    assert rows(after, snapshot_id=before.id, include_expired=True) == everything  # history untouched
    assert sorted(values) == [r[0] for r in everything]

    again = expire_records(after.context, now_ms=NOW)  # the new files carry statistics: nothing left to do
    assert again.dropped_files == () and again.rewritten_files == () and again.snapshot_ids == ()


@pytest.mark.parametrize("kind", TIME_TYPES[:1] + TIME_TYPES[4:5], ids=lambda k: k.name)
def test_dry_run_lists_exactly_what_the_real_run_does(tmp_path: Path, kind: TimeType) -> None:
    table = ttl_table(tmp_path / "t", kind)
    _fill(table, kind)
    dry = expire_records(table.context, dry_run=True, now_ms=NOW)
    snapshots = len(table.snapshots())
    assert len(table.snapshots()) == snapshots and dry.dry_run and dry.snapshot_ids == ()
    real = expire_records(table.context, now_ms=NOW)
    assert (dry.dropped_files, dry.rewritten_files) == (real.dropped_files, real.rewritten_files)
    assert (dry.expired_rows, dry.bytes_reclaimable) == (real.expired_rows, real.bytes_reclaimable)
    assert set(real.to_json()) >= {
        "dropped_paths",
        "rewritten_paths",
        "written_paths",
        "expired_records",
        "snapshot_ids",
        "reclaimable_bytes",
        "dry_run",
        "deleted_files",
        "cutoff",
        "cutoff_ms",
    }


def test_max_files_bounds_a_run_oldest_first(tmp_path: Path) -> None:
    kind = TIME_TYPES[2]
    table = ttl_table(tmp_path / "t", kind)
    for day in (60, 50, 45, 40):
        append(table, kind, [day], [NOW - day * DAY])
    first = expire_records(table.context, max_files=3, now_ms=NOW)
    assert len(first.dropped_files) == 3 and any("wait for the next run" in n for n in first.notes)
    assert rows(table, include_expired=True) == [(40, NOW - 40 * DAY, 0)]
    second = expire_records(table.context, max_files=3, now_ms=NOW)
    assert len(second.dropped_files) == 1 and rows(table, include_expired=True) == []


def test_batches_and_the_table_iterator_read_path_filter_too(tmp_path: Path) -> None:
    kind = TIME_TYPES[4]
    table = ttl_table(tmp_path / "t", kind)
    _fill(table, kind)
    expected = rows(table)
    streamed = [r for b in table.to_batches() for r in b.to_pylist()]
    assert sorted((r["id"], r["ts"], r["p"]) for r in streamed) == expected
    counting = DataOpenRecordingFileIO(table.context.io)
    ctx = faulty_context(table.context, counting)
    Table(ctx).to_arrow()
    names = [f.path.rsplit("/", 1)[-1] for f in table.files()]
    assert len(names) == len(FILES)
    assert set(counting.data_reads()) == set(names) - {names[0]}  # the fully expired file is never opened


def test_expire_records_runs_after_commits_unless_write_only(tmp_path: Path) -> None:
    """With the real clock: 2020 is expired and 2037 is not for any clock this suite runs under."""
    import datetime as dt

    kind = TIME_TYPES[6]
    old, new = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2037, 1, 1, tzinfo=dt.timezone.utc)
    table = ttl_table(tmp_path / "t", kind, **{"write-only": "false"})
    table.append(pa.table({"id": [0, 1], "ts": [old, old], "p": [0, 0]}, schema=table.arrow_schema))
    table.append(pa.table({"id": [2, 3], "ts": [old, new], "p": [0, 0]}, schema=table.arrow_schema))
    kinds = [s.commit_kind for s in table.snapshots()]
    # append, drop of the expired file, append, rewrite of the partly expired one
    assert kinds == [CommitKind.APPEND, CommitKind.OVERWRITE, CommitKind.APPEND, CommitKind.OVERWRITE]
    assert rows(table, include_expired=True) == [(3, new, 0)]
    quiet = ttl_table(tmp_path / "u", kind)  # write-only: nothing runs after commits
    quiet.append(pa.table({"id": [0], "ts": [old], "p": [0]}, schema=quiet.arrow_schema))
    assert len(quiet.snapshots()) == 1 and rows(quiet, include_expired=True) == [(0, old, 0)]


@pytest.mark.parametrize("kind", TIME_TYPES, ids=lambda k: k.name)
def test_every_reader_of_the_scan_hides_expired_rows(tmp_path: Path, kind: TimeType) -> None:
    import pyarrow.compute as pc

    table = ttl_table(tmp_path / "t", kind)
    _fill(table, kind)
    expected = rows(table)
    ids = sorted(table.to_pyarrow_dataset().to_table()["id"].to_pylist())
    assert ids == [r[0] for r in expected]
    audit = sorted(table.to_pyarrow_dataset(include_expired=True).to_table()["id"].to_pylist())
    assert audit == list(range(15))
    picked = table.to_arrow(columns=["id"], filter=pc.field("id") >= 5)  # the TTL also applies to a projection
    assert sorted(picked["id"].to_pylist()) == [r[0] for r in expected if r[0] >= 5]
    scan = table.scan()
    assert len(scan.files()) == len(FILES) - 1 == len(table.files()) - 1  # the fully expired file is left out
