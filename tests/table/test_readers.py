"""Readers over exactly a snapshot's files: pyarrow dataset, to_arrow (projection, filter, pruning), pandas, Polars
and DuckDB on a table with a drop, an overwrite and an added column; time travel; files opened (counted)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pytest
from support.ci import optional
from support.tables import rows_of

from tableformat import Table, ValidationError
from tableformat.commit.schema_change import evolve_schema
from tableformat.model.schema import DataField
from tableformat.model.types import DataType

duckdb = optional("duckdb")
optional("pandas")
optional("polars")

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.date32()), ("v", pa.string())])
D1, D2, D3 = dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3)


def rows(ids: range, day: dt.date, score: bool = False) -> pa.Table:
    columns: dict[str, Any] = {"id": list(ids), "dt": [day] * len(ids), "v": [f"v{i}" for i in ids]}
    if score:
        columns["score"] = [float(i) / 2 for i in ids]
    return pa.table(columns)


def add_column(table: Table, name: str, type_name: str) -> None:
    """ALTER TABLE ADD COLUMN as Paimon writes it: schema-(N+1) with a new field id."""

    def change(latest: Any) -> Any:
        field = DataField(id=latest.highest_field_id + 1, name=name, type=DataType.parse(type_name))
        return dataclasses.replace(latest, fields=(*latest.fields, field), highest_field_id=field.id)

    evolve_schema(table.context.store, change)


@pytest.fixture
def history(tmp_path: Path) -> tuple[Table, dict[int, set[tuple[Any, ...]]]]:
    """Snapshots 1-5: append d1+d2, append d3, overwrite d2, drop d3, (add column score) append d3 with scores.
    Returns the table and the expected rows (id, dt, v, score) of every snapshot."""
    table = Table.create(str(tmp_path / "events"), SCHEMA, ["dt"], options={"write-only": "true"})
    table.append(pa.concat_tables([rows(range(10), D1), rows(range(10, 20), D2)]))
    table.append(rows(range(20, 30), D3))
    table.overwrite(rows(range(100, 105), D2), {"dt": "2024-01-02"})
    table.drop_partitions([{"dt": D3}])
    add_column(table, "score", "DOUBLE")
    table.append(rows(range(200, 204), D3, score=True))

    def expect(*parts: tuple[range, dt.date, bool]) -> set[tuple[Any, ...]]:
        return {(i, day, f"v{i}", float(i) / 2 if s else None) for ids, day, s in parts for i in ids}

    expected = {
        2: expect((range(10), D1, False), (range(10, 20), D2, False), (range(20, 30), D3, False)),
        3: expect((range(10), D1, False), (range(100, 105), D2, False), (range(20, 30), D3, False)),
        4: expect((range(10), D1, False), (range(100, 105), D2, False)),
        5: expect((range(10), D1, False), (range(100, 105), D2, False), (range(200, 204), D3, True)),
    }
    return table, expected


def plain(records: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """Rows from any engine, normalised: NaN (pandas' null double) -> None, datetimes -> dates."""
    result = set()
    for row in records:
        values = []
        for value in row:
            if isinstance(value, float) and math.isnan(value):
                value = None
            elif hasattr(value, "date") and callable(value.date):
                value = value.date()
            values.append(value)
        result.add(tuple(values))
    return result


def test_every_reader_returns_exactly_the_snapshot_rows(history: tuple[Table, dict[int, set[tuple[Any, ...]]]]) -> None:
    table, expected = history
    columns = ["id", "dt", "v", "score"]
    assert set(rows_of(table.to_arrow(), columns)) == expected[5]
    assert len(table.to_arrow()) == len(expected[5])  # no row twice
    assert set(rows_of(table.to_pyarrow_dataset().to_table(), columns)) == expected[5]
    frame = table.to_pandas()
    assert len(frame) == len(expected[5])
    assert plain(list(frame[columns].itertuples(index=False, name=None))) == expected[5]
    polars_frame = table.to_polars()
    assert polars_frame.height == len(expected[5])
    assert plain(polars_frame.select(columns).rows()) == expected[5]
    lazy = table.to_polars(lazy=True).collect()
    assert plain(lazy.select(columns).rows()) == expected[5]
    connection = table.to_duckdb(duckdb.connect(), "events")
    assert plain(connection.sql("select id, dt, v, score from events").fetchall()) == expected[5]
    assert connection.execute("select count(*) from events").fetchone() == (len(expected[5]),)
    # typed partition column everywhere: a DATE, not the directory's day number
    assert table.to_arrow().schema.field("dt").type == pa.date32()
    assert connection.execute("select typeof(dt) from events limit 1").fetchone() == ("DATE",)


@pytest.mark.parametrize("snapshot_id", [2, 3, 4])
def test_time_travel_reads_each_snapshot_with_its_schema(
    history: tuple[Table, dict[int, set[tuple[Any, ...]]]], snapshot_id: int
) -> None:
    table, expected = history
    old = {row[:3] for row in expected[snapshot_id]}
    got = table.to_arrow(snapshot_id)
    assert got.column_names == ["id", "dt", "v"]  # the schema of that snapshot (no score yet)
    assert set(rows_of(got)) == old and got.num_rows == len(old)
    assert set(rows_of(table.to_pyarrow_dataset(snapshot_id).to_table())) == old
    connection = table.to_duckdb(duckdb.connect(), "t", snapshot_id)
    assert plain(connection.sql("select id, dt, v from t").fetchall()) == old
    assert plain(table.to_polars(snapshot_id).rows()) == old


def test_globbing_the_directories_returns_wrong_rows(history: tuple[Table, dict[int, set[tuple[Any, ...]]]]) -> None:
    """What docs/reading.md warns about: the files on disk are not the table."""
    table, expected = history
    root = table.context.layout.root
    globbed = duckdb.sql(f"select count(*) from read_parquet('{root}/*/bucket-0/*.parquet')").fetchall()[0]
    assert globbed == (10 + 10 + 10 + 5 + 4,)  # dropped and overwritten files included
    assert len(expected[5]) == 10 + 5 + 4
    days = duckdb.sql(f"select distinct dt from read_parquet('{root}/*/bucket-0/*.parquet', hive_partitioning=true)")
    assert len(days.fetchall()) == 3


class CountingHandler(pafs.FSSpecHandler):
    """A pyarrow filesystem that records every file opened for reading."""

    def __init__(self, fs: Any, opened: list[str]) -> None:
        super().__init__(fs)
        self.opened = opened

    def open_input_file(self, path: str) -> Any:
        self.opened.append(path)
        return super().open_input_file(path)

    def open_input_stream(self, path: str) -> Any:
        self.opened.append(path)
        return super().open_input_stream(path)


@pytest.fixture
def opened(history: tuple[Table, Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from fsspec.implementations.local import LocalFileSystem

    paths: list[str] = []
    counting = pafs.PyFileSystem(CountingHandler(LocalFileSystem(), paths))
    monkeypatch.setattr(history[0].context.io, "arrow_filesystem", lambda sizes=None: counting)
    return paths


def data_files_opened(paths: list[str]) -> Counter[str]:
    return Counter(p.split("/")[-3] for p in paths if p.endswith(".parquet"))


def test_filter_opens_only_files_whose_partition_can_match(history: tuple[Table, Any], opened: list[str]) -> None:
    table, expected = history
    got = table.to_arrow(filter=pc.field("dt") == D2)
    assert set(rows_of(got, ["id", "dt", "v", "score"])) == {r for r in expected[5] if r[1] == D2}
    assert data_files_opened(opened) == Counter({"dt=19724": 1})  # 1 of the 3 live files


def test_filter_opens_only_files_whose_statistics_can_match(history: tuple[Table, Any], opened: list[str]) -> None:
    table, _ = history
    scan = table.scan(filter=[("id", ">=", 100), ("id", "<", 103)])
    assert (scan.stats().live_files, scan.stats().selected_files) == (3, 1)
    assert sorted(scan.to_table().column("id").to_pylist()) == [100, 101, 102]
    assert data_files_opened(opened) == Counter({"dt=19724": 1})
    opened.clear()
    assert table.to_arrow(filter=pc.field("id") > 10_000).num_rows == 0
    assert opened == []  # no file can match: none is opened
    assert table.to_arrow(filter=pc.field("score") > 100.5).num_rows == 2
    assert data_files_opened(opened) == Counter({"dt=19725": 1})  # the older files hold only nulls in score
    opened.clear()
    assert table.to_arrow(filter=pc.field("score") > 1000.0).num_rows == 0
    assert data_files_opened(opened) == Counter({"dt=19725": 1})  # float min/max are never trusted as bounds


def test_null_aware_pruning(history: tuple[Table, Any], opened: list[str]) -> None:
    """Files written before a column existed hold only nulls in it: is_null keeps them, a range skips them."""
    table, _ = history
    assert table.to_arrow(filter=pc.field("score").is_null()).num_rows == 15
    assert len(data_files_opened(opened)) == 3
    opened.clear()
    got = table.to_arrow(filter=pc.field("v") == "v201")  # v0..v9 (d1) may hold it, v100..v104 (d2) may not
    assert got.column("id").to_pylist() == [201]
    assert data_files_opened(opened) == Counter({"dt=19723": 1, "dt=19725": 1})


def test_projection_and_filter_together(history: tuple[Table, Any]) -> None:
    table, _ = history
    got = table.to_arrow(columns=["v", "score"], filter=(pc.field("id") >= 200) & (pc.field("id") < 202))
    assert got.column_names == ["v", "score"]
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == [
        {"v": "v200", "score": 100.0},
        {"v": "v201", "score": 100.5},
    ]
    assert table.to_pandas(columns=["id"], filter=[("dt", "=", D1)])["id"].tolist() == list(range(10))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"columns": ["nope"]}, "unknown column"),
        ({"filter": pc.field("nope") > 1}, "invalid filter"),
        ({"filter": pc.field("id") > "x"}, "invalid filter"),
        ({"filter": "id > 1"}, "a filter is a pyarrow.compute expression"),
        ({"filter": [("id", "~", 1)]}, "invalid filter"),
    ],
)
def test_bad_columns_and_filters_are_validation_errors(
    history: tuple[Table, Any], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        history[0].to_arrow(**kwargs)


def test_renamed_column_reads_by_field_id(tmp_path: Path) -> None:
    """A rename (same field id, new name) cannot be read by name: those files are read by field id."""
    table = Table.create(str(tmp_path / "r"), SCHEMA, ["dt"])
    table.append(rows(range(3), D1))

    def rename(latest: Any) -> Any:
        fields = tuple(dataclasses.replace(f, name="value") if f.name == "v" else f for f in latest.fields)
        return dataclasses.replace(latest, fields=fields)

    evolve_schema(table.context.store, rename)
    table.append(pa.table({"id": [3], "dt": [D2], "value": ["new"]}))
    expected = {(0, D1, "v0"), (1, D1, "v1"), (2, D1, "v2"), (3, D2, "new")}
    assert set(rows_of(table.to_arrow(), ["id", "dt", "value"])) == expected
    assert set(rows_of(table.to_pyarrow_dataset().to_table(), ["id", "dt", "value"])) == expected
    assert table.to_arrow(filter=pc.field("value") == "v1").column("id").to_pylist() == [1]
    connection = table.to_duckdb(duckdb.connect(), "r")
    assert sorted(connection.sql("select value from r").fetchall()) == [("new",), ("v0",), ("v1",), ("v2",)]


def test_empty_table_and_batches(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "e"), SCHEMA, ["dt"])
    assert table.to_arrow().num_rows == 0 and table.to_arrow().schema == table.arrow_schema
    assert table.to_pandas().empty and table.to_polars().height == 0
    assert table.to_duckdb(name="e").execute("select count(*) from e").fetchone() == (0,)
    table.append(rows(range(5), D1))
    reader = table.to_batches(columns=["id"], filter=pc.field("id") < 3)
    assert sorted(reader.read_all().column("id").to_pylist()) == [0, 1, 2]
    with pytest.raises(ValidationError, match="unknown column"):
        table.to_batches(columns=["nope"])
