"""Data files written by pypaimon 2.1.0 (pyarrow's writer: dictionaries on every string column, falling back to
plain pages past 1 MiB) read through tablefmt's DataReader (dictionary-coded columns read as dictionaries) exactly as
pypaimon reads them, with plain types."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from support.tables import rows_of

from interop.helpers import Paimon
from tableformat import Table
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.io.factory import open_location
from tableformat.layout import TableLayout
from tableformat.scan.reader import DataReader, dictionary_coded_columns
from tableformat.store import MetadataStore

ROWS = 120_000


def test_pypaimon_files_read_with_dictionaries_exactly(pp: Paimon) -> None:
    schema = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("blob", pa.binary()), ("name", pa.string())])
    pp.create_table("d", schema)
    data = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "kind": [None if i % 7 == 0 else ("view", "click", "buy")[i % 3] for i in range(ROWS)],
            "blob": pa.array([bytes([i % 3]) for i in range(ROWS)], pa.binary()),
            "name": [f"user-{i:010d}-{(i * 7919) % 100_003:06d}-padding-to-overflow" for i in range(ROWS)],
        },
        schema=schema,
    )
    pp.append("d", data.slice(0, ROWS // 2))
    pp.append("d", data.slice(ROWS // 2))

    table = Table.open(pp.path("d"))
    file_io, root = open_location(table.location)
    store = MetadataStore(file_io, TableLayout(root))
    reader = DataReader(
        file_io, TableLayout(root), table.schema, store.read_schema, PartitionCodec(table.schema), threads=1
    )
    refs = table.plan_scan_refs(table.select_snapshot(None, None, None), None)
    assert len(refs) == 2
    chosen = {tuple(dictionary_coded_columns(pq.read_metadata(reader.path_of(ref)))) for ref in refs}
    assert chosen == {("kind", "blob")}  # "name" fell back to plain pages (3.2 MB of distinct values per file)
    read = pa.concat_tables([reader.read_entry(ref) for ref in refs])
    assert read.schema == table.arrow_schema
    assert [f.type for f in read.schema] == [pa.int64(), pa.string(), pa.binary(), pa.string()]
    assert rows_of(read) == rows_of(pp.read("d")) == rows_of(data)
