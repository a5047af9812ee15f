"""How an erasure by keys finds and rewrites files: a keys file prunes by each file's key column statistics against
the keys themselves (a file is opened only when a key lies within its min..max, never because it lies between two
keys), a file of only nulls or without usable bounds is judged as the statistics allow; a rewritten file keeps the
dictionary choices of the file it replaces (and so about its size); files rewritten at once that fail leave no new
file behind."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.erase_tables import all_rows, event_rows, events_table, live_files

from tableformat.cleanup.erase import plan_erase
from tableformat.cleanup.erase.execute import execute_erase
from tableformat.cleanup.erase.plan import EraseConfig
from tableformat.cleanup.rewrite.rewriter import PARALLEL_ROWS_PER_FILE
from tableformat.errors import CorruptMetadataError
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


def test_a_rewritten_file_keeps_the_dictionaries_of_the_file_it_replaces_and_its_size(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", [(range(20_000), 0)])
    (before,) = live_files(table).keys()
    result = table.erase("user_id IN (5, 17, 19000)")
    (written,) = result.written_paths
    old, new = pq.read_metadata(Path(table.location) / before), pq.read_metadata(Path(table.location) / written)

    def dictionaries(metadata: pq.FileMetaData) -> dict[str, bool]:
        chunks = [metadata.row_group(0).column(i) for i in range(metadata.num_columns)]
        return {chunk.path_in_schema: chunk.has_dictionary_page for chunk in chunks}

    assert dictionaries(old)["user_id"] is False and dictionaries(old)["day"] is True  # as tablefmt's appends chose
    assert dictionaries(new) == dictionaries(old)
    size = (Path(table.location) / written).stat().st_size
    assert size <= 1.1 * result.rewritten_bytes
    assert result.erased_rows == 3 and len(all_rows(table)) == 19_997


def test_files_rewritten_at_once_leave_no_new_file_when_one_fails(tmp_path: Path) -> None:
    rows = PARALLEL_ROWS_PER_FILE  # files this large are written at once (one per core)
    table = events_table(tmp_path / "t", [(range(rows * i, rows * (i + 1)), 0) for i in range(3)])
    ctx = Table.open(table.location).context
    config = EraseConfig.resolve(ctx, {"where": f"user_id IN (1, {rows + 1}, {2 * rows + 1})"})
    plan = plan_erase(ctx, config, 0)
    assert len(plan.files) == 3
    root = Path(table.location)
    on_disk = {p.name for p in root.rglob("*.parquet")}
    broken = next(root.rglob(plan.files[0].entry.file.file_name))
    broken.write_bytes(b"not parquet" * 100)  # the first unit fails; the others are written meanwhile
    with pytest.raises(CorruptMetadataError, match="unreadable Parquet"):
        execute_erase(ctx, plan, config, None)
    assert {p.name for p in root.rglob("*.parquet")} == on_disk
    assert Table.open(table.location).latest_snapshot().id == 3  # nothing committed


def test_rewriting_keeps_rows_and_order_of_every_file(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", [(range(10), 0), (range(10, 20), 1), (range(20, 30), 2)])
    expected = {day: event_rows(range(10 * day, 10 * day + 10), day, day).to_pylist() for day in range(3)}
    table.erase("user_id IN (1, 11, 21)")
    for rows in live_files(table).values():
        day = rows["day"][0].as_py().day - 1
        assert rows.to_pylist() == [r for r in expected[day] if r["user_id"] not in (1, 11, 21)]


@pytest.mark.parametrize("column", ["user_id", "email", "amount", "ts", "day"])
def test_keys_of_each_column_type_open_every_file_holding_one(tmp_path: Path, column: str) -> None:
    # a key column that is the partition key (day) prunes by the keys' ranges; the others by the sorted keys
    table = events_table(tmp_path / "t", [(range(10 * i, 10 * i + 10), i % 3) for i in range(12)])
    rows = Table.open(table.location).to_arrow()
    wanted = [rows[column][i].as_py() for i in (3, 47, 117)]  # none of them null
    keys = pa.array([*wanted, rows[column][47].as_py()], rows.schema.field(column).type)
    pq.write_table(pa.table({column: keys}), tmp_path / "keys.parquet")
    keys_file = tmp_path / "keys.parquet"
    holding = {p for p, t in live_files(table).items() if set(wanted) & set(t[column].to_pylist())}

    live, opened, matched = _keys_plan(table, keys_file, column)
    if column in ("user_id", "amount", "ts"):  # each file holds its own range of these: only the holders open
        assert opened == len(holding) == 3 and live == 12
    erased = Table.open(table.location).maintenance.erase(keys_file=str(keys_file), key=column)

    assert set(erased.rewritten_paths) == holding and opened >= len(holding) and len(matched) == len(holding)
    assert {tuple(r.values()) for r in all_rows(table)} == {
        tuple(r.values()) for r in rows.to_pylist() if r[column] not in wanted
    }
