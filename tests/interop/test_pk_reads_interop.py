"""Primary-key tables written by pypaimon 2.1.0, read by tablefmt: exactly the rows pypaimon reads (sorted), for
the latest snapshot and every earlier one, with filters and projections.

pypaimon writes every upsert round as level-0 files (it does not compact), so each read merges overlapping files
per bucket; deletes come from its ``rowkind.field`` column (``+I``, ``-U``, ``+U``, ``-D``). Changelog files
(``changelog-producer=input``) lie next to the data files and must never be read.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.tables import rows_of

from interop.helpers import Paimon
from tableformat.table import Table

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
        pa.field("n", pa.int64()),
        pa.field("rk", pa.string()),
    ]
)


def create(pp: Paimon, name: str, partitioned: bool, options: dict[str, str]) -> None:
    from pypaimon import Schema

    keys = ["id", "dt"] if partitioned else ["id"]
    partitions = ["dt"] if partitioned else []
    pp.catalog.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(SCHEMA, partition_keys=partitions, primary_keys=keys, options=options),
        False,
    )


def upserts(pp: Paimon, name: str, rounds: int, seed: int, *, deletes: bool) -> None:
    """``rounds`` commits of 25 random keys of 60 each; with ``deletes`` about a fifth of each round are -D or
    -U records (from the third round on)."""
    rng = random.Random(seed)
    for r in range(rounds):
        ids = rng.sample(range(60), 25)
        kinds = [rng.choice(["-D", "-U", "+U"]) if deletes and r >= 2 and rng.random() < 0.2 else "+I" for _ in ids]
        pp.append(
            name,
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "dt": ["d1" if i % 2 else "d2" for i in ids],
                    "v": [f"r{r}-{i}" for i in ids],
                    "n": [r * 100 + i for i in ids],
                    "rk": kinds,
                },
                schema=SCHEMA,
            ),
        )


def pypaimon_read(
    pp: Paimon,
    name: str,
    snapshot_id: int | None = None,
    predicate: Callable[[Any], Any] | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    table = pp.table(name)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    builder = table.new_read_builder()
    if predicate is not None:
        builder = builder.with_filter(predicate(builder.new_predicate_builder()))
    if columns is not None:
        builder = builder.with_projection(list(columns))
    return builder.new_read().to_arrow(builder.new_scan().plan().splits())


def assert_same_reads(pp: Paimon, name: str) -> None:
    """Latest and every snapshot, whole rows; then filters (a value column, a key column) and projections."""
    table = Table.open(pp.path(name))
    snapshots = [s.id for s in table.snapshots()]
    assert snapshots, "pypaimon wrote no snapshot"
    for snapshot_id in [None, *snapshots]:
        expected = rows_of(pypaimon_read(pp, name, snapshot_id))
        assert rows_of(table.to_arrow(snapshot_id=snapshot_id)) == expected, f"snapshot {snapshot_id}"
    cases: list[tuple[Callable[[Any], Any], Any]] = [
        (lambda b: b.greater_than("n", 450), pc.field("n") > 450),
        (lambda b: b.less_than("id", 20), pc.field("id") < 20),
        (lambda b: b.equal("dt", "d1"), pc.field("dt") == "d1"),
    ]
    for predicate, expression in cases:
        expected = rows_of(pypaimon_read(pp, name, predicate=predicate))
        assert rows_of(table.to_arrow(filter=expression)) == expected
    for columns in (["v"], ["n", "id"]):
        expected = rows_of(pypaimon_read(pp, name, columns=columns))
        assert rows_of(table.to_arrow(columns=columns)) == expected
    assert rows_of(table.to_batches().read_all()) == rows_of(pypaimon_read(pp, name))


@pytest.mark.parametrize(("partitioned", "buckets"), [(True, 3), (False, 1), (False, 3), (True, 1)])
def test_upserts_read_as_pypaimon_reads_them(pp: Paimon, partitioned: bool, buckets: int) -> None:
    create(pp, "t", partitioned, {"bucket": str(buckets), "changelog-producer": "input"})
    upserts(pp, "t", rounds=8, seed=buckets, deletes=False)
    before = Table.open(pp.path("t"))
    assert before.to_arrow().num_rows == pypaimon_read(pp, "t").num_rows < before.snapshot(8).total_record_count
    assert any("changelog-" in p.name for p in Path(pp.path("t")).rglob("*.parquet"))
    assert_same_reads(pp, "t")


@pytest.mark.parametrize(("partitioned", "buckets"), [(False, 1), (True, 3)])
def test_deletes_and_update_befores_read_as_pypaimon_reads_them(pp: Paimon, partitioned: bool, buckets: int) -> None:
    create(pp, "t", partitioned, {"bucket": str(buckets), "rowkind.field": "rk"})
    upserts(pp, "t", rounds=8, seed=10 + buckets, deletes=True)
    kinds = pc.unique(pa.concat_arrays([c.combine_chunks() for c in _stored_kinds(pp.path("t"))])).to_pylist()
    assert {1, 3} <= set(kinds), f"pypaimon wrote no -U/-D records: {kinds}"
    assert_same_reads(pp, "t")


def test_ignore_delete_reads_as_pypaimon_reads_it(pp: Paimon) -> None:
    create(pp, "t", False, {"bucket": "2", "rowkind.field": "rk", "ignore-delete": "true"})
    upserts(pp, "t", rounds=6, seed=5, deletes=True)
    assert_same_reads(pp, "t")


def test_first_row_table_reads_as_pypaimon_reads_it(pp: Paimon) -> None:
    """pypaimon writes level-0 files only, and a batch read of a first-row table skips level 0 (Paimon's
    batchScanSkipLevel0: only compacted files are visible): both read no row."""
    create(pp, "t", True, {"bucket": "2", "merge-engine": "first-row"})
    upserts(pp, "t", rounds=3, seed=7, deletes=False)
    assert pypaimon_read(pp, "t").num_rows == 0
    assert_same_reads(pp, "t")


def test_newest_version_not_matching_hides_an_older_match(pp: Paimon) -> None:
    create(pp, "t", False, {"bucket": "1"})
    row = {"id": 1, "dt": "d1", "rk": "+I"}
    pp.append("t", pa.Table.from_pylist([{**row, "v": "old", "n": 1}], schema=SCHEMA))
    pp.append("t", pa.Table.from_pylist([{**row, "v": "new", "n": 2}], schema=SCHEMA))
    table = Table.open(pp.path("t"))
    assert table.to_arrow(filter=pc.field("v") == "old").num_rows == 0
    assert pypaimon_read(pp, "t", predicate=lambda b: b.equal("v", "old")).num_rows == 0
    assert rows_of(table.to_arrow(filter=pc.field("v") == "new", columns=["id", "n"])) == [(1, 2)]


def _stored_kinds(root: str) -> list[Any]:
    import pyarrow.parquet as pq

    return [pq.ParquetFile(p).read(columns=["_VALUE_KIND"]).column(0) for p in Path(root).rglob("data-*.parquet")]


# --- compacted tables (written in Paimon's format by tests/support/pk_tables.py), read by both ------------------
PLAIN = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def compacted(pp: Paimon, options: dict[str, str]) -> Any:
    """One bucket: a level-2 file (keys 0-9), a level-1 file (keys 5-14, key 7 deleted, key 8 an UPDATE_BEFORE) and
    a level-0 file (keys 12-16), as a compaction and later writes leave them."""
    from support.pk_tables import DELETE, INSERT, UPDATE_BEFORE, PkTable

    t = PkTable(Path(pp.path("t")), PLAIN, ["id"], options=options)
    level1_kinds = [DELETE if i == 7 else UPDATE_BEFORE if i == 8 else INSERT for i in range(5, 15)]
    files = [
        t.file([{"id": i, "v": f"l2-{i}"} for i in range(10)], list(range(10)), level=2),
        t.file([{"id": i, "v": f"l1-{i}"} for i in range(5, 15)], list(range(10, 20)), level1_kinds, level=1),
        t.file([{"id": i, "v": f"l0-{i}"} for i in range(12, 17)], list(range(20, 25))),
    ]
    t.commit(files)
    return t, files


def assert_same_rows(pp: Paimon) -> list[tuple[Any, ...]]:
    ours = rows_of(Table.open(pp.path("t")).to_arrow())
    assert ours == rows_of(pypaimon_read(pp, "t"))
    return ours


def test_compacted_levels_with_deletes_read_as_pypaimon_reads_them(pp: Paimon, pypaimon_version: str) -> None:
    compacted(pp, {})
    rows = assert_same_rows(pp)
    assert [r[0] for r in rows] == [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15, 16]


def test_first_row_compacted_files_read_as_pypaimon_reads_them(pp: Paimon, pypaimon_version: str) -> None:
    compacted(pp, {"merge-engine": "first-row", "ignore-delete": "true"})
    rows = assert_same_rows(pp)
    assert (5, "l2-5") in rows and not any(r[0] == 16 for r in rows)  # the oldest version; level 0 not visible


def test_deletion_vectors_read_as_pypaimon_reads_them(pp: Paimon, pypaimon_version: str) -> None:
    from support.paimon_index import PaimonIndex

    t, files = compacted(pp, {"deletion-vectors.enabled": "true"})
    PaimonIndex(t.table).delete_rows({files[0].meta.file_name: [0, 5, 9], files[1].meta.file_name: [0, 4]})
    rows = assert_same_rows(pp)
    assert (0, "l2-0") not in rows and (1, "l2-1") in rows
