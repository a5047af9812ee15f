"""``tablefmt maintain --once`` over a warehouse pypaimon 2.1.0 wrote (two databases, tables with different retention
options): each table is maintained by its own options, and pypaimon then reads every retained snapshot and tag of
every table with exactly the rows written, and appends."""

from __future__ import annotations

import json

import pyarrow as pa

from interop.helpers import Paimon, rows_of, tablefmt_cli
from tableformat import Table

EVENTS = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
LOGS = pa.schema([pa.field("id", pa.int64())])
FAST_EXPIRY = {"snapshot.num-retained.min": "3", "snapshot.num-retained.max": "5", "snapshot.time-retained": "1 ms"}


def _rows_by_root(pp: Paimon, name: str) -> dict[str, list[tuple[object, ...]]]:
    table = Table.open(pp.path(name))
    found = {f"@{s.id}": rows_of(pp.read(name, snapshot_id=s.id)) for s in table.snapshots()}
    found.update({f"#{t.name}": rows_of(pp.read(name, tag=t.name)) for t in table.tags()})
    return found


def test_maintain_a_pypaimon_warehouse_then_pypaimon_reads_every_retained_root(pp: Paimon) -> None:
    pp.create_table("events", EVENTS, ["dt"], {"partition.expiration-time": "30 d", "write-only": "true"})
    for i, day in enumerate(["2020-01-01", "2020-06-01", "2099-01-01"]):
        pp.append("events", pa.table({"id": [i, i + 10], "dt": [day, day]}, schema=EVENTS))
    pp.create_table("logs", LOGS, [], {**FAST_EXPIRY, "write-only": "true"})
    for i in range(8):
        pp.append("logs", pa.table({"id": [i]}, schema=LOGS))
    pp.create_tag("logs", "v1", 2)
    pp.catalog.create_database("ops", ignore_if_exists=True)
    from pypaimon import Schema

    pp.catalog.create_table("ops.audit", Schema.from_pyarrow_schema(LOGS, options={"write-only": "true"}), False)
    audit = pp.catalog.get_table("ops.audit")
    for i in range(4):
        builder = audit.new_batch_write_builder()
        write, commit = builder.new_write(), builder.new_commit()
        write.write_arrow(pa.table({"id": [100 + i]}, schema=LOGS))
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()
    logs_before = _rows_by_root(pp, "logs")
    events_before = _rows_by_root(pp, "events")

    proc = tablefmt_cli("maintain", "--once", "--json", str(pp.warehouse))
    reports = {r["table"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert sorted(reports) == ["db.events", "db.logs", "ops.audit"]
    assert all(r["ok"] for r in reports.values()), proc.stdout
    ran = {name: list(r["operations"]) for name, r in reports.items()}
    assert ran == {
        "db.events": ["expire-partitions", "expire", "remove-orphans"],
        "db.logs": ["expire", "remove-orphans"],
        "ops.audit": ["expire", "remove-orphans"],
    }
    dropped = reports["db.events"]["operations"]["expire-partitions"]["expired_partitions"]
    assert dropped == [{"dt": "2020-01-01"}, {"dt": "2020-06-01"}]
    assert reports["db.logs"]["operations"]["expire"]["expired_snapshot_ids"] == [1, 2, 3, 4, 5]
    assert reports["ops.audit"]["operations"]["expire"]["expired_snapshot_ids"] == []

    # pypaimon reads what stays: the logs' last three snapshots and the tag on an expired snapshot
    logs_after = _rows_by_root(pp, "logs")
    assert sorted(logs_after) == ["#v1", "@6", "@7", "@8"]
    assert logs_after == {k: v for k, v in logs_before.items() if k in logs_after}
    events_after = _rows_by_root(pp, "events")
    assert events_after == {**events_before, "@4": [(2, "2099-01-01"), (12, "2099-01-01")]}
    audit = pp.catalog.get_table("ops.audit")
    reader = audit.new_read_builder()
    assert rows_of(reader.new_read().to_arrow(reader.new_scan().plan().splits())) == [(100,), (101,), (102,), (103,)]
    pp.append("logs", pa.table({"id": [99]}, schema=LOGS))
    assert rows_of(pp.read("logs")) == [(i,) for i in [0, 1, 2, 3, 4, 5, 6, 7, 99]]
    for name in ("events", "logs"):
        tablefmt_cli("check", pp.path(name))
    tablefmt_cli("check", str(pp.warehouse / "ops.db" / "audit"))
