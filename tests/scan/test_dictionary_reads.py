"""Data files' dictionary-coded string and binary columns are read as dictionaries and expanded once (cheaper than
pyarrow's plain decode of them); overflowed dictionaries, plain columns and nested columns are read plainly. The
rows and types a reader returns are exactly those of a plain read."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tableformat import Table
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.commit.schema_change import evolve_schema
from tableformat.io.factory import open_location
from tableformat.layout import TableLayout
from tableformat.scan.reader import DataReader, dictionary_coded_columns, read_parquet
from tableformat.store import MetadataStore

ROWS = 60_000


def sample(rows: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "kind": pa.array([None if i % 7 == 0 else ("view", "click", "buy")[i % 3] for i in range(rows)]),
            "tag": pa.array([b"\x00\x01" if i % 2 else b"\xff" for i in range(rows)], pa.binary()),
            "unique": pa.array([f"user-{i:010d}-{(i * 7919) % 100_003:06d}-padding-to-overflow" for i in range(rows)]),
            "plain": pa.array([f"p{i % 5}" for i in range(rows)]),
            "nested": pa.array([{"s": f"n{i % 3}"} for i in range(rows)]),
            "listed": pa.array([[f"l{i % 2}"] for i in range(rows)]),
        }
    )


def write(path: Path, table: pa.Table, **options: Any) -> str:
    """With pyarrow's default 1 MiB dictionary pages: "unique" (3.2 MB plain) overflows its dictionary after about
    20,000 values and falls back to plain pages."""
    pq.write_table(
        table,
        str(path),
        use_dictionary=["kind", "tag", "unique", "nested.s", "listed.list.element"],
        **options,
    )
    return str(path)


@pytest.mark.slow
def test_only_wholly_dictionary_coded_top_level_byte_arrays_are_chosen(tmp_path: Path) -> None:
    metadata = pq.read_metadata(write(tmp_path / "f.parquet", sample()))
    unique = metadata.schema.names.index("unique")
    assert metadata.row_group(0).column(unique).has_dictionary_page  # a dictionary page, then plain pages
    assert dictionary_coded_columns(metadata) == ["kind", "tag"]


def test_one_overflowed_row_group_makes_the_column_plain(tmp_path: Path) -> None:
    low = sample().select(["id", "unique"]).set_column(1, "unique", pa.array([f"u{i % 4}" for i in range(ROWS)]))
    mixed = pa.concat_tables([low, sample().select(["id", "unique"])])
    metadata = pq.read_metadata(write(tmp_path / "f.parquet", mixed, row_group_size=ROWS))
    assert metadata.num_row_groups == 2
    assert dictionary_coded_columns(metadata) == []
    assert dictionary_coded_columns(pq.read_metadata(write(tmp_path / "low.parquet", low))) == ["unique"]


def test_read_parquet_returns_the_plain_read_with_dictionary_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "f.parquet", sample(), row_group_size=ROWS // 3)
    chosen = dictionary_coded_columns(pq.read_metadata(path))
    assert chosen[:2] == ["kind", "tag"]  # and "unique", whose 20,000-row chunks fell back for less than 1 MiB
    table = read_parquet(path, pafs.LocalFileSystem())
    plain = pq.read_table(path)
    assert [f.name for f in table.schema] == plain.column_names
    for name in plain.column_names:
        if name in chosen:
            assert pa.types.is_dictionary(table.schema.field(name).type)
            assert table.column(name).cast(plain.schema.field(name).type).equals(plain.column(name))
        else:
            assert table.schema.field(name).type == plain.schema.field(name).type
            assert table.column(name).equals(plain.column(name))
    assert table.column("kind").null_count == len(range(0, ROWS, 7))


def reader_of(table: Table) -> DataReader:
    file_io, root = open_location(table.location)
    store = MetadataStore(file_io, TableLayout(root))
    schema = store.latest_schema()
    return DataReader(file_io, TableLayout(root), schema, store.read_schema, PartitionCodec(schema), threads=1)


def test_data_reader_returns_plain_columns_of_the_table_types(tmp_path: Path) -> None:
    data = sample().select(["id", "kind", "tag", "unique"])
    table = Table.create(str(tmp_path / "t"), data.schema)
    table.append(data)
    files = table.files()
    assert len(files) == 1
    assert dictionary_coded_columns(pq.read_metadata(files[0].path)) == ["kind", "tag"]  # the path is exercised
    reader = reader_of(table)
    refs = table.plan_scan_refs(table.select_snapshot(None, None, None), None)
    read = reader.read_entry(refs[0])
    assert read.schema == table.arrow_schema
    assert read.equals(data.cast(table.arrow_schema))


@pytest.mark.slow
def test_a_renamed_dictionary_column_of_an_older_file_reads_under_its_new_name(tmp_path: Path) -> None:
    data = sample().select(["id", "kind"])
    table = Table.create(str(tmp_path / "t"), data.schema)
    table.append(data)

    def rename(latest: Any) -> Any:
        fields = tuple(dataclasses.replace(f, name="action") if f.name == "kind" else f for f in latest.fields)
        return dataclasses.replace(latest, fields=fields)

    evolve_schema(table.context.store, rename)
    table = Table.open(table.location)
    reader = reader_of(table)
    read = reader.read_entry(table.plan_scan_refs(table.select_snapshot(None, None, None), None)[0])
    assert read.column_names == ["id", "action"]
    assert read.schema.field("action").type == pa.string()
    assert read.column("action").equals(data.column("kind").cast(pa.string()))
