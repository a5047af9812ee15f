"""Partition expiration on tables pypaimon 2.1.0 wrote with Paimon's partition.* options set at creation: after
``tablefmt expire-partitions`` and ``tablefmt expire``, pypaimon reads the latest snapshot (exactly the unexpired
partitions' rows), every retained snapshot and tag, and appends."""

from __future__ import annotations

import json

import pyarrow as pa
from click.testing import CliRunner

from interop.helpers import Paimon, rows_of
from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string()), pa.field("hour", pa.int32())])
OPTIONS = {
    "partition.expiration-time": "30 d",
    "partition.expiration-check-interval": "1 h",
    "partition.timestamp-pattern": "$dt $hour:00:00",
    "partition.expiration-max-num": "10",
    "snapshot.num-retained.min": "2",
    "snapshot.time-retained": "1 ms",
}
PARTITIONS = [("2020-01-01", 5), ("2020-01-02", 23), ("2099-01-01", 1), ("2020-01-01", 6), ("2099-01-02", 0)]


def _cli(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _batch(first: int, dt: str, hour: int) -> pa.Table:
    return pa.table({"id": [first, first + 1], "dt": [dt, dt], "hour": [hour, hour]}, schema=SCHEMA)


def test_pypaimon_reads_and_appends_after_partition_expiry_and_expire(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt", "hour"], OPTIONS)
    for number, (dt, hour) in enumerate(PARTITIONS):
        pp.append("t", _batch(10 * number, dt, hour))
    pp.create_tag("t", "before", 3)
    path = pp.path("t")
    table = Table.open(path)
    before = {s.id: rows_of(table.to_arrow(snapshot_id=s.id)) for s in table.snapshots()}
    tagged = rows_of(table.to_arrow(tag="before"))

    result = _cli("expire-partitions", path)
    assert result["expired_partitions"] == [
        {"dt": "2020-01-01", "hour": "5"},
        {"dt": "2020-01-01", "hour": "6"},
        {"dt": "2020-01-02", "hour": "23"},
    ]
    assert result["skipped_partitions"] == [] and result["snapshot_ids"] == [6] and result["dropped_records"] == 6
    kept = sorted(r for r in before[5] if r[1].startswith("2099"))
    assert rows_of(pp.read("t")) == kept

    expired = _cli("expire", path)
    assert expired["dry_run"] is False
    retained = [s.id for s in Table.open(path).snapshots()]
    assert retained == [5, 6]
    for snapshot_id in retained:
        assert rows_of(pp.read("t", snapshot_id=snapshot_id)) == (kept if snapshot_id == 6 else before[5])
    assert rows_of(pp.read("t", tag="before")) == tagged  # the tag keeps the expired partitions' files

    pp.append("t", _batch(100, "2020-01-03", 1))
    assert rows_of(pp.read("t")) == sorted([*kept, (100, "2020-01-03", 1), (101, "2020-01-03", 1)])
    assert rows_of(Table.open(path).to_arrow()) == rows_of(pp.read("t"))
