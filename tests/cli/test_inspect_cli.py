"""The inspect and steer commands: human output at 80 columns (snapshot tests, times, sizes and file names masked),
--json for each, JSON errors, -q, `| head` without a Broken pipe error, and progress lines on a terminal."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import pty
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from support.terminal import utc_80_columns

from tableformat import Table
from tableformat.cli.main import cli

__all__ = ["utc_80_columns"]  # the autouse fixture, imported to apply here

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("v", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> str:
    """Snapshots 1-3 append 100 rows into each of 2024-01-01..03, tag `nightly` on 2, snapshot 4 overwrites
    2024-01-02 with one row, snapshot 5 drops 2024-01-03."""
    root = str(tmp_path / "events")
    created = Table.create(root, SCHEMA, ["dt"], options={"write-only": "true", "snapshot.num-retained.min": "2"})
    for day in range(3):
        ids = list(range(day * 100, day * 100 + 100))
        created.append(
            pa.table({"id": ids, "dt": [dt.date(2024, 1, 1 + day)] * 100, "v": [f"value-{i}" for i in ids]}, SCHEMA)
        )
    created.create_tag("nightly", 2)
    created.overwrite(pa.table({"id": [7], "dt": [dt.date(2024, 1, 2)], "v": ["x"]}, SCHEMA), {"dt": "2024-01-02"})
    created.drop_partitions([{"dt": "2024-01-03"}])
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def mask(text: str) -> str:
    """Times, UUIDs, digits of sizes and the number of default options vary between runs and versions: masked
    character for character, so alignment stays as printed."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "YYYY-MM-DDThh:mm:ss", text)
    text = re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", lambda m: re.sub("[0-9a-f]", "x", m.group()), text)
    text = re.sub(r"\d+(\.\d+)? (B|KiB|MiB)\b", lambda m: re.sub(r"\d", "#", m.group()), text)
    return re.sub(r"^\d+ other option", "N other option", text, flags=re.MULTILINE)


def human(*args: str) -> str:
    """A command's stdout, masked; every line fits 80 columns (but one naming the table's own long test path)."""
    result = run(*args)
    assert result.exit_code == 0, result.output
    paths = [a for a in args if "/" in a]
    assert all(len(line) <= 80 for line in result.stdout.splitlines() if not any(p in line for p in paths))
    assert all(line == line.rstrip() for line in result.stdout.splitlines())
    return mask(result.stdout)


SNAPSHOTS = """\
id  kind       committed                  records     added   removed
 1  APPEND     YYYY-MM-DDThh:mm:ss+00:00      100  #.## KiB       # B
 2  APPEND     YYYY-MM-DDThh:mm:ss+00:00      200  #.## KiB       # B
 3  APPEND     YYYY-MM-DDThh:mm:ss+00:00      300  #.## KiB       # B
 4  OVERWRITE  YYYY-MM-DDThh:mm:ss+00:00      201     ### B  #.## KiB
 5  OVERWRITE  YYYY-MM-DDThh:mm:ss+00:00      101       # B  #.## KiB
"""

TAGS = """\
tag      snapshot  committed                  records  retained  expires
nightly         2  YYYY-MM-DDThh:mm:ss+00:00      200  forever   never
"""

PARTITIONS = """\
partition      records  files      size  last update
dt=2024-01-01      100      1  #.## KiB  YYYY-MM-DDThh:mm:ss+00:00
dt=2024-01-02        1      1     ### B  YYYY-MM-DDThh:mm:ss+00:00
2 partition(s), 2 file(s), 101 records, #.## KiB
"""

FILES = """\
partition      files  records      size  smallest   largest
dt=2024-01-01      1      100  #.## KiB  #.## KiB  #.## KiB
dt=2024-01-02      1        1     ### B     ### B     ### B
2 partition(s), 2 file(s), 101 records, #.## KiB
"""

FILES_LIST = """\
file                                                   records      size
dt=2024-01-01  bucket-0
  data-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-0.parquet      100  #.## KiB
dt=2024-01-02  bucket-0
  data-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-0.parquet        1     ### B
2 partition(s), 2 file(s), 101 records, #.## KiB
"""

DESCRIBE = """\
table:          {root}
schema:         schema-0, 3 column(s)
partitioned by: dt
snapshots:      5, earliest 1, latest 5 (YYYY-MM-DDThh:mm:ss+00:00)
tags:           1
branches:       -
consumers:      0
live data:      #.## KiB in 2 file(s), 101 records, 2 partition(s)

column  type    id
id      BIGINT   0
dt      DATE     1
v       STRING   2

option                     value    source
file.format                parquet  table
snapshot.num-retained.min  2        table
write-only                 true     table
N other option(s) at their defaults (`tablefmt options TABLE --all`)
"""

OPTIONS = """\
option                     value    source
file.format                parquet  table
snapshot.num-retained.min  2        table
write-only                 true     table
N other option(s) at tablefmt's defaults (--all lists them)
"""


def test_human_output_at_80_columns(table: str) -> None:
    assert human("snapshots", table) == SNAPSHOTS
    assert human("tag", "list", table) == TAGS
    assert human("partitions", table) == PARTITIONS
    assert human("files", table) == FILES
    assert human("files", table, "--list") == FILES_LIST
    assert human("describe", table, "--no-sizes") == DESCRIBE.format(root=table)
    assert human("options", table) == OPTIONS == human("options", "show", table)
    sized = human("describe", table)
    assert "\nstored:         ##.# KiB (orphans # B)\n" in sized
    assert "\nreclaimable:    # B: orphan bytes + bytes an expiration under the table's\n" in sized
    assert human("partitions", table, "--snapshot", "3").count("dt=2024-01-0") == 3
    assert human("partitions", table, "--tag", "nightly").count("      100  ") == 2


def test_json_of_each_inspect_command(table: str) -> None:
    snapshots = json.loads(run("snapshots", table, "--json").stdout)
    assert [(s["snapshot_id"], s["commit_kind"], s["total_record_count"]) for s in snapshots] == [
        (1, "APPEND", 100), (2, "APPEND", 200), (3, "APPEND", 300), (4, "OVERWRITE", 201), (5, "OVERWRITE", 101)
    ]  # fmt: skip
    assert [(s["added_files"], s["deleted_files"]) for s in snapshots] == [(1, 0), (1, 0), (1, 0), (1, 1), (0, 1)]
    assert snapshots[0]["commit_time"].endswith("+00:00") and isinstance(snapshots[0]["commit_time_ms"], int)
    partitions = json.loads(run("partitions", table, "--json").stdout)
    assert [(p["partition"], p["record_count"], p["file_count"]) for p in partitions] == [
        ({"dt": "2024-01-01"}, 100, 1), ({"dt": "2024-01-02"}, 1, 1)
    ]  # fmt: skip
    files = json.loads(run("files", table, "--json").stdout)
    expected = [("2024-01-01", 100), ("2024-01-02", 1)]
    assert sorted((f["partition"]["dt"], f["record_count"]) for f in files) == expected
    assert all(re.fullmatch(r"dt=\d+/bucket-0/data-[-0-9a-f]+\.parquet", f["path"]) for f in files)  # relative
    assert all((Path(table) / f["path"]).stat().st_size == f["file_size_in_bytes"] for f in files)
    described = json.loads(run("describe", table, "--json").stdout)
    assert (described["snapshots"], described["tags"], described["live_records"], described["partitions"]) == (
        5, 1, 101, 2
    )  # fmt: skip
    assert described["sizes"]["ok"] is True
    assert described["sizes"]["total_bytes"] >= described["live_bytes"] > 0
    options = {o["key"]: o for o in json.loads(run("options", table, "--json").stdout)}
    assert options["snapshot.num-retained.min"] == {"key": "snapshot.num-retained.min", "value": "2",
                                                    "source": "table", "default": "10"}  # fmt: skip
    assert options["snapshot.time-retained"]["source"] == "default"
    tags = json.loads(run("tag", "list", table, "--json").stdout)
    assert [(t["tag_name"], t["snapshot_id"], t["record_count"]) for t in tags] == [("nightly", 2, 200)]


def test_options_set_unset_cli(table: str) -> None:
    result = run("options", "set", table, "snapshot.time-retained=2 h", "snapshot.expire.limit=20")
    assert (result.exit_code, result.stdout) == (0, "wrote schema-1 (was schema-0)\n")
    assert Table.open(table).options.raw["snapshot.expire.limit"] == "20"
    result = run("options", "unset", table, "snapshot.expire.limit", "--json")
    assert json.loads(result.stdout)["schema_id"] == 2
    assert "snapshot.expire.limit" not in json.loads(result.stdout)["options"]
    result = run("options", "set", table, "snapshot.time-retained=2 h")
    assert result.stdout == "no change: the options already have these values (schema-2)\n"
    result = run("options", "set", table, "snapshot.num-retained.mn=3")
    assert result.exit_code == 2 and "did you mean 'snapshot.num-retained.min'" in result.output
    result = run("options", "set", table, "snapshot.num-retained.min=zero", "--json")
    assert result.exit_code == 2  # a bad value on the command line is a usage error, as with create --option
    assert json.loads(result.stdout) == {
        "error": "option snapshot.num-retained.min: invalid integer 'zero'", "kind": "UsageError"
    }  # fmt: skip
    assert run("options", "set", table, "novalue").exit_code == 2
    result = run("options", "unset", table, "snapshot.expire.limt")  # a typo is not "no change"
    assert (result.exit_code, result.stderr) == (
        2,
        "error: unknown table option 'snapshot.expire.limt' (did you mean 'snapshot.expire.limit'?); the table "
        "does not hold it either: nothing to unset\n",
    )
    assert len(Table.open(table).context.store.schema_ids()) == 3
    assert run("options", "unset", table, "snapshot.expire.limit").stdout.startswith("no change")  # known, unset


def test_options_show_takes_its_flags_before_or_after_the_table(table: str) -> None:
    after = run("options", table, "--all")
    before = run("options", "--all", table)
    assert (after.exit_code, before.exit_code) == (0, 0)
    assert after.stdout == before.stdout and "snapshot.expire.limit" in after.stdout
    assert "tablefmt options TABLE [--all] [--json]" in run("options", "--help").stdout


def test_tag_create_with_time_retained(table: str) -> None:
    result = run("tag", "create", table, "weekly", "--snapshot", "3", "--time-retained", "7d")
    assert (result.exit_code, result.stdout) == (0, "tag weekly -> snapshot 3, retained 7 d\n")
    tags = {t["tag_name"]: t for t in json.loads(run("tag", "list", table, "--json").stdout)}
    assert tags["weekly"]["time_retained_ms"] == 7 * 86_400_000
    assert "weekly          3" in human("tag", "list", table) and "7 d" in human("tag", "list", table)
    assert run("tag", "create", table, "bad", "--time-retained", "-1d").exit_code == 2


def test_tag_list_says_when_each_tag_expires_and_which_already_have(table: str) -> None:
    store = Table.open(table).context.store
    created = (2020, 1, 2, 3, 4, 5, 0)  # local time, as Paimon writes it
    old = dataclasses.replace(store.read_tag("nightly"), name="old", create_time=created, time_retained_seconds=60)
    assert store.write_tag_if_absent(old)
    assert run("tag", "create", table, "weekly", "--snapshot", "3", "--time-retained", "7d").exit_code == 0
    weekly = store.read_tag("weekly")
    tags = {t["tag_name"]: t for t in json.loads(run("tag", "list", table, "--json").stdout)}
    expected_old = int(dt.datetime(2020, 1, 2, 3, 5, 5).timestamp() * 1000)
    assert (tags["old"]["expire_time_ms"], tags["old"]["expired"]) == (expected_old, True)
    assert tags["old"]["expire_time"] == "2020-01-02T03:05:05+00:00"  # TZ=UTC in these tests
    assert tags["weekly"]["expire_time_ms"] == int(weekly.expires_ms() or 0) and tags["weekly"]["expired"] is False
    assert (tags["nightly"]["expire_time"], tags["nightly"]["expired"]) == (None, False)
    listed = {line.split()[0]: line for line in run("tag", "list", table).stdout.splitlines()[1:]}
    assert listed["old"].endswith(" 1 min     expired")
    assert listed["weekly"].endswith(" 7 d       in 6 d")  # 7 d less the moments since it was created
    assert listed["nightly"].endswith(" forever   never")


def test_rollback_cli(table: str) -> None:
    result = run("rollback", table, "--to-snapshot", "2", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "dry run: rollback to snapshot 2: would remove snapshot(s) 3, 4, 5"
    assert [s.id for s in Table.open(table).snapshots()] == [1, 2, 3, 4, 5]
    result = run("rollback", table, "--to-tag", "nightly", "--json")
    document = json.loads(result.stdout)
    assert (document["target_snapshot_id"], document["removed_snapshot_ids"], document["dry_run"]) == (
        2,
        [3, 4, 5],
        False,
    )
    assert [s.id for s in Table.open(table).snapshots()] == [1, 2]
    for args, kind, code in (
        (("--to-snapshot", "9"), "SnapshotNotFoundError", 1),
        (("--to-tag", "nope"), "SnapshotNotFoundError", 1),
        (("--to-snapshot", "1", "--to-tag", "nightly"), "UsageError", 2),
        (("--to-time", "yesterday"), "UsageError", 2),
    ):
        result = run("rollback", table, *args, "--json")
        assert result.exit_code == code and json.loads(result.stdout)["kind"] == kind, result.output
        assert [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert run("rollback", table, "--to-time", "2000-01-01T00:00:00", "--json").exit_code == 1


def test_drop_partition_takes_dates_and_day_numbers_and_lists_nearby(table: str) -> None:
    result = run("drop-partition", table, "dt=2024-01-09")
    assert result.exit_code == 0
    assert result.stdout == (
        "no partition matches dt=2024-01-09; no snapshot written. Nearby: dt=2024-01-01,\n  dt=2024-01-02\n"
    )
    assert json.loads(run("drop-partition", table, "dt=19000", "--json").stdout) == {
        "snapshot_id": None, "dropped_records": 0, "nearby_partitions": [{"dt": "2024-01-01"}, {"dt": "2024-01-02"}]
    }  # fmt: skip
    assert run("drop-partition", table, "dt=19723").stdout == "committed snapshot 6 (OVERWRITE, 100 rows dropped)\n"
    assert run("drop-partition", table, "dt=2024-01-02").stdout.startswith("committed snapshot 7 ")
    assert run("drop-partition", table, "dt=2024-13-01").exit_code == 1


def test_expire_dry_run_says_why_it_stops(table: str) -> None:
    result = run("expire", table, "--dry-run", "--time-retained", "0s", "--limit", "2")
    assert "note: 2 of 3 expirable snapshots: snapshot.expire.limit=2" in result.stdout
    result = run("expire", table, "--dry-run")
    assert "snapshot.time-retained=1 h ago" in result.stdout
    document = json.loads(run("expire", table, "--dry-run", "--json", "--time-retained", "0s").stdout)
    assert document["notes"] == ["3 expired: the newest 2 snapshot(s) are kept (snapshot.num-retained.min=2)"]


def test_quiet_prints_data_and_errors_only(table: str, tmp_path: Path) -> None:
    assert run("-q", "tag", "create", table, "q1").stdout == ""
    assert run("-q", "options", "set", table, "snapshot.expire.limit=5").stdout == ""
    assert run("-q", "rollback", table, "--to-snapshot", "4").stdout == ""
    assert run("-q", "expire", table, "--dry-run").stdout == ""  # nothing would be deleted: no data
    planned = json.loads(run("expire", table, "--dry-run", "--time-retained", "0s", "--json").stdout)["deleted_paths"]
    assert len(planned) == 4  # snapshots 1-2 and their delta lists (after the rollback to 4; the tag keeps the rest)
    for argv in (["-q", "expire", table], ["expire", table, "-q"], ["expire", "--quiet", table]):
        result = run(*argv, "--dry-run", "--time-retained", "0s")  # a dry run's list is data: every path, one a line
        assert (result.exit_code, result.stdout) == (0, "".join(f"{path}\n" for path in planned))
    assert run("-q", "snapshots", table).stdout.startswith("id  kind")  # data is still printed
    result = run("-q", "rollback", table, "--to-snapshot", "99")
    assert result.exit_code == 1 and result.output.startswith("error: snapshot 99 does not exist")


def test_json_usage_errors_are_json_too(table: str) -> None:
    result = run("snapshots", table, "--json", "--no-such-flag")
    assert result.exit_code == 2 and json.loads(result.stdout)["kind"] == "UsageError"
    result = run("files", str(Path(table).parent / "missing"), "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["kind"] == "TableNotFoundError"


def _tablefmt(*args: str) -> list[str]:
    return [sys.executable, "-c", "from tableformat.cli.main import main; main()", *args]


def test_piped_to_head_ends_quietly(tmp_path: Path) -> None:
    """Output larger than a pipe's buffer, its reader gone after one line: no traceback, no 'Broken pipe'."""
    root = str(tmp_path / "wide")
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(1500)]
    Table.create(root, SCHEMA, ["dt"]).append(pa.table({"id": range(1500), "dt": days, "v": ["x"] * 1500}, SCHEMA))
    env = {**os.environ, "COLUMNS": "80"}
    command = shlex.join(_tablefmt("partitions", root)) + " | head -n 1"
    pipeline = subprocess.run(command, shell=True, capture_output=True, text=True, env=env, timeout=120)
    assert pipeline.stdout.startswith("partition")
    assert pipeline.stderr == ""


def test_progress_on_a_terminal_keeps_log_lines_whole(table: str) -> None:
    """With stderr on a terminal, a progress line shows while the command runs; log records print as whole lines
    through it (never cut into the progress line); stdout stays plain."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm"}
    done = subprocess.run(
        _tablefmt("-v", "remove-orphans", table, "--dry-run", "--older-than", "2d"),
        stderr=follower, stdout=subprocess.PIPE, env=env, timeout=120, text=True,
    )  # fmt: skip
    os.close(follower)
    screen = _drain(leader)
    assert done.returncode == 0 and done.stdout.startswith("remove-orphans: 0 orphan file(s)")
    assert "removing orphans" in screen
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    logged = [line for line in plain.splitlines() if "orphan plan for" in line]
    assert len(logged) == 1 and re.search(
        r"INFO tableformat\.cleanup\.orphans\.plan: orphan plan for .* 0 unknown", logged[0]
    )


def _drain(fd: int) -> str:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def test_create_write_and_tag_speak_json_too(tmp_path: Path) -> None:
    source = tmp_path / "rows.parquet"
    rows = pa.table({"id": [1, 2], "dt": [dt.date(2024, 1, 1)] * 2, "v": ["a", "b"]}, SCHEMA)
    pq.write_table(rows, source)
    root = str(tmp_path / "t")
    created = json.loads(run("create", root, "--schema-from", str(source), "--partition-keys", "dt", "--json").stdout)
    assert created == {
        "location": root,
        "schema_id": 0,
        "columns": ["id", "dt", "v"],
        "partition_keys": ["dt"],
        "options": {"file.format": "parquet"},
    }
    written = json.loads(run("write", root, str(source), "--json").stdout)
    ran = written.pop("after_commit")
    assert written == {"snapshot_id": 1, "commit_kind": "APPEND", "record_count": 2}
    assert [(r["operation"], r["expired_snapshots"], r["deleted_paths"]) for r in ran] == [("expire", 0, [])]
    tagged = json.loads(run("tag", "create", root, "v1", "--time-retained", "1d", "--json").stdout)
    assert (tagged["tag_name"], tagged["snapshot_id"], tagged["time_retained_ms"]) == ("v1", 1, 86_400_000)
    assert tagged["expire_time_ms"] == int(Table.open(root).context.store.read_tag("v1").expires_ms() or 0)
    assert json.loads(run("tag", "delete", root, "v1", "--json").stdout) == {"tag_name": "v1", "deleted": True}
