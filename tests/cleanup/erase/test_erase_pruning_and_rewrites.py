"""How an erasure by keys finds files: a keys file prunes by each file's key column statistics against the keys
themselves (a file is opened only when a key lies within its min..max, never because it lies between two keys), a
file of only nulls or without usable bounds is judged as the statistics allow."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from support.erase_tables import all_rows, events_table

from tableformat.cleanup.erase import plan_erase
from tableformat.cleanup.erase.plan import EraseConfig
from tableformat.table import Table


def _keys_plan(table: Table, keys_file: Path, key: str) -> tuple[int, int, list[int]]:
    """(live files, files opened, matching rows per matched file) of the erasure's plan."""
    ctx = Table.open(table.location).context
    plan = plan_erase(ctx, EraseConfig.resolve(ctx, {"keys_file": str(keys_file), "key": key}), 0)
    return plan.live_files, plan.opened_files, [f.rows for f in plan.files]


def _keys_file(path: Path, column: str, values: list[object], dtype: pa.DataType) -> Path:
    pq.write_table(pa.table({column: pa.array(values, dtype)}), path)
    return path


def test_keys_open_only_the_files_whose_range_holds_a_key(tmp_path: Path) -> None:
    # 41 files of 10 users each (0..9, 10..19, ...); keys every 20 users: the even files hold one, the odd lie between
    table = events_table(tmp_path / "t", [(range(10 * i, 10 * i + 10), 0) for i in range(41)])
    keys = _keys_file(tmp_path / "keys.parquet", "user_id", list(range(0, 401, 20)), pa.int64())
    assert _keys_plan(table, keys, "user_id") == (41, 21, [1] * 21)
    assert Table.open(table.location).maintenance.erase(keys_file=str(keys), key="user_id").erased_rows == 21
    assert {r["user_id"] for r in all_rows(table)} == set(range(410)) - set(range(0, 401, 20))


def test_a_file_of_only_nulls_is_never_opened_and_one_without_bounds_always_is(tmp_path: Path) -> None:
    # users 6, 13, 20 have no email (a file of only nulls there); scores are doubles (statistics give no bounds)
    table = events_table(tmp_path / "t", [(range(6), 0), ([6, 13, 20], 0), (range(30, 36), 1)])
    emails = _keys_file(tmp_path / "emails.parquet", "email", ["u3@example.com", "u99@example.com"], pa.string())
    assert _keys_plan(table, emails, "email") == (3, 1, [1])
    scores = _keys_file(tmp_path / "scores.parquet", "score", [1.5], pa.float64())
    assert _keys_plan(table, scores, "score") == (3, 3, [1])  # user 3: 3 * 0.5 + seq 0
