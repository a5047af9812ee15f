"""The after-commit check interval is judged from the table itself (the latest snapshot's property), so it holds
across processes: two ``tablefmt write`` processes within the interval expire partitions once; after the interval
the next commit's hook expires again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from support.partition_tables import ms, partitioned_table, partitions

from tableformat.cleanup.partitions import (
    COMMIT_USER_PREFIX,
    LAST_RUN_PROPERTY,
    PARTITION_EXPIRATION,
    check_due,
    last_run_ms,
)
from tableformat.table import Table

HOUR_MS = 3_600_000


def _tablefmt(*args: str) -> str:
    command = [sys.executable, "-c", "from tableformat.cli.main import main; main()", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _parquet(path: Path, table: Table, day: str) -> str:
    pq.write_table(pa.table({"id": [1, 2], "dt": [day, day]}, schema=table.arrow_schema), path)
    return str(path)


def test_two_cli_commits_within_the_interval_expire_once_then_again_after_it(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
    table = Table.create(str(tmp_path / "t"), schema, ["dt"], {"partition.expiration-time": "30d"})  # hook on
    _tablefmt("write", table.location, _parquet(tmp_path / "a.parquet", table, "2020-01-01"))
    after_first = table.snapshots()
    assert [s.commit_kind.value for s in after_first] == ["APPEND", "OVERWRITE"]  # the hook dropped 2020-01-01
    assert after_first[1].commit_user.startswith(COMMIT_USER_PREFIX)
    marker = last_run_ms(table.context)
    assert marker is not None and abs(marker - after_first[1].time_millis) < 60_000

    _tablefmt("write", table.location, _parquet(tmp_path / "b.parquet", table, "2020-01-02"))
    assert [s.commit_kind.value for s in table.snapshots()] == ["APPEND", "OVERWRITE", "APPEND"]  # not due: no drop
    assert partitions(table) == {("2020-01-02",)}
    assert last_run_ms(table.context) == marker  # carried forward by the later commit

    later = Table.open(table.location)  # a third process, judged from the table alone
    assert not check_due(later.context, marker + HOUR_MS - 1)
    within = later.maintenance.after_commit(now_ms=marker + HOUR_MS - 1)
    assert [type(r).__name__ for r in within] == ["ExpireResult"]  # snapshot expiration only
    results = later.maintenance.after_commit(now_ms=marker + HOUR_MS)
    assert results[0].to_json()["expired_partitions"] == [{"dt": "2020-01-02"}]
    assert partitions(table) == set() and last_run_ms(table.context) == marker + HOUR_MS


def test_interval_zero_foreign_latest_snapshot_and_no_expiration_time(tmp_path: Path) -> None:
    table = partitioned_table(tmp_path / "t", [("dt", pa.string())], ["dt"])
    table.append(pa.table({"id": [1], "dt": ["2020-01-01"]}, schema=table.arrow_schema))
    assert not PARTITION_EXPIRATION.wanted(table.context)  # partition.expiration-time unset
    assert last_run_ms(table.context) is None and check_due(table.context, 0)  # never ran (or foreign snapshot)
    zero = partitioned_table(
        tmp_path / "z",
        [("dt", pa.string())],
        ["dt"],
        **{"partition.expiration-time": "1d", "partition.expiration-check-interval": "0 ms"},
    )
    zero.append(pa.table({"id": [1], "dt": ["2020-01-01"]}, schema=zero.arrow_schema))
    zero.maintenance.expire_partitions(now_ms=ms(2026, 1, 1))
    assert zero.latest_snapshot().properties[LAST_RUN_PROPERTY] == str(ms(2026, 1, 1))  # type: ignore[union-attr,index]
    assert check_due(zero.context, ms(2026, 1, 1))  # 0 = at every commit
