"""tableformat.live_set: the ADD/DELETE merge in manifest order, partition predicates and manifest pruning.

Manifests are real files written through a real table's store (tests/support/manifests.py); pruning is checked
against the entries the pruned manifests actually hold.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.manifests import Manifests, kinds
from support.tables import ID_PART_SCHEMA, id_part_rows

from tableformat.live_set import (
    PartitionPredicate,
    PathEntry,
    live_entries,
    merge_entries,
    merge_records,
    read_entries,
)
from tableformat.model.manifest import EMPTY_STATS, FileKind
from tableformat.table import Table

ADD, DELETE = FileKind.ADD, FileKind.DELETE
TWO_KEYS = pa.schema([pa.field("id", pa.int64()), pa.field("a", pa.int32()), pa.field("s", pa.string())])


@pytest.fixture
def two_keys(tmp_path: Path) -> Manifests:
    """Manifests of a table partitioned by (a INT, s STRING)."""
    return Manifests(Table.create(str(tmp_path / "t"), TWO_KEYS, partition_keys=["a", "s"]))


@pytest.fixture
def by_part(tmp_path: Path) -> Manifests:
    """Manifests of a table partitioned by part INT."""
    return Manifests(Table.create(str(tmp_path / "p"), ID_PART_SCHEMA, partition_keys=["part"]))


# --- merge_entries ----------------------------------------------------------------------------------------------
def names(live: dict[Any, Any]) -> list[str]:
    return [e.file.file_name for e in live.values()]


def test_entries_apply_in_order_across_and_within_lists(by_part: Manifests) -> None:
    e = by_part.entry
    base = [[e("a", [0]), e("b", [0]), e("c", [1])], [e("a", [0], kind=DELETE)]]
    delta = [[e("d", [1]), e("c", [1], kind=DELETE), e("c", [1])]]  # c deleted and added again: live
    assert names(merge_entries([*base, *delta])) == ["b", "d", "c"]
    # the same entries in another order mean another state
    assert names(merge_entries([[e("a", [0], kind=DELETE)], [e("a", [0])]])) == ["a"]
    assert names(merge_entries([[e("a", [0])], [e("a", [0], kind=DELETE)]])) == []


def test_the_last_add_of_a_file_wins_and_keeps_its_place(by_part: Manifests) -> None:
    e = by_part.entry
    live = merge_entries([[e("a", [0], rows=1), e("b", [0])], [e("a", [0], rows=7)]])
    assert names(live) == ["a", "b"]
    assert [x.file.row_count for x in live.values()] == [7, 1]


def test_a_delete_without_its_add_is_ignored(by_part: Manifests) -> None:
    """Its ADD lives in manifests outside the input (e.g. pruned by partition)."""
    e = by_part.entry
    assert names(merge_entries([[e("x", [0], kind=DELETE)], [e("y", [0])]])) == ["y"]
    assert merge_entries([]) == {} and merge_entries([[], []]) == {}


def test_identity_is_partition_bucket_level_and_name(by_part: Manifests) -> None:
    e = by_part.entry
    same_name = [e("f", [0]), e("f", [1]), e("f", [0], bucket=1)]
    live = merge_entries([same_name, [e("f", [1], kind=DELETE)]])
    assert [(by_part.codec.values(x.partition)["part"], x.bucket) for x in live.values()] == [(0, 0), (0, 1)]
    assert set(live) == {same_name[0].identifier(), same_name[2].identifier()}


def test_path_entries_merge_by_path() -> None:
    live = merge_entries([[PathEntry(ADD, "p/a"), PathEntry(ADD, "p/b")], [PathEntry(DELETE, "p/a")]])
    assert live == {"p/b": PathEntry(ADD, "p/b")}


# --- PartitionPredicate.matches ---------------------------------------------------------------------------------
def test_matches_is_an_or_of_ands() -> None:
    predicate = PartitionPredicate(({"a": 1, "s": "x"}, {"a": 2}, {"s": None}))
    assert predicate.matches({"a": 1, "s": "x"})
    assert not predicate.matches({"a": 1, "s": "y"})
    assert predicate.matches({"a": 2, "s": "anything"})
    assert predicate.matches({"a": 9, "s": None})
    assert not predicate.matches({"a": 9, "s": ""})  # '' is not null
    assert not PartitionPredicate(()).matches({"a": 1})
    assert PartitionPredicate(({},)).matches({"a": 1})  # an empty spec matches everything


# --- PartitionPredicate.may_match -------------------------------------------------------------------------------
def test_may_match_prunes_by_min_max_per_key(two_keys: Manifests) -> None:
    e = two_keys.entry
    meta = two_keys.write([e("f1", [3, "b"]), e("f2", [5, "d"]), e("f3", [4, "c"])])  # a in 3..5, s in b..d
    codec = two_keys.codec

    def may(*specs: dict[str, Any]) -> bool:
        return PartitionPredicate(specs).may_match(meta, codec)

    assert may({"a": 3, "s": "b"}) and may({"a": 5}) and may({"s": "c"})
    assert may({"a": 3, "s": "d"})  # inside the box although no entry has it: statistics cannot tell
    assert not may({"a": 2}) and not may({"a": 6}) and not may({"s": "a"}) and not may({"s": "e"})
    assert not may({"a": 4, "s": "z"})  # one key outside is enough
    assert may({"a": 9}, {"s": "bb"})  # OR: the second spec may match
    assert not may({"a": None}) and not may({"s": None})  # no nulls in the manifest
    assert may({"a": "4"})  # a value that cannot be compared with the statistics: kept


def test_may_match_with_null_partitions(two_keys: Manifests) -> None:
    e = two_keys.entry
    codec = two_keys.codec
    some_null = two_keys.write([e("f1", [1, None]), e("f2", [2, "x"])])
    all_null = two_keys.write([e("g1", [1, None]), e("g2", [1, None])])
    assert PartitionPredicate(({"s": None},)).may_match(some_null, codec)
    assert PartitionPredicate(({"s": "x"},)).may_match(some_null, codec)
    assert PartitionPredicate(({"s": None},)).may_match(all_null, codec)
    assert not PartitionPredicate(({"s": "x"},)).may_match(all_null, codec)  # no value at all, only nulls
    assert PartitionPredicate(({"a": 1},)).may_match(all_null, codec)


def test_may_match_keeps_what_it_cannot_judge(two_keys: Manifests, tmp_path: Path) -> None:
    e = two_keys.entry
    meta = two_keys.write([e("f1", [3, "b"])])
    no_stats = dataclasses.replace(meta, partition_stats=EMPTY_STATS)  # e.g. a manifest list without statistics
    assert PartitionPredicate(({"a": 99},)).may_match(no_stats, two_keys.codec)
    garbage = dataclasses.replace(meta.partition_stats, min_values=b"\x01" * 20)
    broken = dataclasses.replace(meta, partition_stats=garbage)
    assert PartitionPredicate(({"a": 99},)).may_match(broken, two_keys.codec)  # undecodable: kept
    unpartitioned = Manifests(Table.create(str(tmp_path / "u"), TWO_KEYS))
    plain = unpartitioned.write([unpartitioned.entry("f")])
    assert PartitionPredicate(({"a": 1},)).may_match(plain, unpartitioned.codec)


PARTITIONS = st.tuples(st.integers(-3, 3) | st.none(), st.sampled_from(["", "a", "b", "é", "zz"]) | st.none())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(held=st.lists(PARTITIONS, min_size=1, max_size=6), specs=st.lists(PARTITIONS, min_size=1, max_size=3))
def test_may_match_never_prunes_a_manifest_holding_a_match(
    two_keys: Manifests, held: list[tuple[Any, Any]], specs: list[tuple[Any, Any]]
) -> None:
    """Pruning is only ever an optimisation: a manifest with an entry the predicate matches is always read."""
    meta = two_keys.write([two_keys.entry(f"f{i}", list(p)) for i, p in enumerate(held)])
    for spec_parts in (specs, [(a, None) for a, _ in specs]):
        full = tuple({"a": a, "s": s} for a, s in spec_parts)
        for predicate in (PartitionPredicate(full), PartitionPredicate(tuple({"a": x["a"]} for x in full))):
            if any(predicate.matches({"a": a, "s": s}) for a, s in held):
                assert predicate.may_match(meta, two_keys.codec), (held, predicate.specs)


# --- read_entries and live_entries ------------------------------------------------------------------------------
def test_read_entries_keeps_manifest_order_with_threads(by_part: Manifests) -> None:
    metas = [by_part.write([by_part.entry(f"m{i}-{j}", [i]) for j in range(i + 1)]) for i in range(7)]
    sequential = read_entries(by_part.store, metas, threads=1)
    assert [kinds(x) for x in read_entries(by_part.store, metas, threads=4)] == [kinds(x) for x in sequential]
    assert [len(x) for x in sequential] == [1, 2, 3, 4, 5, 6, 7]
    assert read_entries(by_part.store, [], threads=4) == []


def test_live_entries_of_a_real_table_with_and_without_a_predicate(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    table.append(id_part_rows(0, 8))  # parts 0..3
    table.append(id_part_rows(8, 4, parts=(1, 2)))
    table.overwrite(id_part_rows(100, 2, parts=(1,)), {"part": 1})
    table.drop_partitions([{"part": 3}])
    ctx = table.context
    store, codec = ctx.store, ctx.partition_codec()
    latest = store.latest_snapshot()
    assert latest is not None
    everything = live_entries(store, latest, codec, threads=1)
    by_partition: dict[int, int] = {}
    for entry in everything:
        part = codec.values(entry.partition)["part"]
        by_partition[part] = by_partition.get(part, 0) + entry.file.row_count
    assert by_partition == {0: 2, 1: 2, 2: 4}  # part 1 overwritten, part 3 dropped
    assert sorted(e.file.file_name for e in everything) == sorted(Path(f.path).name for f in table.files())
    for specs in (({"part": 1},), ({"part": 3},), ({"part": 2},), ({"part": 1}, {"part": 2}), ({"part": 9},)):
        chosen = live_entries(store, latest, codec, PartitionPredicate(specs), threads=3)
        expected = [e for e in everything if codec.values(e.partition) in specs]
        assert sorted(e.identifier() for e in chosen) == sorted(e.identifier() for e in expected), specs
    dates = Table.create(str(tmp_path / "d"), pa.schema([("id", pa.int64()), ("d", pa.date32())]), partition_keys=["d"])
    dates.append(pa.table({"id": [1, 2], "d": [dt.date(2024, 1, 1), dt.date(1969, 12, 31)]}))
    d_ctx = dates.context
    d_latest = d_ctx.store.latest_snapshot()
    assert d_latest is not None
    found = live_entries(
        d_ctx.store, d_latest, d_ctx.partition_codec(), PartitionPredicate(({"d": dt.date(1969, 12, 31)},))
    )
    assert [e.file.row_count for e in found] == [1]


# --- merge_records ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "lists",
    [
        [[("a", 0), ("b", 0)], [("c", 1)]],  # only additions: every record, in order
        [[("a", 0), ("b", 0)], [("a", 0, DELETE), ("c", 1)]],  # a DELETE: merged
        [[("a", 0), ("b", 1)], [("a", 1)]],  # the same name in two partitions: identities decide
        [[("a", 0)], [("a", 0)]],  # the same file twice: once
        [],
    ],
)
def test_merge_records_is_merge_entries_on_records(by_part: Manifests, lists: list[list[tuple[Any, ...]]]) -> None:
    def entry(spec: tuple[Any, ...]) -> Any:
        name, part, *kind = spec
        return by_part.entry(name, [part], kind=kind[0] if kind else ADD)

    metas = [by_part.write(entry(spec) for spec in specs) for specs in lists]
    records = [by_part.store.read_manifest_records(m.file_name) for m in metas]
    merged = merge_records(records)
    assert merged == list(merge_entries(records).values())
    assert [(r.file_name, r.partition) for r in merged] == [
        (e.file.file_name, e.partition) for e in merge_entries(by_part.entries_of([m]) for m in metas).values()
    ]
