"""Readers, inspect views, options and rollback on a real S3-compatible server (SeaweedFS on 127.0.0.1)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from click.testing import CliRunner
from support.ci import optional

from tableformat import Table
from tableformat.cli.main import cli

duckdb = optional("duckdb")

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.date32())])
DAYS = [dt.date(2026, 11, 1), dt.date(2026, 11, 2), dt.date(2026, 11, 3)]


@pytest.mark.s3
def test_readers_views_and_steering_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    table = Table.create(url, SCHEMA, ["day"], storage_options=options)
    for index, day in enumerate(DAYS):
        table.append(pa.table({"id": [index * 10, index * 10 + 1], "day": [day, day]}, schema=SCHEMA))
    table.drop_partitions([{"day": "2026-11-01"}])
    scan = table.scan(filter=pc.field("day") == DAYS[2])
    assert (scan.stats().selected_files, scan.to_table().column("id").to_pylist()) == (1, [20, 21])
    assert sorted(table.to_pyarrow_dataset().to_table().column("id").to_pylist()) == [10, 11, 20, 21]
    connection = table.to_duckdb(duckdb.connect(), "s3t")
    assert sorted(connection.sql("select id from s3t where day >= DATE '2026-11-02'").fetchall()) == [
        (10,), (11,), (20,), (21,)
    ]  # fmt: skip
    assert table.inspect.partitions().column("partition").to_pylist() == ["day=2026-11-02", "day=2026-11-03"]
    flags = [f"--storage-option={key}={options[key]}" for key in ("key", "secret", "endpoint_url")]
    flags.append(f"--storage-option=client_kwargs.region_name={options['client_kwargs']['region_name']}")
    runner = CliRunner()
    result = runner.invoke(cli, ["options", "set", url, "snapshot.num-retained.min=2", *flags])
    assert result.exit_code == 0, result.output
    described = json.loads(runner.invoke(cli, ["describe", url, "--json", *flags]).stdout)
    assert (described["live_records"], described["sizes"]["ok"], described["schema_id"]) == (4, True, 1)
    result = runner.invoke(cli, ["rollback", url, "--to-snapshot", "2", "--json", *flags])
    assert json.loads(result.stdout)["removed_snapshot_ids"] == [3, 4]
    reopened = Table.open(url, storage_options=options)
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [0, 1, 10, 11]
    assert reopened.options.raw["snapshot.num-retained.min"] == "2"
