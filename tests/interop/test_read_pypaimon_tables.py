"""Tables written by pypaimon 2.1.0 read back identically through tablefmt at every snapshot and tag.

Each test drives pypaimon through a history, records what every snapshot must hold in an independent model,
and then checks, for every snapshot id and every tag: tablefmt's rows == pypaimon's own rows == the model.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from support.tables import files_under, rows_of

from interop.helpers import (
    D1,
    D2,
    D3,
    PARTITIONS,
    WIDE_SCHEMA,
    Model,
    Paimon,
    assert_rows,
    check_history,
    wide_row,
    wide_table,
)
from tableformat import CommitKind, Table, TableFormatError


@pytest.mark.parametrize("stats_mode", [None, "full"], ids=["default-stats", "full-stats"])
def test_partitioned_history(pp: Paimon, stats_mode: str | None) -> None:
    """DATE / INT / nullable STRING partitions (null, '', escaped, non-ASCII): appends, static overwrites (full and
    partial spec, and an empty one), drops of the null and the '' partition, tags, read at every snapshot/tag."""
    options = {"dynamic-partition-overwrite": "false"}
    if stats_mode:
        options["metadata.stats-mode"] = stats_mode
    pp.create_table("t", WIDE_SCHEMA, ["d", "i", "s"], options)
    model = Model(["d", "i", "s"], wide_table)

    def step(expected_id: int, kind: str) -> None:
        assert pp.latest_id("t") == expected_id
        model.commit(expected_id)
        snap = Table.open(pp.path("t")).snapshot(expected_id)
        assert snap.commit_kind == CommitKind(kind)

    rows = model.new_rows(PARTITIONS + PARTITIONS[:3], wide_row)  # 2 rows in some partitions
    pp.append("t", wide_table(rows))
    model.append(rows)
    step(1, "APPEND")

    rows = model.new_rows([PARTITIONS[0], PARTITIONS[3], PARTITIONS[1]], wide_row)
    pp.append("t", wide_table(rows))
    model.append(rows)
    step(2, "APPEND")
    pp.create_tag("t", "t2")
    model.tag("t2", 2)

    spec: dict[str, Any] = {"d": D1, "i": 1, "s": "a"}
    rows = model.new_rows([PARTITIONS[0]], wide_row)
    pp.overwrite("t", wide_table(rows), spec)
    model.overwrite(rows, spec)
    step(3, "OVERWRITE")

    spec = {"d": D2}  # partial spec: every partition under d=2024-03-15
    rows = model.new_rows([(D2, -5, "x")], wide_row)
    pp.overwrite("t", wide_table(rows), spec)
    model.overwrite(rows, spec)
    step(4, "OVERWRITE")

    pp.drop_partitions("t", [{"d": D1, "i": 1, "s": None}])  # the null partition only, not ''
    model.drop([{"d": D1, "i": 1, "s": None}])
    step(5, "OVERWRITE")
    pp.create_tag("t", "t5")
    model.tag("t5", 5)

    pp.drop_partitions("t", [{"d": D1, "i": 1, "s": ""}])  # the '' partition (same directory as null)
    model.drop([{"d": D1, "i": 1, "s": ""}])
    step(6, "OVERWRITE")

    rows = model.new_rows([(D1, 1, None), (D1, 1, ""), PARTITIONS[4]], wide_row)
    pp.append("t", wide_table(rows))
    model.append(rows)
    step(7, "APPEND")
    pp.create_tag("t", "t7")
    model.tag("t7", 7)
    pp.create_tag("t", "old3", snapshot_id=3)
    model.tag("old3", 3)

    spec = {"d": D3, "i": 0, "s": "éé"}  # static overwrite with no rows deletes the partition
    pp.overwrite("t", wide_table([]), spec)
    model.overwrite([], spec)
    step(8, "OVERWRITE")

    assert {r["s"] for r in model.live} == {"a", None, "", "x", "a b/c:d=e%f#?"}
    table = check_history(pp, "t", model)

    # tablefmt's partition pruning on the same table, against the model
    for spec in ({"s": None}, {"s": ""}, {"d": D2}, {"d": D1, "i": 1, "s": "a"}, {"i": 7}):
        for snapshot_id in (2, 5, 8):
            expected = [r for r in model.by_snapshot[snapshot_id] if model.matches(r, spec)]
            got = table.to_arrow(snapshot_id=snapshot_id, partition_filter=spec)
            assert_rows(got, model.expect(expected), f"tablefmt, snapshot {snapshot_id}, partition filter {spec}")
    # time travel by commit time lands on the same snapshot
    snapshots = table.snapshots()
    for snap in snapshots:
        newest = max(s.id for s in snapshots if s.time_millis <= snap.time_millis)
        got = table.to_arrow(as_of=snap.time_millis)
        assert_rows(got, model.at(newest), f"tablefmt, as of {snap.time_millis} (snapshot {newest})")


def test_fixed_buckets(pp: Paimon) -> None:
    """bucket=2, bucket-key=id, partitioned: files in bucket-0 and bucket-1 are all read, at every snapshot."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("dt", pa.string())])
    pp.create_table("b", schema, ["dt"], {"bucket": "2", "bucket-key": "id", "dynamic-partition-overwrite": "false"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=schema))

    def rows_for(ids: list[int | None], dt: str) -> list[dict[str, Any]]:
        return [{"id": i, "name": f"n{i}", "dt": dt} for i in ids]

    history: list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]] = [
        ("append", rows_for(list(range(1, 11)), "a") + rows_for([11, 12, None], "b"), None),
        ("append", rows_for([13, 14, 15], "a") + rows_for([16], "c"), None),
        ("overwrite", rows_for([17, 18], "a"), {"dt": "a"}),
        ("drop", [], {"dt": "b"}),
        ("append", rows_for([19, 20, 21, 22], "b"), None),
    ]
    for snapshot_id, (op, rows, spec) in enumerate(history, start=1):
        data = pa.Table.from_pylist(rows, schema=schema)
        if op == "append":
            pp.append("b", data)
            model.append(rows)
        elif op == "overwrite":
            assert spec is not None
            pp.overwrite("b", data, spec)
            model.overwrite(rows, spec)
        else:
            assert spec is not None
            pp.drop_partitions("b", [spec])
            model.drop([spec])
        assert pp.latest_id("b") == snapshot_id
        model.commit(snapshot_id)
        if snapshot_id == 2:
            pp.create_tag("b", "two")
            model.tag("two", 2)

    table = check_history(pp, "b", model)
    files = table.files(snapshot_id=2)
    assert {f.bucket for f in files} == {0, 1}
    assert sum(f.row_count for f in files) == 17
    on_disk = {p.split("/")[1] for p in files_under(pp.path("b")) if p.endswith(".parquet")}
    assert on_disk == {"bucket-0", "bucket-1"}


def test_tablefmt_refuses_to_append_to_fixed_bucket_table(pp: Paimon) -> None:
    """tablefmt writes bucket-unaware files only: appending to a bucket=2 table must fail and write nothing
    (files in bucket-0 without hashing would break the table's bucket layout for every other engine)."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    pp.create_table("b", schema, [], {"bucket": "2", "bucket-key": "id"})
    pp.append("b", pa.Table.from_pydict({"id": [1, 2, 3], "name": ["x", "y", "z"]}, schema=schema))
    before = files_under(pp.path("b"))
    table = Table.open(pp.path("b"))
    with pytest.raises(TableFormatError):
        table.append(pa.Table.from_pydict({"id": [4], "name": ["w"]}, schema=schema))
    assert files_under(pp.path("b")) == before
    assert rows_of(pp.read("b")) == [(1, "x"), (2, "y"), (3, "z")]


def test_added_column(pp: Paimon) -> None:
    """Schema evolution: a column added by pypaimon (schema-1) reads as null for old files; each snapshot reads
    with the columns pypaimon gives it; tablefmt can append with the new schema and pypaimon reads that."""
    s0 = pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()), pa.field("dt", pa.string())]
    )
    s1 = s0.append(pa.field("score", pa.float64()))
    pp.create_table("e", s0, ["dt"], {"dynamic-partition-overwrite": "false", "metadata.stats-mode": "full"})
    pp.append(
        "e", pa.Table.from_pylist([{"id": 1, "name": "a", "dt": "x"}, {"id": 2, "name": "b", "dt": "y"}], schema=s0)
    )
    pp.add_column("e", "score", "DOUBLE")
    pp.append("e", pa.Table.from_pylist([{"id": 3, "name": "c", "dt": "x", "score": 9.5}], schema=s1))
    pp.overwrite("e", pa.Table.from_pylist([{"id": 4, "name": "d", "dt": "y", "score": None}], schema=s1), {"dt": "y"})
    assert pp.latest_id("e") == 3

    table = Table.open(pp.path("e"))
    assert [s.schema_id for s in table.snapshots()] == [0, 1, 1]
    assert table.arrow_schema.names == ["id", "name", "dt", "score"]
    latest = [(1, "a", "x", None), (3, "c", "x", 9.5), (4, "d", "y", None)]
    assert rows_of(pp.read("e")) == latest
    assert rows_of(table.to_arrow()) == latest
    assert (
        rows_of(table.to_arrow(snapshot_id=2))
        == rows_of(pp.read("e", snapshot_id=2))
        == [(1, "a", "x", None), (2, "b", "y", None), (3, "c", "x", 9.5)]
    )
    # snapshot 1 was written with schema 0: the rows agree (the column set is checked in the next test)
    assert rows_of(table.to_arrow(snapshot_id=1), ["id", "name", "dt"]) == [(1, "a", "x"), (2, "b", "y")]
    assert rows_of(pp.read("e", snapshot_id=1), ["id", "name", "dt"]) == [(1, "a", "x"), (2, "b", "y")]

    # tablefmt appends with schema 1; pypaimon reads every snapshot
    table.append(pa.Table.from_pylist([{"id": 5, "name": "e", "dt": "z", "score": 1.25}], schema=s1))
    assert pp.latest_id("e") == 4
    assert rows_of(pp.read("e")) == rows_of(Table.open(pp.path("e")).to_arrow()) == [*latest, (5, "e", "z", 1.25)]
    assert rows_of(pp.read("e", snapshot_id=3)) == latest


def test_time_travel_reads_with_the_snapshot_schema(pp: Paimon) -> None:
    """Like Paimon (Java TimeTravelUtil and pypaimon), a read of an older snapshot or tag uses the schema that
    snapshot was committed with (its schemaId), not the latest schema; the latest read uses the latest schema."""
    s0 = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    s1 = s0.append(pa.field("score", pa.float64()))
    pp.create_table("e", s0)
    pp.append("e", pa.Table.from_pylist([{"id": 1, "name": "a"}], schema=s0))
    pp.create_tag("e", "before")
    pp.add_column("e", "score", "DOUBLE")
    pp.append("e", pa.Table.from_pylist([{"id": 2, "name": "b", "score": 0.5}], schema=s1))
    table = Table.open(pp.path("e"))
    for label, theirs in (("snapshot 1", pp.read("e", snapshot_id=1)), ("tag before", pp.read("e", tag="before"))):
        assert theirs.column_names == ["id", "name"], f"pypaimon, {label}"
        assert rows_of(theirs) == [(1, "a")], f"pypaimon, {label}"
    travels: list[dict[str, Any]] = [{"snapshot_id": 1}, {"tag": "before"}]
    if table.snapshot(2).time_millis > table.snapshot(1).time_millis:
        travels.append({"as_of": table.snapshot(1).time_millis})
    for kwargs in travels:
        ours = table.to_arrow(**kwargs)
        assert ours.column_names == ["id", "name"], f"tablefmt, {kwargs}"
        assert rows_of(ours) == [(1, "a")], f"tablefmt, {kwargs}"
    assert table.to_arrow().column_names == pp.read("e").column_names == ["id", "name", "score"]
    assert (
        rows_of(table.to_arrow(snapshot_id=2))
        == rows_of(pp.read("e", snapshot_id=2))
        == [(1, "a", None), (2, "b", 0.5)]
    )


def test_rollback_reused_ids_and_uncommitted_leftovers(pp: Paimon) -> None:
    """pypaimon rolls back (snapshots 3-4 and a newer tag deleted, files left behind), leaves an uncommitted write,
    and reuses snapshot id 3: tablefmt reads every snapshot and tag of the result and appends after it."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
    pp.create_table("r", schema, ["dt"], {"dynamic-partition-overwrite": "false"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=schema))

    def append(rows: list[dict[str, Any]], snapshot_id: int) -> None:
        pp.append("r", pa.Table.from_pylist(rows, schema=schema))
        model.append(rows)
        assert pp.latest_id("r") == snapshot_id
        model.commit(snapshot_id)

    append([{"id": 1, "dt": "a"}, {"id": 2, "dt": "b"}], 1)
    append([{"id": 3, "dt": "a"}], 2)
    pp.create_tag("r", "t2")
    model.tag("t2", 2)
    pp.append("r", pa.Table.from_pylist([{"id": 4, "dt": "z"}], schema=schema))
    pp.drop_partitions("r", [{"dt": "a"}])
    pp.create_tag("r", "t4")
    pp.uncommitted_write("r", pa.Table.from_pylist([{"id": 5, "dt": "a"}, {"id": 6, "dt": "u"}], schema=schema))
    assert Table.open(pp.path("r")).to_arrow(tag="t4").column("id").to_pylist() == [2, 4]
    pp.rollback_to("r", 2)
    assert pp.latest_id("r") == 2
    assert sorted(t.name for t in Table.open(pp.path("r")).tags()) == ["t2"]

    append([{"id": 7, "dt": "b"}], 3)  # id 3 again, different content
    check_history(pp, "r", model)
    table = Table.open(pp.path("r"))
    assert [s.id for s in table.snapshots()] == [1, 2, 3]
    snapshot = table.append(pa.Table.from_pylist([{"id": 8, "dt": "a"}], schema=schema))
    assert snapshot is not None and snapshot.id == 4
    model.append([{"id": 8, "dt": "a"}])
    model.commit(4)
    check_history(pp, "r", model)
