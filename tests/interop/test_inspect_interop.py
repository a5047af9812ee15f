"""Steering and inspecting against pypaimon 2.1.0: after `tablefmt options set/unset` pypaimon reads the table and
sees the new options; pypaimon's own ALTER TABLE SET / RESET / ADD COLUMN read back by tablefmt; after `tablefmt
rollback` on a table with tags and a pypaimon branch, pypaimon reads exactly what Paimon's rollback promises and
appends; a pypaimon rollback read by tablefmt; tablefmt's readers and inspect views on pypaimon-written tables."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from click.testing import CliRunner

from interop.helpers import Paimon, rows_of
from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
DATED = pa.schema([pa.field("id", pa.int64()), pa.field("day", pa.date32())])


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _batch(first: int, day: str, count: int = 2) -> pa.Table:
    return pa.table({"id": list(range(first, first + count)), "dt": [day] * count}, schema=SCHEMA)


def test_pypaimon_sees_options_set_and_unset_by_tablefmt(pp: Paimon) -> None:
    path = pp.path("t")
    table = Table.create(path, SCHEMA, ["dt"])
    table.append(_batch(0, "a"))
    changed = _cli("options", "set", path, "snapshot.num-retained.min=3", "snapshot.time-retained=2 h")
    assert changed["schema_id"] == 1
    options = pp.table("t").table_schema.options
    assert (options["snapshot.num-retained.min"], options["snapshot.time-retained"]) == ("3", "2 h")
    assert pp.table("t").table_schema.id == 1
    assert rows_of(pp.read("t")) == [(0, "a"), (1, "a")]
    pp.append("t", _batch(10, "b"))  # pypaimon writes under the new schema
    assert pp.table("t").snapshot_manager().get_latest_snapshot().schema_id == 1
    _cli("options", "unset", path, "snapshot.time-retained")
    assert "snapshot.time-retained" not in pp.table("t").table_schema.options
    assert rows_of(Table.open(path).to_arrow()) == rows_of(pp.read("t")) == [(0, "a"), (1, "a"), (10, "b"), (11, "b")]


def test_tablefmt_reads_pypaimon_alter_table(pp: Paimon) -> None:
    from pypaimon.schema.schema_change import SchemaChange

    pp.create_table("t", SCHEMA, ["dt"])
    pp.append("t", _batch(0, "a"))
    pp.catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.min", "4")])
    pp.catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.expire.limit", "7")])
    pp.catalog.alter_table("db.t", [SchemaChange.remove_option("snapshot.expire.limit")])
    path = pp.path("t")
    options = {o["key"]: o for o in _cli("options", path)}
    assert (
        options["snapshot.num-retained.min"]["value"] == "4"
        and options["snapshot.num-retained.min"]["source"] == "table"
    )
    assert options["snapshot.expire.limit"]["source"] == "default"
    assert _cli("options", "set", path, "snapshot.expire.limit=3")["schema_id"] == 4  # continues pypaimon's ids
    assert pp.table("t").table_schema.options["snapshot.expire.limit"] == "3"
    pp.add_column("t", "score", "DOUBLE")
    pp.append("t", pa.table({"id": [5], "dt": ["b"], "score": [2.5]}))
    table = Table.open(path)
    assert rows_of(table.to_arrow(), ["id", "dt", "score"]) == [(0, "a", None), (1, "a", None), (5, "b", 2.5)]
    assert table.to_arrow(filter=pc.field("score") > 1.0).column("id").to_pylist() == [5]
    described = _cli("describe", path)
    assert (described["schema_id"], described["live_records"], described["sizes"]["ok"]) == (5, 3, True)


def test_rollback_with_tags_and_a_pypaimon_branch(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt"])
    for i in range(5):
        pp.append("t", _batch(i * 10, "ab"[i % 2]))
    pp.create_tag("t", "t2", 2)
    pp.create_tag("t", "t4", 4)
    pp.create_branch("t", "b2", "t2")  # a branch from a tag the rollback keeps
    path = pp.path("t")
    expected = rows_of(pp.read("t", snapshot_id=3))
    tag2 = rows_of(pp.read("t", tag="t2"))
    branch = rows_of(pp.read(pp.branch("t", "b2")))

    pp.create_branch("t", "b4", "t4")  # a branch from a tag the rollback would remove: refused
    refused = CliRunner().invoke(cli, ["rollback", path, "--to-snapshot", "3", "--json"])
    assert refused.exit_code == 1 and "branch b4 was created from tag 't4'" in json.loads(refused.stdout)["error"]
    pp.drop_branch("t", "b4")

    done = _cli("rollback", path, "--to-snapshot", "3")
    assert (done["removed_snapshot_ids"], done["removed_tags"]) == ([4, 5], ["t4"])
    assert pp.latest_id("t") == 3 and rows_of(pp.read("t")) == expected
    assert rows_of(pp.read("t", tag="t2")) == tag2 and sorted(pp.table("t").list_tags()) == ["t2"]
    assert rows_of(pp.read(pp.branch("t", "b2"))) == branch
    pp.append("t", _batch(100, "c"))
    assert pp.latest_id("t") == 4  # ids are reused after a rollback, as in Paimon
    assert rows_of(Table.open(path).to_arrow()) == sorted([*expected, (100, "c"), (101, "c")])
    # orphan cleanup afterwards keeps everything pypaimon still reads
    cleaned = _cli("remove-orphans", path, "--older-than", "0s", "--force")
    assert cleaned["deleted_files"] > 0
    assert rows_of(pp.read("t", tag="t2")) == tag2 and rows_of(pp.read(pp.branch("t", "b2"))) == branch
    assert rows_of(pp.read("t")) == sorted([*expected, (100, "c"), (101, "c")])


def test_tablefmt_reads_after_a_pypaimon_rollback(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt"])
    for i in range(4):
        pp.append("t", _batch(i * 10, "a"))
    pp.create_tag("t", "t1", 1)
    pp.rollback_to("t", "t1")
    path = pp.path("t")
    snapshots = _cli("snapshots", path)
    assert [s["snapshot_id"] for s in snapshots] == [1]
    assert rows_of(Table.open(path).to_arrow()) == [(0, "a"), (1, "a")]
    assert [p["partition"] for p in _cli("partitions", path)] == [{"dt": "a"}]


def test_inspect_and_readers_on_a_pypaimon_date_table(pp: Paimon) -> None:
    """DATE partitions pypaimon names by day number: shown as dates, dropped by date or day number, pruned."""
    pp.create_table("d", DATED, ["day"])
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    for index, day in enumerate(days):
        pp.append("d", pa.table({"id": [index], "day": [day]}, schema=DATED))
    path = pp.path("d")
    assert [p["partition"]["day"] for p in _cli("partitions", path)] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    table = Table.open(path)
    scan = table.scan(filter=pc.field("day") >= dt.date(2024, 1, 2))
    assert (scan.stats().selected_files, sorted(scan.to_table().column("id").to_pylist())) == (2, [1, 2])
    assert rows_of(table.to_pyarrow_dataset().to_table()) == rows_of(pp.read("d"))
    assert _cli("drop-partition", path, "day=2024-01-01")["dropped_records"] == 1
    assert _cli("drop-partition", path, "day=19724")["dropped_records"] == 1  # 2024-01-02 as its day number
    assert rows_of(pp.read("d")) == [(2, dt.date(2024, 1, 3))]
