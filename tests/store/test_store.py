"""MetadataStore on real files: snapshot ids and hints, create-if-absent writes, tags, branches and consumers.

Every test works on a local directory through LocalFileIO; the few that need a table build it with the Table API.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from support.tables import (
    ID_PART_SCHEMA,
    branch_from_snapshot,
    branch_from_tag,
    files_under,
    id_part_rows,
    rows_of,
)

from tableformat.codec import json_codec
from tableformat.errors import CorruptMetadataError, SnapshotNotFoundError, TableNotFoundError, UnsafePathError
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.model.snapshot import CommitKind, Consumer, Snapshot, Tag
from tableformat.store import MetadataStore
from tableformat.table import Table


class ListingCounter(ForwardingFileIO):
    """A LocalFileIO that counts directory listings (to see when a hint spares one)."""

    def __init__(self) -> None:
        super().__init__(LocalFileIO())
        self.listings = 0

    def list_names(self, path: str) -> list[str]:
        self.listings += 1
        return super().list_names(path)

    def list_dir(self, path: str):  # type: ignore[no-untyped-def]
        self.listings += 1
        return super().list_dir(path)


def store_at(root: Path, file_io: LocalFileIO | ForwardingFileIO | None = None) -> MetadataStore:
    return MetadataStore(file_io or LocalFileIO(), TableLayout(str(root)))


def snapshot(snapshot_id: int, *, base: str = "manifest-list-base", user: str = "u") -> Snapshot:
    """A snapshot document (its manifest lists are never read by these tests)."""
    return Snapshot(
        id=snapshot_id,
        schema_id=0,
        base_manifest_list=f"{base}-{snapshot_id}",
        delta_manifest_list=f"manifest-list-delta-{snapshot_id}",
        commit_user=user,
        commit_identifier=snapshot_id,
        commit_kind=CommitKind.APPEND,
        time_millis=1_700_000_000_000 + snapshot_id,
    )


def with_snapshots(root: Path, ids: list[int]) -> MetadataStore:
    store = store_at(root)
    for i in ids:
        assert store.write_snapshot_if_absent(snapshot(i))
    return store


def put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- snapshot ids ---------------------------------------------------------------------------------------------------
def test_snapshot_ids_are_the_numeric_snapshot_files_of_the_listing(tmp_path: Path) -> None:
    store = with_snapshots(tmp_path, [10, 2, 9, 1])
    noise = [
        "LATEST",
        "EARLIEST",
        "snapshot-",
        "snapshot-x",
        "snapshot-3.tmp",
        "snapshot--4",
        ".snapshot-11.0e1f0000-0000-4000-8000-000000000001.tmp",
        ".expire-journal-0e1f0000",
        "SNAPSHOT-5",
    ]
    for name in noise:
        put(tmp_path / "snapshot" / name, b"3")
    (tmp_path / "snapshot" / "snapshot-12").mkdir()  # a directory is not a snapshot
    assert store.snapshot_ids() == [1, 2, 9, 10]  # numeric order, not name order
    assert [store.snapshot_exists(i) for i in (1, 3, 10, 11)] == [True, False, True, False]


def test_a_table_without_snapshots(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    assert store.snapshot_ids() == []  # no snapshot/ directory at all
    assert (store.latest_snapshot_id(), store.earliest_snapshot_id(), store.latest_snapshot()) == (None, None, None)
    (tmp_path / "snapshot").mkdir()
    put(tmp_path / "snapshot" / "LATEST", b"3")
    put(tmp_path / "snapshot" / "EARLIEST", b"1")
    assert (store.latest_snapshot_id(), store.earliest_snapshot_id()) == (None, None)
    with pytest.raises(TableNotFoundError, match="no schema/schema-0"):
        store.latest_schema()


# --- hints ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("latest", "earliest", "expected"),
    [
        (None, None, (5, 1)),  # no hints: the listing
        (b"5", b"1", (5, 1)),  # right hints
        (b"5\n", b" 1 ", (5, 1)),  # whitespace around the number is fine
        (b"3", b"3", (5, 1)),  # stale: snapshot 4 exists after LATEST, snapshot 2 before EARLIEST
        (b"9", b"0", (5, 1)),  # point at missing snapshots / not a snapshot id
        (b"-5", b"-1", (5, 1)),
        (b"garbage", b"", (5, 1)),
        (b"\xff\xfe", b"1e3", (5, 1)),
        (b"9" * 40, b"2.0", (5, 1)),
    ],
)
def test_hints_are_only_hints(
    tmp_path: Path, latest: bytes | None, earliest: bytes | None, expected: tuple[int, int]
) -> None:
    store = with_snapshots(tmp_path, [1, 2, 3, 4, 5])
    if latest is not None:
        put(tmp_path / "snapshot" / "LATEST", latest)
    if earliest is not None:
        put(tmp_path / "snapshot" / "EARLIEST", earliest)
    assert (store.latest_snapshot_id(), store.earliest_snapshot_id()) == expected
    assert store.latest_snapshot() == snapshot(5)


def test_a_right_hint_spares_the_listing_a_wrong_one_does_not(tmp_path: Path) -> None:
    with_snapshots(tmp_path, [3, 4, 5])
    counting = ListingCounter()
    store = store_at(tmp_path, counting)
    store.write_hint("LATEST", 5)
    store.write_hint("EARLIEST", 3)
    assert (store.latest_snapshot_id(), store.earliest_snapshot_id(), counting.listings) == (5, 3, 0)
    store.write_hint("LATEST", 4)  # stale: snapshot 5 exists
    store.write_hint("EARLIEST", 4)  # stale: snapshot 3 exists
    assert (store.latest_snapshot_id(), store.earliest_snapshot_id(), counting.listings) == (5, 3, 2)


def test_write_hint_is_best_effort(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = with_snapshots(tmp_path, [1, 2])
    (tmp_path / "snapshot" / "LATEST").mkdir()  # the hint's path is taken by a directory: the write fails
    with caplog.at_level(logging.WARNING, logger="tableformat.store"):
        store.write_hint("LATEST", 2)  # logged, not raised
    assert "could not write LATEST hint 2" in caplog.text
    assert store.latest_snapshot_id() == 2
    store.write_hint("EARLIEST", 1)
    assert (tmp_path / "snapshot" / "EARLIEST").read_bytes() == b"1"


def test_a_commit_after_a_stale_latest_hint_before_a_gap_is_in_the_latest_snapshot(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for i in range(6):
        table.append(id_part_rows(i, 1))
    root = tmp_path / "t"
    (root / "snapshot" / "snapshot-4").unlink()  # a gap, as test_bad_input's odd histories have them
    (root / "snapshot" / "LATEST").write_bytes(b"3")  # a hint write of snapshots 4..6 was lost (best effort)
    committed = Table.open(str(root)).append(id_part_rows(100, 1))
    assert committed is not None
    latest = Table.open(str(root))
    assert 100 in latest.to_arrow().column("id").to_pylist(), (
        f"snapshot {committed.id} was reported committed, the latest snapshot is {latest.latest_snapshot().id}"  # type: ignore[union-attr]
    )


# --- reading and writing snapshots ----------------------------------------------------------------------------------
def test_snapshot_round_trip_and_refusals(tmp_path: Path) -> None:
    store = with_snapshots(tmp_path, [1, 2])
    assert store.read_snapshot(2) == snapshot(2)
    with pytest.raises(SnapshotNotFoundError, match="snapshot 3 does not exist"):
        store.read_snapshot(3)
    assert store.try_read_snapshot(3) is None
    # snapshot-2's file holding snapshot 1: corrupt, named by its file
    (tmp_path / "snapshot" / "snapshot-2").write_bytes(store.snapshot_bytes(snapshot(1)))
    with pytest.raises(CorruptMetadataError, match=r"snapshot-2.*holds snapshot id 1"):
        store.read_snapshot(2)
    (tmp_path / "snapshot" / "snapshot-2").write_bytes(b'{"version": 3, "id": 2')
    with pytest.raises(CorruptMetadataError, match="snapshot-2"):
        store.try_read_snapshot(2)  # only a missing file is None; a corrupt one raises


def test_write_if_absent_keeps_the_first_write(tmp_path: Path) -> None:
    root = tmp_path / "t"
    store = store_at(root)
    first, second = snapshot(7, user="first"), snapshot(7, user="second")
    assert store.write_snapshot_if_absent(first) is True
    assert store.write_snapshot_if_absent(second) is False
    assert store.write_snapshot_if_absent(first) is False  # even the same bytes again: created once
    assert (root / "snapshot" / "snapshot-7").read_bytes() == store.snapshot_bytes(first)
    assert store.read_snapshot(7).commit_user == "first"

    schema = Table.create(str(tmp_path / "other"), ID_PART_SCHEMA, partition_keys=["part"]).context.schema
    assert store.write_schema_if_absent(schema) is True
    other = dataclasses.replace(schema, options={"write-only": "true"})
    assert store.write_schema_if_absent(other) is False
    assert store.read_schema(0) == schema and store.latest_schema() == schema

    tag = Tag(name="v1", snapshot=first)
    assert store.write_tag_if_absent(tag) is True
    assert store.write_tag_if_absent(Tag(name="v1", snapshot=snapshot(8))) is False
    assert store.read_tag("v1").snapshot == first
    # no temp file of a create is ever left behind
    assert files_under(root) == {"snapshot/snapshot-7", "schema/schema-0", "tag/tag-v1"}


# --- tags -----------------------------------------------------------------------------------------------------------
def test_tags_are_listed_by_name_and_read_whole(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    for name, sid in (("b", 2), ("a", 1), ("v1.0", 3), ("x-y_z", 1)):
        assert store.write_tag_if_absent(Tag(name=name, snapshot=snapshot(sid), time_retained_seconds=60.0))
    for name in ("tag-", "notes.txt", ".tag-c.0e1f0000.tmp"):
        put(tmp_path / "tag" / name, b"{}")
    (tmp_path / "tag" / "tag-dir").mkdir()
    assert store.tag_names() == ["a", "b", "v1.0", "x-y_z"]
    assert [(t.name, t.snapshot.id, t.time_retained_seconds) for t in store.tags()] == [
        ("a", 1, 60.0),
        ("b", 2, 60.0),
        ("v1.0", 3, 60.0),
        ("x-y_z", 1, 60.0),
    ]
    with pytest.raises(SnapshotNotFoundError, match="tag 'zz' does not exist"):
        store.read_tag("zz")
    assert store.delete_tag("b") is True
    assert store.delete_tag("b") is False
    assert store.tag_names() == ["a", "v1.0", "x-y_z"]


def test_an_unreadable_tag_is_never_skipped(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.write_tag_if_absent(Tag(name="good", snapshot=snapshot(1)))
    put(tmp_path / "tag" / "tag-bad", b'{"version": 3, "id": 2')
    with pytest.raises(CorruptMetadataError, match="tag-bad"):
        store.tags()


@pytest.mark.parametrize("name", ["../x", "a/b", "", "123", "-a"])
def test_tag_names_that_are_no_plain_file_names_are_refused(tmp_path: Path, name: str) -> None:
    store = store_at(tmp_path)
    with pytest.raises(UnsafePathError):
        store.write_tag_if_absent(Tag(name=name, snapshot=snapshot(1)))
    with pytest.raises(UnsafePathError):
        store.read_tag(name)
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize("kind", ["tag", "consumer"])
def test_every_tag_and_consumer_the_store_writes_is_listed(tmp_path: Path, kind: str) -> None:
    store = store_at(tmp_path)
    if kind == "tag":
        assert store.write_tag_if_absent(Tag(name="keep.tmp", snapshot=snapshot(1)))
        assert store.tag_names() == ["keep.tmp"]
    else:
        store.write_consumer(Consumer(consumer_id="job.tmp", next_snapshot=1))
        assert [c.consumer_id for c in store.consumers()] == ["job.tmp"]


# --- consumers ------------------------------------------------------------------------------------------------------
def test_consumers_round_trip_with_their_mtime(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    store.write_consumer(Consumer(consumer_id="reader", next_snapshot=4))
    store.write_consumer(Consumer(consumer_id="etl", next_snapshot=2))
    store.write_consumer(Consumer(consumer_id="etl", next_snapshot=3))  # consumers are overwritten, not created
    for name in ("notes", ".consumer-x.0e1f0000.tmp"):
        put(tmp_path / "consumer" / name, b"{}")
    (tmp_path / "consumer" / "consumer-dir").mkdir()
    found = sorted(store.consumers(), key=lambda c: c.consumer_id)
    assert [(c.consumer_id, c.next_snapshot) for c in found] == [("etl", 3), ("reader", 4)]
    mtime_ms = (tmp_path / "consumer" / "consumer-etl").stat().st_mtime_ns // 1_000_000
    assert abs(found[0].modified_ms - mtime_ms) <= 1  # type: ignore[operator]
    assert store_at(tmp_path / "elsewhere").consumers() == []
    with pytest.raises(UnsafePathError):
        store.write_consumer(Consumer(consumer_id="../x", next_snapshot=1))


# --- branches -------------------------------------------------------------------------------------------------------
@pytest.fixture
def branched(tmp_path: Path) -> tuple[Table, Path]:
    """Snapshots 1..3 and tag 'release' on 1; branch 'from-tag' created from the tag, 'from-snap' from snapshot 2,
    'own' holding a snapshot 2 of its own (another state with the same id), 'empty' with schemas only."""
    root = tmp_path / "t"
    table = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for i in range(3):
        table.append(id_part_rows(i * 10, 4))
    table.create_tag("release", 1)
    branch_from_tag(root, "from-tag", "release", 1)
    branch_from_snapshot(root, "from-snap", 2)
    own_home = root / "branch" / "branch-own"
    store = table.context.store
    own = dataclasses.replace(store.read_snapshot(2), base_manifest_list=store.read_snapshot(3).base_manifest_list)
    put(own_home / "snapshot" / "snapshot-2", json_codec.snapshot_to_json(own))
    put(own_home / "schema" / "schema-0", (root / "schema" / "schema-0").read_bytes())
    put(root / "branch" / "branch-empty" / "schema" / "schema-0", (root / "schema" / "schema-0").read_bytes())
    put(root / "branch" / "branch-file", b"not a branch")  # a file, not a directory
    (root / "branch" / "branch-").mkdir()  # no name
    (root / "branch" / "other").mkdir()
    return table, root


def test_branch_names_and_stores(branched: tuple[Table, Path]) -> None:
    table, root = branched
    store = table.context.store
    assert store.branch_names() == ["empty", "from-snap", "from-tag", "own"]
    branch = store.branch_store("from-tag")
    assert branch.layout.root == str(root / "branch" / "branch-from-tag")
    assert branch.io is store.io
    assert (branch.snapshot_ids(), branch.tag_names()) == ([1], ["release"])
    assert branch.read_tag("release").snapshot == store.read_snapshot(1)
    assert branch.latest_schema() == store.latest_schema()
    assert store.branch_store("empty").snapshot_ids() == []
    assert store.branch_store("nothing-here").snapshot_ids() == []
    with pytest.raises(UnsafePathError):
        store.branch_store("../t")
    assert store_at(root.parent / "no-table").branch_names() == []


def test_branches_holding_a_snapshot(branched: tuple[Table, Path]) -> None:
    table, _ = branched
    store = table.context.store
    holding = {sid: store.branches_holding(store.read_snapshot(sid)) for sid in (1, 2, 3)}
    # 'own' has a snapshot 2 too, but another state (another base manifest list): it holds nothing of main's
    assert holding == {1: ["from-tag"], 2: ["from-snap"], 3: []}
    assert rows_of(table.to_arrow(snapshot_id=1)) == rows_of(id_part_rows(0, 4))


def test_unreadable_branch_metadata_raises_in_branches_holding(branched: tuple[Table, Path]) -> None:
    table, root = branched
    put(root / "branch" / "branch-empty" / "tag" / "tag-broken", b"{")
    with pytest.raises(CorruptMetadataError, match="tag-broken"):
        table.context.store.branches_holding(table.context.store.read_snapshot(3))


# --- manifests ------------------------------------------------------------------------------------------------------
def test_manifest_names_from_metadata_are_checked_before_reading(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    put(tmp_path / "outside", b"not ours")
    for evil in ("../outside", "/etc/passwd", "s3://bucket/manifest-1", "a/b", ".."):
        with pytest.raises(UnsafePathError):
            store.read_manifest_list(evil)
        with pytest.raises(UnsafePathError):
            store.read_manifest(evil)


def test_manifests_of_is_base_then_delta(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for i in range(3):
        table.append(id_part_rows(i * 10, 2, parts=(i,)))
    store = table.context.store
    latest = store.latest_snapshot()
    assert latest is not None
    base = store.read_manifest_list(latest.base_manifest_list)
    delta = store.read_manifest_list(latest.delta_manifest_list)
    assert store.manifests_of(latest) == base + delta
    assert len(delta) == 1 and delta[0].num_added_files == 1 and delta[0].num_deleted_files == 0
    assert store.read_manifest_list_fast(latest.base_manifest_list) == base
    assert [e.file.file_name for e in store.read_manifest(delta[0].file_name)] == [
        Path(f.path).name for f in table.files() if f.partition == {"part": 2}
    ]
