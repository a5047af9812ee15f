"""Byte-level agreement with pypaimon 2.1.0, decoded independently of tablefmt (fastavro + json on the raw files).

* For the same partition values, tablefmt writes the same partition BinaryRow bytes (manifest ``_PARTITION`` and
  the manifest list's ``_PARTITION_STATS``), the same partition directory names, and the same value-stats bytes as
  pypaimon in ``metadata.stats-mode=full``.
* A DELETE tablefmt writes for a pypaimon file is pypaimon's ADD record with only ``_KIND`` changed (the file
  identity Paimon matches on), and the other way round; each side then reads the other's result at every snapshot.
"""

from __future__ import annotations

import datetime as dt
import decimal
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interop.helpers import (
    D1,
    D2,
    PARTITIONS,
    WIDE_SCHEMA,
    Model,
    Paimon,
    check_history,
    delta_entries,
    live_file_entries,
    read_avro,
    snapshot_json,
    wide_row,
    wide_table,
)
from tableformat import Table

# Partition values that exercise every BinaryRow and directory-name rule: null, '', whitespace only, inline (<= 7
# bytes) and tail strings (exactly 8, long, multi-byte UTF-8), every escaped character class, INT and DATE extremes.
ODD_STRINGS: list[str | None] = [
    None,
    "",
    " ",
    "\t",
    "abcdefg",
    "abcdefgh",
    "éééé",
    "a-much-longer-partition-value-over-sixteen-bytes",
    "a b/c:d=e%f#?",
    "{x}[y]^z'*\"\\",
    "ctl\x01\x1f\x7f",
    "日本語",
]
ODD_PARTITIONS: list[tuple[Any, Any, Any]] = [
    *[(D1, 1, s) for s in ODD_STRINGS],
    (dt.date(1970, 1, 1), -(2**31), "min-int"),
    (dt.date(1969, 12, 31), 2**31 - 1, "max-int"),
    (dt.date(1, 1, 1), 0, "year-1"),
    (dt.date(9999, 12, 31), 0, "year-9999"),
    (None, None, None),
    (None, 3, "null-date"),
    (D2, None, "null-int"),
]
PARTITION_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("d", pa.date32()),
        pa.field("i", pa.int32()),
        pa.field("s", pa.string()),
    ]
)


def _by_partition_values(root: str, snapshot_id: int, keys: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Delta ADD entries of a snapshot keyed by the partition values found INSIDE each data file (so the mapping
    does not depend on how either side encodes or names partitions), with the file's relative directory."""
    files = {p.name: p for p in Path(root).rglob("*.parquet")}
    result: dict[tuple[Any, ...], dict[str, Any]] = {}
    for entry in delta_entries(root, snapshot_id):
        assert entry["_KIND"] == 0
        path = files[entry["_FILE"]["_FILE_NAME"]]
        values = pq.ParquetFile(path).read(columns=keys).slice(0, 1).to_pylist()[0]
        key = tuple(values[k] for k in keys)
        assert key not in result, f"two files for partition {key} in one commit"
        result[key] = {"entry": entry, "dir": path.parent.relative_to(root).as_posix()}
    return result


def test_partition_binary_rows_and_directories_match(pp: Paimon) -> None:
    keys = ["d", "i", "s"]
    rows = [{"id": n, "d": d, "i": i, "s": s} for n, (d, i, s) in enumerate(ODD_PARTITIONS)]
    data = pa.Table.from_pylist(rows, schema=PARTITION_SCHEMA)
    pp.create_table("theirs", PARTITION_SCHEMA, keys)
    pp.append("theirs", data)
    Table.create(pp.path("ours"), PARTITION_SCHEMA, keys).append(data)

    theirs = _by_partition_values(pp.path("theirs"), 1, keys)
    ours = _by_partition_values(pp.path("ours"), 1, keys)
    assert sorted(theirs, key=repr) == sorted(ours, key=repr)
    assert len(ours) == len(ODD_PARTITIONS)
    for key, their in theirs.items():
        our = ours[key]
        assert our["entry"]["_PARTITION"] == their["entry"]["_PARTITION"], (
            f"partition {key}: tablefmt {our['entry']['_PARTITION'].hex()} != pypaimon "
            f"{their['entry']['_PARTITION'].hex()}"
        )
        assert our["dir"] == their["dir"], f"partition {key}: directory"
        for field in ("_BUCKET", "_TOTAL_BUCKETS", "_VERSION"):
            assert our["entry"][field] == their["entry"][field], (key, field)

    # the manifest list's partition statistics over the same set of partitions
    def stats(root: str) -> dict[str, Any]:
        (meta,) = read_avro(Path(root) / "manifest" / snapshot_json(root, 1)["deltaManifestList"])
        return meta["_PARTITION_STATS"]  # type: ignore[no-any-return]

    assert stats(pp.path("ours")) == stats(pp.path("theirs"))

    # and each side reads the other's odd partitions back exactly
    expected = sorted(tuple(r.values()) for r in data.to_pylist())
    assert sorted(tuple(r.values()) for r in Table.open(pp.path("theirs")).to_arrow().to_pylist()) == expected
    assert sorted(tuple(r.values()) for r in pp.read("ours").to_pylist()) == expected


OTHER_PARTITION_TYPES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("bool", pa.bool_(), [True, False, None]),
    ("tinyint", pa.int8(), [-128, 127, None]),
    ("smallint", pa.int16(), [-300, 2, None]),
    ("bigint", pa.int64(), [2**40, -1, None]),
    ("decimal", pa.decimal128(10, 2), [decimal.Decimal("12.34"), decimal.Decimal("-0.50"), None]),
    ("ts3", pa.timestamp("ms"), [dt.datetime(2024, 1, 2, 3, 4, 5, 123000), dt.datetime(2024, 1, 2), None]),
    (
        "ts6",
        pa.timestamp("us"),
        [
            dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
            dt.datetime(2024, 1, 2, 3, 4, 0, 500000),
            dt.datetime(2024, 1, 2, 3, 4, 5),
            None,
        ],
    ),
    ("ltz", pa.timestamp("us", tz="UTC"), [dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=dt.timezone.utc), None]),
]


@pytest.mark.parametrize("name,arrow_type,values", OTHER_PARTITION_TYPES, ids=[t[0] for t in OTHER_PARTITION_TYPES])
def test_other_partition_types(pp: Paimon, name: str, arrow_type: pa.DataType, values: list[Any]) -> None:
    """More partition column types: same bytes and directories as pypaimon, and each side reads the other's."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", arrow_type)])
    data = pa.table({"id": list(range(len(values))), "p": pa.array(values, arrow_type)}, schema=schema)
    pp.create_table("theirs", schema, ["p"])
    pp.append("theirs", data)
    Table.create(pp.path("ours"), schema, ["p"]).append(data)
    theirs = _by_partition_values(pp.path("theirs"), 1, ["p"])
    ours = _by_partition_values(pp.path("ours"), 1, ["p"])
    assert {k: (v["entry"]["_PARTITION"], v["dir"]) for k, v in ours.items()} == {
        k: (v["entry"]["_PARTITION"], v["dir"]) for k, v in theirs.items()
    }
    assert Table.open(pp.path("theirs")).to_arrow().sort_by("id").column("p").to_pylist() == values
    assert pp.read("ours").sort_by("id").column("p").to_pylist() == values


@pytest.mark.parametrize("arrow_type", [pa.float32(), pa.float64()], ids=["float", "double"])
def test_tablefmt_reads_floating_point_partitions(pp: Paimon, arrow_type: pa.DataType) -> None:
    """tablefmt does not create FLOAT/DOUBLE partition keys, but it must read pypaimon tables that have them: the
    directory names follow Java's Float/Double.toString (1.0E10, 1.2345678E7, 0.1 for a float32 0.1)."""
    values = [1.5, 0.1, 1e10, 1e-5, 100.0, 1234567.0, 12345678.0, -0.0, 3.3333333, None]
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("p", arrow_type)])
    data = pa.table({"id": list(range(len(values))), "p": pa.array(values, arrow_type)}, schema=schema)
    pp.create_table("theirs", schema, ["p"])
    pp.append("theirs", data)
    got = Table.open(pp.path("theirs")).to_arrow().sort_by("id")
    assert got.column("p").to_pylist() == data.column("p").to_pylist()


def test_value_stats_match_pypaimon_full_mode(pp: Paimon) -> None:
    """The min/max/null-count rows tablefmt writes for every column equal pypaimon's with metadata.stats-mode=full
    (same rows, one file per partition on both sides)."""
    keys = ["d", "i", "s"]
    model = Model(keys, wide_table)
    rows = model.new_rows(PARTITIONS * 3, wide_row)
    data = wide_table(rows)
    pp.create_table("theirs", WIDE_SCHEMA, keys, {"metadata.stats-mode": "full"})
    pp.append("theirs", data)
    Table.create(pp.path("ours"), WIDE_SCHEMA, keys).append(data)
    theirs = _by_partition_values(pp.path("theirs"), 1, keys)
    ours = _by_partition_values(pp.path("ours"), 1, keys)
    assert sorted(ours, key=repr) == sorted(theirs, key=repr)
    mismatches = []
    for key, their in theirs.items():
        a, b = ours[key]["entry"]["_FILE"], their["entry"]["_FILE"]
        for field in (
            "_ROW_COUNT",
            "_VALUE_STATS",
            "_VALUE_STATS_COLS",
            "_KEY_STATS",
            "_MIN_KEY",
            "_MAX_KEY",
            "_MIN_SEQUENCE_NUMBER",
            "_MAX_SEQUENCE_NUMBER",
            "_LEVEL",
            "_EXTRA_FILES",
            "_DELETE_ROW_COUNT",
            "_FILE_SOURCE",
            "_EMBEDDED_FILE_INDEX",
            "_EXTERNAL_PATH",
        ):
            if a[field] != b[field]:
                mismatches.append((key, field, a[field], b[field]))
    assert not mismatches, "\n".join(map(repr, mismatches[:5]))


def _entry_without_kind(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "_KIND"}


# pypaimon 2.1.0 writes its DELETE entries with empty value stats (_VALUE_STATS = the 12-byte empty row,
# _NULL_COUNTS [], _VALUE_STATS_COLS []) even for its own full-stats files: stats are not part of a file's identity.
PYPAIMON_DELETE_DROPS = ("_VALUE_STATS", "_VALUE_STATS_COLS")


def _assert_deletes_copy_adds(
    root: str, delete_snapshot: int, expected_deleted: set[str], ignore: tuple[str, ...] = ()
) -> None:
    """Every DELETE of ``delete_snapshot`` equals the live ADD of the same file in every field but _KIND (and the
    _FILE fields in ``ignore``), and the deleted files are exactly ``expected_deleted``."""
    live_before = {key[2]: entry for key, entry in live_file_entries(root, delete_snapshot - 1).items()}
    deletes = [e for e in delta_entries(root, delete_snapshot) if e["_KIND"] == 1]
    assert sorted(e["_FILE"]["_FILE_NAME"] for e in deletes) == sorted(expected_deleted)
    for delete in deletes:
        add = live_before[delete["_FILE"]["_FILE_NAME"]]
        assert add["_KIND"] == 0
        assert set(delete["_FILE"]) == set(add["_FILE"])
        differing = {
            k: (delete["_FILE"][k], add["_FILE"][k])
            for k in add["_FILE"]
            if delete["_FILE"][k] != add["_FILE"][k] and k not in ignore
        }
        assert not differing, f"DELETE != ADD of {delete['_FILE']['_FILE_NAME']}: {differing}"
        without_file = {k: v for k, v in _entry_without_kind(delete).items() if k != "_FILE"}
        assert without_file == {k: v for k, v in _entry_without_kind(add).items() if k != "_FILE"}
        if ignore:
            assert delete["_FILE"]["_VALUE_STATS"]["_MIN_VALUES"] == bytes(12)  # what pypaimon does, observed


def _files_of(root: str, snapshot_id: int, predicate: Any) -> set[str]:
    """Live file names of a snapshot whose partition (read from the data file) satisfies ``predicate``."""
    paths = {p.name: p for p in Path(root).rglob("*.parquet")}
    names = set()
    for (_, _, name), _entry in live_file_entries(root, snapshot_id).items():
        first = pq.ParquetFile(paths[name]).read(columns=["d", "i", "s"]).slice(0, 1).to_pylist()[0]
        if predicate(first):
            names.add(name)
    return names


@pytest.mark.parametrize("stats_mode", [None, "full"], ids=["default-stats", "full-stats"])
def test_tablefmt_deletes_pypaimon_files(pp: Paimon, stats_mode: str | None) -> None:
    """pypaimon appends; tablefmt drops partitions (null, '' and a partial spec) and overwrites one: its DELETEs are
    pypaimon's ADDs with _KIND=1, and pypaimon reads every snapshot correctly (and appends after)."""
    options = {"dynamic-partition-overwrite": "false"}
    if stats_mode:
        options["metadata.stats-mode"] = stats_mode
    pp.create_table("t", WIDE_SCHEMA, ["d", "i", "s"], options)
    model = Model(["d", "i", "s"], wide_table)
    for snapshot_id, chunk in enumerate([PARTITIONS, PARTITIONS[:3], PARTITIONS[1:4]], start=1):
        rows = model.new_rows(chunk, wide_row)
        pp.append("t", wide_table(rows))
        model.append(rows)
        model.commit(snapshot_id)
    pp.create_tag("t", "pp3")
    model.tag("pp3", 3)
    root = pp.path("t")
    table = Table.open(root)

    specs: list[dict[str, Any]] = [{"d": D1, "i": 1, "s": None}, {"d": D1, "i": 1, "s": ""}]
    doomed = _files_of(root, 3, lambda r: r["d"] == D1 and r["i"] == 1 and r["s"] in (None, ""))
    assert len(doomed) == 6  # null: 3 files, '': 3 files (both in the directory __DEFAULT_PARTITION__)
    assert table.drop_partitions(specs).id == 4  # type: ignore[union-attr]
    model.drop(specs)
    model.commit(4)
    _assert_deletes_copy_adds(root, 4, doomed)

    doomed = _files_of(root, 4, lambda r: r["d"] == D2)
    assert table.drop_partitions([{"d": D2}]).id == 5  # type: ignore[union-attr]
    model.drop([{"d": D2}])
    model.commit(5)
    _assert_deletes_copy_adds(root, 5, doomed)

    spec = {"d": D1, "i": 1, "s": "a"}
    doomed = _files_of(root, 5, lambda r: (r["d"], r["i"], r["s"]) == (D1, 1, "a"))
    rows = model.new_rows([PARTITIONS[0]], wide_row)
    assert table.overwrite(wide_table(rows), spec).id == 6  # type: ignore[union-attr]
    model.overwrite(rows, spec)
    model.commit(6)
    _assert_deletes_copy_adds(root, 6, doomed)
    check_history(pp, "t", model)

    rows = model.new_rows([(D1, 1, None), (D2, 7, "a b/c:d=e%f#?")], wide_row)
    pp.append("t", wide_table(rows))
    model.append(rows)
    model.commit(7)
    check_history(pp, "t", model)


def test_pypaimon_deletes_tablefmt_files(pp: Paimon) -> None:
    """tablefmt appends; pypaimon drops partitions and overwrites one: pypaimon's DELETEs are tablefmt's ADDs with
    _KIND=1 (identity, size, counts, creation time: pypaimon decoded and re-encoded tablefmt's records; it blanks the
    value stats of DELETEs, as it does for its own files), and tablefmt reads every snapshot."""
    root = pp.path("t")
    table = Table.create(root, WIDE_SCHEMA, ["d", "i", "s"], {"dynamic-partition-overwrite": "false"})
    model = Model(["d", "i", "s"], wide_table)
    for snapshot_id, chunk in enumerate([PARTITIONS, PARTITIONS[:3], PARTITIONS[1:4]], start=1):
        rows = model.new_rows(chunk, wide_row)
        table.append(wide_table(rows))
        model.append(rows)
        model.commit(snapshot_id)
    table.create_tag("tf3")
    model.tag("tf3", 3)

    doomed = _files_of(root, 3, lambda r: r["d"] == D1 and r["i"] == 1 and r["s"] is None)
    pp.drop_partitions("t", [{"d": D1, "i": 1, "s": None}])
    model.drop([{"d": D1, "i": 1, "s": None}])
    assert pp.latest_id("t") == 4
    model.commit(4)
    _assert_deletes_copy_adds(root, 4, doomed, PYPAIMON_DELETE_DROPS)

    doomed = _files_of(root, 4, lambda r: r["d"] == D1 and r["i"] == 1 and r["s"] == "")
    pp.drop_partitions("t", [{"d": D1, "i": 1, "s": ""}])
    model.drop([{"d": D1, "i": 1, "s": ""}])
    model.commit(5)
    _assert_deletes_copy_adds(root, 5, doomed, PYPAIMON_DELETE_DROPS)

    spec = {"d": D2}
    doomed = _files_of(root, 5, lambda r: r["d"] == D2)
    rows = model.new_rows([(D2, 8, "new")], wide_row)
    pp.overwrite("t", wide_table(rows), spec)
    model.overwrite(rows, spec)
    model.commit(6)
    _assert_deletes_copy_adds(root, 6, doomed, PYPAIMON_DELETE_DROPS)
    check_history(pp, "t", model)

    rows = model.new_rows([(D1, 1, None), PARTITIONS[5]], wide_row)
    assert Table.open(root).append(wide_table(rows)).id == 7  # type: ignore[union-attr]
    model.append(rows)
    model.commit(7)
    check_history(pp, "t", model)


@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(
        st.one_of(
            st.none(),
            st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
            st.text(st.sampled_from(" \t\n\x0b\x0c\r\x1c\x85\xa0\u2000\u3000/=:%#?{}[]^'*\"\\\x00\x7fa"), max_size=4),
        ),
        min_size=1,
        max_size=6,
        unique=True,
    )
)
def test_random_string_partitions_match(pp: Paimon, values: list[str | None]) -> None:
    """Property: for any STRING partition values, tablefmt's BinaryRow bytes and directory names equal pypaimon's,
    and each side reads the other's table back exactly."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())])
    data = pa.table({"id": list(range(len(values))), "s": pa.array(values, pa.string())}, schema=schema)
    with tempfile.TemporaryDirectory(dir=pp.warehouse) as scratch:
        local = Paimon(Path(scratch) / "wh")
        local.create_table("theirs", schema, ["s"])
        local.append("theirs", data)
        Table.create(local.path("ours"), schema, ["s"]).append(data)
        theirs = _entries_by_first_id(local.path("theirs"))
        ours = _entries_by_first_id(local.path("ours"))
        assert ours == theirs
        expected = sorted(zip(data.column("id").to_pylist(), values))
        assert sorted(tuple(r.values()) for r in Table.open(local.path("theirs")).to_arrow().to_pylist()) == expected
        assert sorted(tuple(r.values()) for r in local.read("ours").to_pylist()) == expected


def _entries_by_first_id(root: str) -> dict[int, tuple[bytes, str]]:
    """id of the first row of each data file -> (partition bytes, relative directory)."""
    files = {p.name: p for p in Path(root).rglob("*.parquet")}
    result = {}
    for entry in delta_entries(root, 1):
        path = files[entry["_FILE"]["_FILE_NAME"]]
        for row_id in pq.ParquetFile(path).read(columns=["id"]).column("id").to_pylist():
            result[row_id] = (entry["_PARTITION"], path.parent.relative_to(root).as_posix())
    return result
