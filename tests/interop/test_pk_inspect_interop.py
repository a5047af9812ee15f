"""Raw row counts on a table pypaimon 2.1.0 wrote: a primary-key table with changelog files (6 upserts of 25 keys
of 60). describe, files, partitions and snapshots count raw rows (every stored version of a key: 150), say so, and
never count changelog rows; pypaimon's merged read returns fewer rows."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

from interop.helpers import Paimon, live_file_entries, snapshot_json
from tableformat.cli.main import cli

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
ROUNDS = 6


def pk_table(pp: Paimon) -> Path:
    from pypaimon import Schema

    options = {"bucket": "3", "changelog-producer": "input"}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options=options)
    pp.catalog.create_table("db.t", schema, False)
    rng = random.Random(5)
    for r in range(ROUNDS):
        ids = rng.sample(range(60), 25)
        data = {"id": ids, "dt": ["d1" if i % 2 else "d2" for i in ids], "v": [f"r{r}-{i}" for i in ids]}
        pp.append("t", pa.table(data, schema=SCHEMA))
    return Path(pp.path("t"))


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def json_of(*args: str) -> Any:
    return json.loads(run(*args, "--json"))


def test_counts_of_a_pypaimon_pk_table_are_raw_and_say_so(pp: Paimon) -> None:
    root = pk_table(pp)
    latest = snapshot_json(root, ROUNDS)
    live = live_file_entries(root, ROUNDS)  # independent: fastavro, base ++ delta merged
    raw = sum(e["_FILE"]["_ROW_COUNT"] for e in live.values())
    merged = pp.read("t").num_rows
    assert raw == latest["totalRecordCount"] == 25 * ROUNDS
    assert latest["changelogRecordCount"] == 25 and merged < raw

    described = json_of("describe", str(root), "--no-sizes")
    assert (described["live_records"], described["row_count_kind"], described["primary_keys"]) == (
        raw,
        "raw",
        ["id", "dt"],
    )
    files = json_of("files", str(root))
    assert sum(f["record_count"] for f in files) == raw and len(files) == len(live)
    assert not [f for f in files if Path(f["path"]).name.startswith("changelog-")]
    assert {f["row_count_kind"] for f in files} == {"raw"}
    partitions = json_of("partitions", str(root))
    assert sum(p["record_count"] for p in partitions) == raw
    assert {p["partition"]["dt"]: p["row_count_kind"] for p in partitions} == {"d1": "raw", "d2": "raw"}
    snapshots = json_of("snapshots", str(root), "--no-sizes")
    assert [(s["total_record_count"], s["changelog_record_count"]) for s in snapshots] == [
        (25 * (i + 1), 25) for i in range(ROUNDS)
    ]

    text = run("describe", str(root), "--no-sizes")
    assert f"\nrows:           {raw} (raw, all versions; merged rows need a read)\n" in text
    assert "\nprimary key:    id, dt\n" in text
    assert f", {raw} raw rows, " in run("partitions", str(root))
