"""Option ranges on the command line: an out-of-range duration, size or count given to `options set`, `create --option`,
the maintain config or an operation's flag is a usage error (exit 2, one line `error: ...` naming the option and
its range, nothing written); a value already stored out of range is one clear line from the operation that uses it
(never 'unexpected OverflowError'), and `tablefmt maintain` still runs the table's other operations."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.tables import with_stored_options

from tableformat import Table
from tableformat.cli.main import cli

HUGE = "99999999999999999d"
DURATION_RANGE = ">= 0 ms and <= 36500 d"
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ns")), ("day", pa.date32())])
DAYS = [dt.date(2000, 1, 1), dt.date(2099, 1, 1)]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def make(path: Path, **options: str) -> Table:
    """Partitions 2000-01-01 (row 0) and 2099-01-01 (rows 1 and 2), in three snapshots of one row each."""
    table = Table.create(
        str(path), SCHEMA, ["day"], options={"record-level.time-field": "ts", "write-only": "true", **options}
    )
    for i, day in enumerate([*DAYS, DAYS[1]]):
        table.append(pa.table({"id": [i], "ts": [dt.datetime(2024, 1, 1)], "day": [day]}, SCHEMA))
    return table


def ids(table: Table) -> list[int]:
    return sorted(Table.open(table.location).to_arrow().column("id").to_pylist())


def test_options_set_refuses_an_out_of_range_duration_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    table = make(tmp_path / "t")
    code, out, err = run("options", "set", table.location, f"record-level.expire-time={HUGE}")
    assert (code, out) == (2, "")
    assert err == f"error: option record-level.expire-time must be {DURATION_RANGE}, got {HUGE!r}\n"
    assert sorted(table.context.store.schema_ids()) == [0]
    code, out, err = run("options", "set", table.location, "snapshot.expire.limit=5", "file.compression.zstd-level=0")
    assert (code, err) == (2, "error: option file.compression.zstd-level must be >= 1 and <= 22, got '0'\n")
    code, out, err = run("options", "set", table.location, "snapshot.expire.limit=2147483648", "--json")
    assert code == 2 and err == "error: option snapshot.expire.limit must be >= 1 and <= 2147483647, got '2147483648'\n"
    assert json.loads(out)["error"] == "option snapshot.expire.limit must be >= 1 and <= 2147483647, got '2147483648'"
    assert sorted(table.context.store.schema_ids()) == [0] and ids(table) == [0, 1, 2]


def test_create_option_refuses_an_out_of_range_duration(tmp_path: Path) -> None:
    source = tmp_path / "schema.parquet"
    pa.parquet.write_table(pa.table({"id": pa.array([], pa.int64())}), source)
    code, out, err = run(
        "create", str(tmp_path / "t"), "--schema-from", str(source), "--option", f"snapshot.time-retained={HUGE}"
    )
    assert (code, out) == (2, "")
    assert err == (
        f"error: Invalid value for '--option': option snapshot.time-retained must be {DURATION_RANGE}, got {HUGE!r}\n"
    )
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            f'[tables."*"]\n"record-level.expire-time" = "{HUGE}"\n',
            f"tables.*: option record-level.expire-time must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (f'lease-duration = "{HUGE}"\n', f"lease-duration: must be >= 1 ms and <= 36500 d, got {HUGE!r}"),
        ("parallelism = 2147483648\n", "parallelism: must be >= 1 and <= 2147483647, got 2147483648"),
    ],
)
def test_the_maintain_config_refuses_an_out_of_range_value_before_any_table_is_touched(
    tmp_path: Path, config: str, message: str
) -> None:
    table = make(tmp_path / "t")
    path = tmp_path / "maintain.toml"
    path.write_text(config)
    code, out, err = run("maintain", "--config", str(path), table.location)
    assert (code, out) == (2, "")
    assert err == f"error: {path}: {message}\n"
    assert not (Path(table.location) / ".tablefmt").exists() and ids(table) == [0, 1, 2]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["expire-partitions", "{t}", "--expiration-time", HUGE],
            f"error: Invalid value for '--expiration-time': must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            ["expire-partitions", "{t}", "--expiration-time", "30d", "--max-num", "2147483648"],
            "error: Invalid value for '--max-num': 2147483648 is not in the range 1<=x<=2147483647.",
        ),
        (
            ["expire-records", "{t}", "--expire-time", "200000d"],
            f"error: Invalid value for '--expire-time': must be {DURATION_RANGE}, got '200000d'",
        ),
        (
            ["expire", "{t}", "--time-retained", HUGE],
            f"error: Invalid value for '--time-retained': must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            ["expire", "{t}", "--limit", "2147483648"],
            "error: Invalid value for '--limit': 2147483648 is not in the range 1<=x<=2147483647.",
        ),
        (
            ["remove-orphans", "{t}", "--older-than", HUGE],
            f"error: Invalid value for '--older-than': must be {DURATION_RANGE}, got {HUGE!r}",
        ),
        (
            ["tag", "create", "{t}", "forever", "--time-retained", HUGE],
            f"error: Invalid value for '--time-retained': must be {DURATION_RANGE}, got {HUGE!r}",
        ),
    ],
)
def test_an_operation_flag_out_of_range_is_a_usage_error(tmp_path: Path, args: list[str], line: str) -> None:
    table = make(tmp_path / "t")
    code, out, err = run(*[a.replace("{t}", table.location) for a in args])
    assert (code, out, err) == (2, "", line + "\n")
    assert [s.id for s in Table.open(table.location).snapshots()] == [1, 2, 3] and ids(table) == [0, 1, 2]


@pytest.mark.parametrize(("key", "operation"), [("partition.expiration-time", "expire-partitions"),
                                                ("record-level.expire-time", "expire-records")])  # fmt: skip
def test_a_stored_out_of_range_expiration_time_is_one_clear_line(tmp_path: Path, key: str, operation: str) -> None:
    retain = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "snapshot.time-retained": "0 ms"}
    table = with_stored_options(make(tmp_path / "t"), **{key: HUGE, **retain})
    message = f"option {key} must be {DURATION_RANGE}, got {HUGE!r}"
    code, out, err = run(operation, table.location)
    assert (code, out, err) == (1, "", f"error: {message}\n")
    code, out, err = run("maintain", "--json", table.location)
    report = json.loads(out)
    assert code == 1 and "unexpected" not in out + err and "OverflowError" not in out + err
    assert report["error"] == f"{operation}: {message}"
    assert report["operations"]["expire"]["expired_snapshot_ids"] == [1, 2]  # the other operations still ran
    assert ids(table) == [0, 1, 2]


def test_an_expiration_override_still_works_on_a_table_storing_an_out_of_range_time(tmp_path: Path) -> None:
    table = with_stored_options(make(tmp_path / "t"), **{"partition.expiration-time": HUGE})
    code, out, err = run("expire-partitions", table.location, "--expiration-time", "30d", "--json")
    assert (code, err) == (0, "") and json.loads(out)["expired_partitions"] == [{"day": "2000-01-01"}]
    assert ids(table) == [1, 2]
