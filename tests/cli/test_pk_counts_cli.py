"""Raw row counts on a primary-key table: describe, files, partitions, snapshots and the report say that their row
counts are raw rows (every stored version of a key), in words for people and as ``row_count_kind`` in JSON; append
tables keep their output (tests/cli/test_inspect_cli.py) and gain only the JSON key.

tablefmt writes append tables only, so the table here is written as one and then given a primary key by a new schema,
as Paimon or pypaimon would have created it: two upserts of the same key stay two stored rows until compaction.
The interop suite runs the same commands on a table pypaimon wrote (tests/interop/test_pk_inspect_interop.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.terminal import utc_80_columns

from tableformat import Table
from tableformat.cli.main import cli
from tableformat.report.page import render_html

__all__ = ["utc_80_columns"]  # the autouse fixture, imported to apply here

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])


def rows(ids: list[int], day: str) -> pa.Table:
    return pa.table({"id": ids, "dt": [day] * len(ids)}, schema=SCHEMA)


def write(root: Path, *, primary_key: bool) -> str:
    """Three commits: keys 1-3 of day a, keys 1-2 of day a again (upserts), key 9 of day b: 6 stored rows."""
    table = Table.create(str(root), SCHEMA, ["dt"], options={"write-only": "true"})
    table.append(rows([1, 2, 3], "a"))
    table.append(rows([1, 2], "a"))
    table.append(rows([9], "b"))
    if primary_key:
        store = table.context.store
        latest = store.latest_schema()
        assert store.write_schema_if_absent(replace(latest, id=latest.id + 1, primary_keys=("id", "dt")))
    return str(root)


@pytest.fixture
def pk_table(tmp_path: Path) -> str:
    return write(tmp_path / "pk", primary_key=True)


@pytest.fixture
def append_table(tmp_path: Path) -> str:
    return write(tmp_path / "append", primary_key=False)


def run(*args: str) -> str:
    """A command's stdout; every line but one naming the table's path fits 80 columns."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    paths = [a for a in args if "/" in a]
    assert all(len(line) <= 80 for line in result.stdout.splitlines() if not any(p in line for p in paths))
    return result.stdout


def mask(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "YYYY-MM-DDThh:mm:ss", text)
    text = re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", lambda m: re.sub("[0-9a-f]", "x", m.group()), text)
    return re.sub(r"\d+(\.\d+)? (B|KiB|MiB)\b", lambda m: re.sub(r"\d", "#", m.group()), text)


PARTITIONS = """\
partition  raw rows  files      size  last update
dt=a              5      2  #.## KiB  YYYY-MM-DDThh:mm:ss+00:00
dt=b              1      1     ### B  YYYY-MM-DDThh:mm:ss+00:00
2 partition(s), 3 file(s), 6 raw rows, #.## KiB
raw rows count every stored version of a key; merged rows need a read
"""

FILES = """\
partition  files  raw rows      size  smallest  largest
dt=a           2         5  #.## KiB     ### B    ### B
dt=b           1         1     ### B     ### B    ### B
2 partition(s), 3 file(s), 6 raw rows, #.## KiB
raw rows count every stored version of a key; merged rows need a read
"""


def test_partitions_and_files_say_raw_rows(pk_table: str) -> None:
    assert mask(run("partitions", pk_table)) == PARTITIONS
    assert mask(run("files", pk_table)) == FILES
    listed = mask(run("files", pk_table, "--list"))
    assert listed.splitlines()[0].split() == ["file", "raw", "rows", "size"]
    assert listed.endswith(PARTITIONS[PARTITIONS.index("2 partition(s)") :])


def test_describe_shows_the_key_and_raw_rows(pk_table: str) -> None:
    text = mask(run("describe", pk_table, "--no-sizes"))
    assert "\npartitioned by: dt\nprimary key:    id, dt\n" in text
    assert "\nlive data:      #.## KiB in 3 file(s), 2 partition(s)\n" in text
    assert "\nrows:           6 (raw, all versions; merged rows need a read)\n" in text
    assert "records" not in text


def test_snapshots_say_raw_rows(pk_table: str) -> None:
    header = run("snapshots", pk_table, "--no-sizes").splitlines()[0]
    assert header.split() == ["id", "kind", "committed", "raw", "rows", "added", "removed"]


def json_of(*args: str) -> Any:
    return json.loads(run(*args, "--json"))


@pytest.mark.parametrize(("fixture", "kind"), [("pk_table", "raw"), ("append_table", "exact")])
def test_json_says_what_the_counts_are(fixture: str, kind: str, request: pytest.FixtureRequest) -> None:
    table = request.getfixturevalue(fixture)
    described = json_of("describe", table, "--no-sizes")
    assert (described["row_count_kind"], described["live_records"]) == (kind, 6)
    assert described["primary_keys"] == (["id", "dt"] if kind == "raw" else [])
    partitions = json_of("partitions", table)
    assert [(p["partition"], p["record_count"], p["row_count_kind"]) for p in partitions] == [
        ({"dt": "a"}, 5, kind),
        ({"dt": "b"}, 1, kind),
    ]
    files = json_of("files", table)
    assert sorted(f["record_count"] for f in files) == [1, 2, 3] and {f["row_count_kind"] for f in files} == {kind}
    snapshots = json_of("snapshots", table, "--no-sizes")
    assert [(s["total_record_count"], s["row_count_kind"]) for s in snapshots] == [(3, kind), (5, kind), (6, kind)]
    assert {s["changelog_record_count"] for s in snapshots} == {None}


def test_append_table_text_is_unchanged(append_table: str) -> None:
    assert "records" in run("partitions", append_table).splitlines()[0]
    assert "raw" not in run("files", append_table) + run("describe", append_table, "--no-sizes")
    assert "primary key" not in run("describe", append_table, "--no-sizes")


def test_inspect_tables_carry_the_kind(pk_table: str, append_table: str) -> None:
    for path, kind in ((pk_table, b"raw"), (append_table, b"exact")):
        inspect = Table.open(path).inspect
        for found in (inspect.partitions(), inspect.files(), inspect.snapshots(sizes=False)):
            assert found.schema.metadata == {b"row_count_kind": kind}


def test_report_says_raw_rows(pk_table: str, append_table: str) -> None:
    pk = Table.open(pk_table).report()
    append = Table.open(append_table).report()
    assert (pk.to_json()["row_count_kind"], append.to_json()["row_count_kind"]) == ("raw", "exact")
    assert pk.storage.latest is not None and pk.storage.latest.live_rows == 6
    pk_page, append_page = render_html(pk), render_html(append)
    assert "live rows (raw, all versions)" in pk_page and "<th class=num>raw rows</th>" in pk_page
    assert "raw rows" not in append_page and "live rows (raw" not in append_page
    assert "<th class=num>rows</th>" in append_page
