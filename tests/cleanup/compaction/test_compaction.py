"""Compaction: small files of each partition merged into files near the target size, one COMPACT snapshot per
batch, every row kept exactly once (expired rows dropped when the table has a record TTL); Paimon's thresholds."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from support.operations import compact
from support.ttl_tables import DAY, NOW, TIME_TYPES, append, rows, ttl_table

from tableformat.errors import ValidationError
from tableformat.model.snapshot import CommitKind
from tableformat.table import Table

KIND = TIME_TYPES[4]


def _small_files(table: Table, per_partition: int, partitions: tuple[int, ...] = (0, 1)) -> None:
    next_id = 0
    for p in partitions:
        for _ in range(per_partition):
            append(table, KIND, [next_id, next_id + 1], [NOW - DAY, None], p=p)
            next_id += 2


def test_small_files_merge_per_partition_every_row_once(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND, partition=True, **{"compaction.max.file-num": "4"})
    _small_files(table, 6)
    before = rows(table, include_expired=True)
    dry = compact(table.context, dry_run=True, now_ms=NOW)
    result = compact(table.context, now_ms=NOW)
    assert dry.compacted_files == result.compacted_files and dry.groups == result.groups == 4
    assert len(result.compacted_files) == 12 and len(result.written_files) == 4  # 4 + 2 files per partition
    assert Counter(rows(table, include_expired=True)) == Counter(before) and len(before) == 24
    assert [s.commit_kind for s in table.snapshots()[12:]] == [CommitKind.COMPACT]
    assert sorted(f.row_count for f in table.files()) == [4, 4, 8, 8]
    partitions = Counter(f.partition["p"] for f in table.files())
    assert partitions == {0: 2, 1: 2}


def test_thresholds_min_file_num_target_size_and_partition_filter(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND, partition=True)
    _small_files(table, 4, (0,))
    _small_files(table, 6, (1,))
    assert compact(table.context, now_ms=NOW, partition="p=0").groups == 0  # 4 < compaction.min.file-num (5)
    result = compact(table.context, now_ms=NOW, partition={"p": 1})
    assert result.groups == 1 and len(result.compacted_files) == 6
    assert compact(table.context, now_ms=NOW).groups == 0  # nothing small enough and numerous enough is left
    big = compact(table.context, now_ms=NOW, target_file_size=1)  # every file is large against a 1-byte target
    assert big.groups == 0
    with pytest.raises(ValidationError, match="invalid memory size"):
        compact(table.context, target_file_size="lots")
    with pytest.raises(ValidationError, match="partition"):
        compact(table.context, partition="q=1")


def test_compaction_drops_expired_rows_too(tmp_path: Path) -> None:
    table = ttl_table(tmp_path / "t", KIND)
    for i in range(5):
        append(table, KIND, [i], [NOW - (28 + i) * DAY])  # ids 3 and 4 are expired, 2 too (30 d > cutoff? no)
    result = compact(table.context, now_ms=NOW)
    kept = [r[0] for r in rows(table, include_expired=True)]
    assert result.rows == 5 and result.expired_rows == 5 - len(kept) and kept == [0, 1, 2]
    assert len(table.files()) == 1


def test_non_rewritable_tables_are_refused(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    with pytest.raises(ValidationError, match="record expire time"):
        table.maintenance.expire_records()
    with pytest.raises(ValidationError, match="not a column"):
        table.maintenance.expire_records(expire_time="1 d", time_field="nope")
    with pytest.raises(ValidationError, match="has type BIGINT|must be INT"):
        Table.create(str(tmp_path / "u"), pa.schema([("s", pa.string())]),
                     options={"record-level.expire-time": "1 d", "record-level.time-field": "s"})
    with pytest.raises(ValidationError, match="record-level.time-field is not"):
        Table.create(str(tmp_path / "v"), pa.schema([("s", pa.int32())]), options={"record-level.expire-time": "1 d"})
