"""A rewrite (compaction, record expiration) whose planned snapshot is expired while it reads: another process
replaces files the rewrite planned and expires every snapshot but the latest (``retain 1``), so a file the rewrite
is about to read is gone. That is a lost race, not corruption: the rewrite re-plans on the new latest snapshot and
finishes, every row once, or, after a bounded number of re-plans, stops with SnapshotExpiredWhileReadingError. A
missing file while the planned snapshot still exists stays a real error. The interference runs at a chosen read
(the first data file the rewrite opens, the first manifest list it reads) through ``InterferingFileIO``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.faults import InterferingFileIO, faulty_context
from support.operations import compact, expire_records
from support.ttl_tables import DAY, NOW, TIME_TYPES, append, rows, ttl_table

from tableformat.cleanup.rewrite import REPLANS
from tableformat.errors import (
    CorruptMetadataError,
    SnapshotExpiredWhileReadingError,
    SnapshotNotFoundError,
    StorageError,
)
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

KIND = TIME_TYPES[4]  # TIMESTAMP(6)


def _live(table: Table) -> set[str]:
    """File names of the latest snapshot's live data files (read afresh)."""
    fresh = Table.open(table.location)
    return {e.file.file_name for e in fresh.plan_files(fresh.latest_snapshot())}


def _on_disk(root: Path) -> set[str]:
    return {p.name for p in root.rglob("data-*")}


def _names(paths: tuple[str, ...]) -> set[str]:
    return {p.rsplit("/", 1)[-1] for p in paths}


def _expire_all_but_latest(table: Table) -> None:
    table.maintenance.expire_snapshots(retain_min=1, retain_max=1)


def test_compaction_whose_snapshot_is_expired_while_it_reads_replans_and_finishes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0, 1], [NOW - 40 * DAY, NOW - DAY])  # partly expired
    append(table, KIND, [2, 3], [NOW - 31 * DAY, NOW - 2 * DAY])  # partly expired
    append(table, KIND, [4], [NOW - 3 * DAY])
    other = Table.open(table.location)
    seen: dict[str, Any] = {}

    def race() -> None:  # another process rewrites the partly expired files, appends, and keeps 1 snapshot
        assert len(expire_records(other.context, now_ms=NOW).rewritten_files) == 2
        append(other, KIND, [5, 6], [NOW - 50 * DAY, NOW - 4 * DAY])
        _expire_all_but_latest(other)
        seen.update(live=_live(other), disk=_on_disk(root), snapshot=other.latest_snapshot().id)

    io = InterferingFileIO(table.context.io, "data-", race)
    result = compact(faulty_context(table.context, io), now_ms=NOW)

    assert io.ran == 1 and seen["snapshot"] == 5  # 3 appends, the other's rewrite, its append
    assert _names(result.compacted_files) == seen["live"] and len(seen["live"]) == 4
    assert result.snapshot_ids == (6,) and result.groups == 1 and len(result.written_files) == 1
    assert (result.rows, result.expired_rows) == (5, 1)
    assert any("re-planned 1 time" in note and "snapshot 3 was expired" in note for note in result.notes)
    assert _live(table) == _names(result.written_files)
    assert _on_disk(root) == seen["disk"] | _names(result.written_files)  # the lost attempt left nothing behind
    assert rows(table, include_expired=True) == [
        (1, KIND.value(NOW - DAY), 0), (3, KIND.value(NOW - 2 * DAY), 0), (4, KIND.value(NOW - 3 * DAY), 0),
        (6, KIND.value(NOW - 4 * DAY), 0),
    ]  # fmt: skip
    assert table.maintenance.check().ok


def test_record_expiration_whose_snapshot_is_expired_while_it_reads_replans_and_finishes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0], [NOW - 40 * DAY])  # fully expired: dropped first, without a read
    append(table, KIND, [1, 2], [NOW - 35 * DAY, NOW - DAY])  # partly expired: rewritten
    append(table, KIND, [3], [NOW - 2 * DAY])
    dropped = {e.file.file_name for e in table.plan_files(table.snapshot(1))}
    other = Table.open(table.location)
    seen: dict[str, Any] = {}

    def race() -> None:  # after our drop (snapshot 4): another process compacts, appends, keeps 1 snapshot
        merged = compact(other.context, now_ms=NOW)
        assert len(merged.compacted_files) == 2
        append(other, KIND, [4, 5], [NOW - 33 * DAY, NOW - DAY])  # partly expired
        _expire_all_but_latest(other)
        seen.update(live=_live(other), disk=_on_disk(root), merged=_names(merged.written_files))

    io = InterferingFileIO(table.context.io, "data-", race)
    result = expire_records(faulty_context(table.context, io), now_ms=NOW)

    assert io.ran == 1
    assert _names(result.dropped_files) == dropped
    assert _names(result.rewritten_files) == seen["live"] - seen["merged"]  # the appended file, on the re-plan
    # 3 appends, our drop (4); the other's compaction (5) and append (6); our rewrite (7)
    assert result.snapshot_ids == (4, 7) and len(result.written_files) == 1 and result.expired_rows == 2
    assert result.skipped_files == ()
    assert any("re-planned 1 time" in note and "snapshot 4 was expired" in note for note in result.notes)
    assert _live(table) == seen["merged"] | _names(result.written_files)
    assert _on_disk(root) == seen["disk"] | _names(result.written_files)
    assert rows(table, include_expired=True) == [
        (2, KIND.value(NOW - DAY), 0), (3, KIND.value(NOW - 2 * DAY), 0), (5, KIND.value(NOW - DAY), 0),
    ]  # fmt: skip
    assert table.maintenance.check().ok


@pytest.mark.parametrize("operation", ["compact", "expire-records"])
def test_planning_on_a_snapshot_expired_while_its_manifest_list_is_read_replans(
    tmp_path: Path, operation: str
) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0, 1], [NOW - 40 * DAY, NOW - DAY])  # partly expired
    append(table, KIND, [2], [NOW - 2 * DAY])
    first = {e.file.file_name for e in table.plan_files(table.snapshot(1))}
    before = _live(table)
    other = Table.open(table.location)
    seen: dict[str, Any] = {}

    def race() -> None:  # before planning reads snapshot 2's first manifest list: an append, and keep 1 snapshot
        append(other, KIND, [3, 4], [NOW - 45 * DAY, NOW - 3 * DAY])
        _expire_all_but_latest(other)
        seen.update(live=_live(other), disk=_on_disk(root))

    io = InterferingFileIO(table.context.io, "manifest-list-", race)
    ctx = faulty_context(table.context, io)
    if operation == "compact":
        result: Any = compact(ctx, now_ms=NOW)
        assert _names(result.compacted_files) == seen["live"] and len(seen["live"]) == 3
        assert len(result.written_files) == 1 and _live(table) == _names(result.written_files)
    else:
        result = expire_records(ctx, now_ms=NOW)
        appended = seen["live"] - before
        assert _names(result.rewritten_files) == first | appended and len(appended) == 1
        assert len(result.written_files) == 2 and result.expired_rows == 2
        assert _live(table) == (before - first) | _names(result.written_files)
    assert io.ran == 1 and result.snapshot_ids == (4,)  # 2 appends, the other's append; then ours
    assert any("re-planned 1 time" in note and "snapshot 2 was expired" in note for note in result.notes)
    assert _on_disk(root) == seen["disk"] | _names(result.written_files)
    assert rows(table, include_expired=True) == [
        (1, KIND.value(NOW - DAY), 0), (2, KIND.value(NOW - 2 * DAY), 0), (4, KIND.value(NOW - 3 * DAY), 0),
    ]  # fmt: skip


def test_a_rewrite_that_loses_every_race_stops_with_the_typed_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0], [NOW - DAY])
    append(table, KIND, [1], [NOW - DAY])
    other = Table.open(table.location)
    ids = iter(range(100, 200))
    expected = [0, 1]
    planned: list[int] = []

    def race() -> None:  # every time a file is opened: a compaction of everything, two appends, keep 1 snapshot
        planned.append(other.latest_snapshot().id)  # what the losing attempt planned on
        assert compact(other.context, now_ms=NOW).snapshot_ids
        for _ in range(2):
            row = next(ids)
            expected.append(row)
            append(other, KIND, [row], [NOW - DAY])
        _expire_all_but_latest(other)

    io = InterferingFileIO(table.context.io, "data-", race, times=100)
    with pytest.raises(SnapshotExpiredWhileReadingError) as caught:
        compact(faulty_context(table.context, io), now_ms=NOW)
    assert isinstance(caught.value, SnapshotNotFoundError)
    assert io.ran == REPLANS + 1  # the first plan, then every re-plan, lost its race
    assert caught.value.snapshot_id == planned[-1] == 2 + 3 * REPLANS
    assert str(caught.value).startswith(f"snapshot {planned[-1]} was expired while it was being read")
    assert [r[0] for r in rows(table, include_expired=True)] == expected
    assert _live(table) == _on_disk(root)  # the other's files: nothing of ours left behind
    assert table.maintenance.check().ok


def test_a_file_missing_while_its_snapshot_exists_is_still_an_error(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0], [NOW - DAY])
    append(table, KIND, [1], [NOW - DAY])
    victim = sorted(root.rglob("data-*"))[0]
    victim.unlink()  # deleted outside tablefmt
    with pytest.raises(StorageError, match="deleted outside tablefmt"):
        compact(table.context, now_ms=NOW)
    lists = sorted((root / "manifest").glob("manifest-list-*"))
    for path in lists:
        path.unlink()
    with pytest.raises(CorruptMetadataError, match="manifest list is missing"):
        expire_records(Table.open(table.location).context, now_ms=NOW)  # a fresh store: no list read before
    assert Table.open(table.location).latest_snapshot().id == 2  # nothing committed


class _BeforeSnapshotCreate(ForwardingFileIO):
    """Runs ``action`` once, just before the first ``snapshot-N`` is created through it."""

    def __init__(self, inner: FileIO, action: Callable[[], None]) -> None:
        super().__init__(inner)
        self.action: Callable[[], None] | None = action

    def write_if_absent(self, path: str, data: bytes) -> bool:
        if self.action is not None and path.rsplit("/", 1)[-1].startswith("snapshot-"):
            action, self.action = self.action, None
            action()
        return self.inner.write_if_absent(path, data)


def test_a_rewrite_commit_whose_snapshot_id_was_taken_and_expired_meanwhile_is_made_again(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = ttl_table(root, KIND, **{"compaction.min.file-num": "2"})
    append(table, KIND, [0], [NOW - DAY])
    append(table, KIND, [1], [NOW - DAY])
    planned = _live(table)
    other = Table.open(table.location)

    def race() -> None:  # snapshots 3 and 4 by another writer, then only 4 is kept: id 3 is free again, but used
        append(other, KIND, [2], [NOW - DAY])
        append(other, KIND, [3], [NOW - DAY])
        _expire_all_but_latest(other)

    result = compact(faulty_context(table.context, _BeforeSnapshotCreate(table.context.io, race)), now_ms=NOW)
    # G2b refused snapshot 3 (nothing committed); the same commit was made again on snapshot 4
    assert result.snapshot_ids == (5,) and _names(result.compacted_files) == planned
    assert _live(table) == _names(result.written_files) | (_live(other) - _names(result.written_files))
    assert len(_live(table)) == 3  # the compacted file and the other's two
    assert [r[0] for r in rows(table, include_expired=True)] == [0, 1, 2, 3]
    # the replaced files: snapshot 4 holds them
    assert _on_disk(root) == _live(table) | planned and table.maintenance.check().ok
