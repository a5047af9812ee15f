"""Tables written by pypaimon 2.1.0 read through tablefmt's object-store path (no size request: the size each
manifest entry records decides one whole read or the footer then the column chunks): pypaimon records every data
file's exact size, and the rows are exactly those pypaimon reads, through a schema change and a file above
WHOLE_GET_BYTES. The local FileIO stands in for the store (marked as an object store), its calls recorded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

import pyarrow as pa
from support.faults import faulty_context
from support.tables import rows_of

from interop.helpers import Paimon
from tableformat import Table
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.scan.reader import WHOLE_GET_BYTES

SCHEMA = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("blob", pa.binary()), ("part", pa.int32())])


class AsObjectStore(ForwardingFileIO):
    """The inner FileIO, marked as an object store; data-file calls recorded as (operation, file name)."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.is_object_store = True
        self.calls: list[tuple[str, str]] = []

    def _note(self, operation: str, path: str) -> None:
        if path.endswith(".parquet"):
            self.calls.append((operation, path.rsplit("/", 1)[-1]))

    def read_bytes(self, path: str) -> bytes:
        self._note("read_bytes", path)
        return super().read_bytes(path)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        self._note("read_range", path)
        return super().read_range(path, start, end)

    def open_input(self, path: str) -> IO[bytes]:
        self._note("open_input", path)
        return super().open_input(path)

    def file_size(self, path: str) -> int:
        self._note("file_size", path)
        return super().file_size(path)


def rows(start: int, count: int, blob_bytes: int, part: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + count)),
            "kind": [("view", "click", "buy")[i % 3] for i in range(count)],
            "blob": [os.urandom(blob_bytes) for _ in range(count)],
            "part": [part] * count,
        },
        schema=SCHEMA,
    )


def test_pypaimon_tables_read_exactly_through_the_object_store_path(pp: Paimon) -> None:
    pp.create_table("o", SCHEMA, ["part"])
    pp.append("o", rows(0, 500, 16, 0))
    pp.append("o", rows(10_000, 80, 64 << 10, 1))  # 5 MiB of incompressible bytes: above WHOLE_GET_BYTES
    pp.add_column("o", "score", "DOUBLE")
    newer = rows(20_000, 3, 4, 0).append_column("score", pa.array([0.5, None, 2.0]))
    pp.append("o", newer)

    table = Table.open(pp.path("o"))
    refs = table.plan_scan_refs(table.latest_snapshot(), None)
    sizes = {ref.file_name: ref.file_size for ref in refs}
    on_disk = {p.name: p.stat().st_size for p in Path(pp.path("o")).rglob("data-*.parquet")}
    assert sizes == on_disk  # pypaimon records each file's exact size
    large = [name for name, size in sizes.items() if size > WHOLE_GET_BYTES]
    assert len(sizes) == 3 and len(large) == 1

    store = AsObjectStore(table.context.io)
    remote = Table(faulty_context(table.context, store))
    read = remote.to_arrow()
    assert read.schema == table.to_arrow().schema
    assert rows_of(read) == rows_of(pp.read("o"))
    assert [op for op, _ in store.calls if op in ("open_input", "file_size")] == []
    assert sorted(op for op, name in store.calls if name in large) == ["read_range", "read_range"]
    assert sorted(op for op, name in store.calls if name not in large) == ["read_bytes", "read_bytes"]
    projected = remote.to_arrow(columns=["score", "kind"])
    assert rows_of(projected) == rows_of(pp.read("o").select(["score", "kind"]))
