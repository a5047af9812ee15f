"""Tables written by tablefmt read back identically through pypaimon 2.1.0 at every snapshot and tag, and pypaimon
can append to them (tablefmt then reads pypaimon's snapshot, and pypaimon reads tablefmt's next append)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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
from tableformat import CommitKind, Table


def _wide_history(pp: Paimon, name: str) -> tuple[Table, Model]:
    """A tablefmt history over every operation: appends, static overwrites (full, partial, empty, whole table),
    a dynamic overwrite, drops (null, '' and several specs in one snapshot) and tags."""
    table = Table.create(pp.path(name), WIDE_SCHEMA, ["d", "i", "s"], {"dynamic-partition-overwrite": "false"})
    model = Model(["d", "i", "s"], wide_table)

    def run(op: Callable[[], Any], mutate: Callable[[], None], expected_id: int, kind: str) -> None:
        snapshot = op()
        assert snapshot is not None and snapshot.id == expected_id
        assert snapshot.commit_kind == CommitKind(kind)
        mutate()
        model.commit(expected_id)

    rows1 = model.new_rows(PARTITIONS + PARTITIONS[:3], wide_row)
    run(lambda: table.append(wide_table(rows1)), lambda: model.append(rows1), 1, "APPEND")

    rows2 = model.new_rows([PARTITIONS[0], PARTITIONS[3], PARTITIONS[1]], wide_row)
    run(lambda: table.append(wide_table(rows2)), lambda: model.append(rows2), 2, "APPEND")
    table.create_tag("t2")
    model.tag("t2", 2)

    spec3: dict[str, Any] = {"d": D1, "i": 1, "s": "a"}
    rows3 = model.new_rows([PARTITIONS[0], PARTITIONS[0]], wide_row)
    run(lambda: table.overwrite(wide_table(rows3), spec3), lambda: model.overwrite(rows3, spec3), 3, "OVERWRITE")

    spec4: dict[str, Any] = {"d": D2}  # partial spec
    rows4 = model.new_rows([(D2, -5, "x")], wide_row)
    run(lambda: table.overwrite(wide_table(rows4), spec4), lambda: model.overwrite(rows4, spec4), 4, "OVERWRITE")

    rows5 = model.new_rows([(D1, 1, None), (D3, 0, "éé"), (D3, 0, "éé")], wide_row)  # dynamic: exactly these two
    run(
        lambda: table.overwrite(wide_table(rows5), dynamic=True),
        lambda: model.overwrite_dynamic(rows5),
        5,
        "OVERWRITE",
    )

    drops: list[dict[str, Any]] = [{"s": ""}, {"d": D1, "i": 1, "s": None}, {"i": 7}]  # '' != null
    run(lambda: table.drop_partitions(drops), lambda: model.drop(drops), 6, "OVERWRITE")
    table.create_tag("t6")
    model.tag("t6", 6)

    rows7 = model.new_rows([(D1, 1, None), (D1, 1, ""), PARTITIONS[4], PARTITIONS[5]], wide_row)
    run(lambda: table.append(wide_table(rows7)), lambda: model.append(rows7), 7, "APPEND")
    table.create_tag("old4", snapshot_id=4)
    model.tag("old4", 4)

    spec8: dict[str, Any] = {"d": D3, "i": 0, "s": "éé"}  # empty static overwrite = the partition is deleted
    run(lambda: table.overwrite(wide_table([]), spec8), lambda: model.overwrite([], spec8), 8, "OVERWRITE")

    rows9 = model.new_rows([PARTITIONS[0], (D2, 7, "y")], wide_row)  # whole table
    run(lambda: table.overwrite(wide_table(rows9)), lambda: model.overwrite(rows9, {}), 9, "OVERWRITE")
    return table, model


def test_wide_partitioned_history(pp: Paimon) -> None:
    """Many column types (decimal, timestamps s..ns and LTZ, binary, bool, ...) under DATE / INT / nullable STRING
    partitions: pypaimon reads every tablefmt snapshot and tag; then pypaimon appends, tablefmt reads that, tablefmt
    appends, pypaimon reads that."""
    _, model = _wide_history(pp, "w")
    check_history(pp, "w", model)

    rows = model.new_rows([(D1, 1, None), (D1, 1, ""), PARTITIONS[3], PARTITIONS[0]], wide_row)
    pp.append("w", wide_table(rows))
    model.append(rows)
    assert pp.latest_id("w") == 10
    model.commit(10)
    table = check_history(pp, "w", model)
    assert table.snapshot(10).commit_kind == CommitKind.APPEND

    rows = model.new_rows([(D1, 1, None), PARTITIONS[4]], wide_row)
    snapshot = table.append(wide_table(rows))
    model.append(rows)
    assert snapshot is not None and snapshot.id == 11
    model.commit(11)
    table.create_tag("after-pypaimon", snapshot_id=10)
    model.tag("after-pypaimon", 10)
    check_history(pp, "w", model)

    # pypaimon drops a partition tablefmt and pypaimon both wrote into; both read the result
    pp.drop_partitions("w", [{"d": D1, "i": 1, "s": None}])
    model.drop([{"d": D1, "i": 1, "s": None}])
    assert pp.latest_id("w") == 12
    model.commit(12)
    check_history(pp, "w", model)


# pypaimon prunes files with the manifests' value statistics (written by tablefmt) before it filters rows: a wrong
# min, max or null count makes it skip a file that holds matching rows.
PREDICATES: list[tuple[str, Callable[[Any], Any], Callable[[dict[str, Any]], bool]]] = [
    ("id == 5", lambda b: b.equal("id", 5), lambda r: r["id"] == 5),
    ("c_int > -99990", lambda b: b.greater_than("c_int", -99990), lambda r: r["c_int"] > -99990),
    ("c_smallint <= -310", lambda b: b.less_or_equal("c_smallint", -310), lambda r: r["c_smallint"] <= -310),
    (
        "c_tinyint < -95",
        lambda b: b.less_than("c_tinyint", -95),
        lambda r: r["c_tinyint"] is not None and r["c_tinyint"] < -95,
    ),
    ("c_double >= -8.25", lambda b: b.greater_or_equal("c_double", -8.25), lambda r: r["c_double"] >= -8.25),
    ("c_float == 5.5", lambda b: b.equal("c_float", 5.5), lambda r: r["c_float"] == 5.5),
    (
        "c_string == long",
        lambda b: b.equal("c_string", "a-string-longer-than-16-bytes-10"),
        lambda r: r["c_string"] == "a-string-longer-than-16-bytes-10",
    ),
    ("c_string == short", lambda b: b.equal("c_string", "short"), lambda r: r["c_string"] == "short"),
    ("c_dec38 is null", lambda b: b.is_null("c_dec38"), lambda r: r["c_dec38"] is None),
    (
        "c_dec > 12350",
        lambda b: b.greater_than("c_dec", decimal.Decimal("12350.00")),
        lambda r: r["c_dec"] > decimal.Decimal("12350.00"),
    ),
    (
        "c_date between",
        lambda b: b.between("c_date", D1 + dt.timedelta(days=4), D1 + dt.timedelta(days=8)),
        lambda r: D1 + dt.timedelta(days=4) <= r["c_date"] <= D1 + dt.timedelta(days=8),
    ),
    ("c_bool == True", lambda b: b.equal("c_bool", True), lambda r: r["c_bool"] is True),
    (
        "c_ts3 >= t",
        lambda b: b.greater_or_equal("c_ts3", dt.datetime(2024, 1, 2, 3, 4, 12)),
        lambda r: r["c_ts3"] >= dt.datetime(2024, 1, 2, 3, 4, 12),
    ),
    ("s == ''", lambda b: b.equal("s", ""), lambda r: r["s"] == ""),
    ("s is null", lambda b: b.is_null("s"), lambda r: r["s"] is None),
    ("d == D2", lambda b: b.equal("d", D2), lambda r: r["d"] == D2),
    ("i < 1", lambda b: b.less_than("i", 1), lambda r: r["i"] < 1),
]


FILTER_CHUNKS = (PARTITIONS, PARTITIONS[:2], PARTITIONS[2:], PARTITIONS)  # one append each: several files a partition


@pytest.fixture(scope="module")
def filtered_table(pypaimon_version: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Paimon, Model]:
    """One tablefmt table (several files per partition) shared by the filter tests: it is only read."""
    pp = Paimon(tmp_path_factory.mktemp("filters") / "wh")
    table = Table.create(pp.path("f"), WIDE_SCHEMA, ["d", "i", "s"])
    model = Model(["d", "i", "s"], wide_table)
    for chunk in FILTER_CHUNKS:
        rows = model.new_rows(chunk, wide_row)
        table.append(wide_table(rows))
        model.append(rows)
    return pp, model


@pytest.mark.parametrize("label,predicate,keep", PREDICATES, ids=[p[0] for p in PREDICATES])
def test_pypaimon_filters_with_tablefmt_stats(
    filtered_table: tuple[Paimon, Model],
    label: str,
    predicate: Callable[[Any], Any],
    keep: Callable[[dict[str, Any]], bool],
) -> None:
    reader, model = filtered_table
    expected = [r for r in model.live if keep(r)]
    assert expected, f"predicate {label} selects nothing: a useless test"
    assert len(expected) < len(model.live), f"predicate {label} selects everything: a useless test"
    assert_rows(reader.read("f", predicate=predicate), model.expect(expected), f"pypaimon filter {label}")


def test_pypaimon_prunes_files_with_tablefmt_stats(filtered_table: tuple[Paimon, Model]) -> None:
    """The filter tests above are meaningful: pypaimon does skip tablefmt files by their value stats."""
    reader, model = filtered_table
    table = Table.open(reader.path("f"))
    every_file = sorted(f.path.rsplit("/", 1)[1] for f in table.files())
    assert reader.planned_files("f") == every_file
    assert len(every_file) == sum(len(chunk) for chunk in FILTER_CHUNKS)  # one file per partition per append
    holding_5 = [f.path.rsplit("/", 1)[1] for f in table.files() if 5 in _ids_in(f.path)]
    assert len(holding_5) == 1
    assert reader.planned_files("f", lambda b: b.equal("id", 5)) == holding_5
    assert reader.planned_files("f", lambda b: b.greater_than("id", model.next_id)) == []


def _ids_in(path: str) -> list[int]:
    return pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist()  # type: ignore[no-any-return]


def test_unpartitioned(pp: Paimon) -> None:
    """An unpartitioned tablefmt table: append, whole-table overwrite, tag; pypaimon reads, appends; tablefmt reads."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    model = Model([], lambda rows: pa.Table.from_pylist(rows, schema=schema))
    table = Table.create(pp.path("u"), schema)
    batches = [[{"id": 1, "v": "a"}, {"id": 2, "v": None}], [{"id": 3, "v": "c"}]]
    for snapshot_id, rows in enumerate(batches, start=1):
        assert table.append(pa.Table.from_pylist(rows, schema=schema)).id == snapshot_id  # type: ignore[union-attr]
        model.append(rows)
        model.commit(snapshot_id)
    table.create_tag("two")
    model.tag("two", 2)
    rows = [{"id": 4, "v": "d"}]
    assert table.overwrite(pa.Table.from_pylist(rows, schema=schema)).id == 3  # type: ignore[union-attr]
    model.overwrite(rows, {})
    model.commit(3)
    check_history(pp, "u", model)

    rows = [{"id": 5, "v": "e"}]
    pp.append("u", pa.Table.from_pylist(rows, schema=schema))
    model.append(rows)
    model.commit(4)
    check_history(pp, "u", model)
    rows = [{"id": 6, "v": None}]
    Table.open(pp.path("u")).append(pa.Table.from_pylist(rows, schema=schema))
    model.append(rows)
    model.commit(5)
    check_history(pp, "u", model)
