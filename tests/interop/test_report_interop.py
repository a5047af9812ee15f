"""The retention report of a table pypaimon 2.1.0 wrote (appends, a static overwrite, a tag, a partition drop,
Paimon's partition.* options): every point of storage over time equals the live files of that snapshot merged from
the raw manifests (fastavro, independent of tablefmt) and the rows pypaimon reads from it; the rules equal their
dry runs; the partitions equal the rows pypaimon reads per partition."""

from __future__ import annotations

import time
from collections import Counter

import pyarrow as pa
from support.operations import planned_json

from interop.helpers import Paimon, live_file_entries
from tableformat import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
OPTIONS = {
    "partition.expiration-time": "30 d",
    "partition.timestamp-formatter": "yyyy-MM-dd",
    "snapshot.num-retained.min": "2",
    "snapshot.time-retained": "1 ms",
    "dynamic-partition-overwrite": "false",
}
DAYS = ["2020-01-01", "2020-01-02", "2099-01-01", "2099-01-02"]


def _batch(first: int, dt: str, count: int = 3) -> pa.Table:
    return pa.table({"id": list(range(first, first + count)), "dt": [dt] * count}, schema=SCHEMA)


def test_report_of_a_pypaimon_table(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt"], OPTIONS)
    for number, day in enumerate(DAYS):
        pp.append("t", _batch(10 * number, day))
    pp.create_tag("t", "early", 2)
    pp.overwrite("t", _batch(100, "2099-01-01", 5), {"dt": "2099-01-01"})
    pp.drop_partitions("t", [{"dt": "2099-01-02"}])
    path = pp.path("t")
    table = Table.open(path)
    now = time.time_ns() // 1_000_000
    report = table.report(now_ms=now)

    assert [p.snapshot_id for p in report.storage.points] == [1, 2, 3, 4, 5, 6]
    for point in report.storage.points:
        live = live_file_entries(path, point.snapshot_id)
        assert point.live_bytes == sum(e["_FILE"]["_FILE_SIZE"] for e in live.values())
        assert point.live_files == len(live)
        assert point.live_rows == pp.read("t", snapshot_id=point.snapshot_id).num_rows
    ever = {k: e["_FILE"]["_FILE_SIZE"] for i in range(1, 7) for k, e in live_file_entries(path, i).items()}
    latest = live_file_entries(path, 6)
    assert report.storage.points[-1].older_only_bytes == sum(v for k, v in ever.items() if k not in latest)

    for rule in report.rules:
        if not rule.configured:
            continue
        dry = table.maintenance.run(rule.operation, dry_run=True, now_ms=now)
        assert rule.result is not None and planned_json(rule.result) == planned_json(dry)  # requests apart
    read = Counter(pp.read("t").column("dt").to_pylist())
    assert [(p.partition, p.record_count) for p in report.partitions] == [
        (f"dt={day}", read[day]) for day in sorted(read)
    ]
    assert [p.partition for p in report.partitions if p.dropped_by] == ["dt=2020-01-01", "dt=2020-01-02"]
    assert report.keep_up is not None and sum(h.commits for h in report.keep_up.hours) == 6
