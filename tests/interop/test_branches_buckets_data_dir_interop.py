"""tablefmt's maintenance on pypaimon 2.1.0 tables with branches, fixed buckets and a data directory.

Every test drives tablefmt (the ``tablefmt`` entry point, or the API) on a table pypaimon wrote, then checks with
an independent oracle: the exact files deleted (computed by reachability from the raw metadata, read with
fastavro + json), the branch metadata untouched, every root's files still on disk, ``tablefmt check`` ok, and
pypaimon reading the main table, every retained snapshot, every tag and every branch with exactly the rows written.

* Defect 1: expiration ignores branches. A branch created from a tag (pypaimon
  ``branch_manager().create_branch("b1", "release")``) still needs the tag's snapshot files after the main table
  has moved on; expiring the tag (time-retained passed) or deleting it must not delete them.
* Defect 2: the same for a branch created from a snapshot. pypaimon 2.1.0 cannot create one (``create_branch``
  takes a tag name only, and without one creates an *empty* branch), so the test writes what Paimon Java's
  ``createBranch(name, snapshotId)`` writes (Paimon.branch_from_snapshot).
* Defect 3: fixed buckets (``bucket=3``, ``bucket-key``): ``check`` maps every file of a partition to the first
  bucket directory it saw.
* Defect 4: ``data-file.path-directory``: pypaimon writes data under ``<root>/<dir>/``; check, expire and
  remove-orphans look for it at the root.

Time: tag TTLs are made to have passed by moving the tag's create time into the past (helpers.backdate_tag), and
leftovers are made old with os.utime; nothing sleeps.
"""

from __future__ import annotations

import datetime as dt
import shutil
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.tables import age_files, files_under, rows_of, tree_bytes

from interop.helpers import (
    Paimon,
    backdate_tag,
    delta_entries,
    diff_rows,
    metadata_roots,
    referenced_files,
    tablefmt_cli,
    tablefmt_json,
    unreferenced_without,
)
from tableformat import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.string()), pa.field("dt", pa.string())]
)
COLUMNS = ["id", "k", "dt"]
OLD = 3 * 86_400
"""Age given to every file before orphan cleanup (which runs with --older-than 1h): only references protect."""


class Rows:
    """Every row written, by id (``k`` = 'k<id>', the bucket key): batches to write, exact rows to expect."""

    def __init__(self) -> None:
        self.partition: dict[int, str] = {}

    def batch(self, spec: Mapping[str, Iterable[int]]) -> pa.Table:
        """Rows ``{dt: ids}``; each id is written once in the whole test."""
        rows = []
        for part, ids in spec.items():
            for i in ids:
                assert i not in self.partition, f"id {i} written twice"
                self.partition[i] = part
                rows.append({"id": i, "k": f"k{i}", "dt": part})
        return pa.Table.from_pylist(rows, schema=SCHEMA)

    def expect(self, ids: Iterable[int]) -> list[tuple[Any, ...]]:
        return sorted((i, f"k{i}", self.partition[i]) for i in ids)


def assert_reads(pp: Paimon, rows: Rows, expected: Mapping[str, Iterable[int]]) -> None:
    """pypaimon reads exactly these rows; keys: 't' (latest), 't@3' (snapshot), 't#tag', with 't' possibly a
    branch ('t$branch_b1')."""
    for spec, ids in expected.items():
        name, _, tag = spec.partition("#")
        name, _, snapshot = name.partition("@")
        table = pp.read(name, snapshot_id=int(snapshot) if snapshot else None, tag=tag or None)
        got = rows_of(table, COLUMNS)
        want = rows.expect(ids)
        assert got == want, f"pypaimon {spec}: {diff_rows(got, want)}"


def retiring(root: str, gone: Iterable[str]) -> set[str]:
    """What removing the roots ``gone`` (labels of helpers.metadata_roots) must delete, computed before it happens:
    their own metadata files and every file they reference that no other root does."""
    roots = metadata_roots(root)
    return {roots[label][0] for label in gone} | unreferenced_without(root, roots, gone)


def assert_roots_intact(root: str) -> set[str]:
    """Every file of every root of the main table and of every branch is on disk (independent of tablefmt);
    returns them all."""
    on_disk = files_under(root)
    needed: set[str] = set()
    for label, (_, metadata) in metadata_roots(root).items():
        files = referenced_files(root, metadata)
        assert files <= on_disk, f"{label} lost {sorted(files - on_disk)}"
        needed |= files
    return needed


def assert_check_ok(root: str, roots: int) -> None:
    """``tablefmt check``: ok, nothing missing, no errors, no orphans, every root and referenced file counted."""
    result = tablefmt_json("check", root)
    needed = assert_roots_intact(root)
    assert (result["ok"], result["missing_files"], result["errors"]) == (True, 0, []), result
    assert (result["roots"], result["referenced_files"], result["orphan_files"]) == (roots, len(needed), 0), result


def plant_strays(pp: Paimon, root: str, writes: Iterable[tuple[str, pa.Table]], copy_to: str | None) -> set[str]:
    """Leftovers only orphan cleanup may delete: uncommitted pypaimon writes (to the main table or a branch), a
    copy of a manifest under a fresh name and, in directory ``copy_to``, a copy of a data file under a fresh
    name. Returns their paths."""
    before = files_under(root)
    writes = list(writes)
    for name, data in writes:
        pp.uncommitted_write(name, data)
    base = Path(root)
    some_manifest = next(p for p in sorted((base / "manifest").glob("manifest-*")) if "-list-" not in p.name)
    shutil.copyfile(some_manifest, base / "manifest" / f"manifest-{uuid.uuid4()}-0")
    if copy_to is not None:
        some_data = next(iter(sorted(base.rglob("*.parquet"))))
        shutil.copyfile(some_data, base / copy_to / f"data-{uuid.uuid4()}-0.parquet")
    strays = files_under(root) - before
    assert len(strays) >= len(writes) + 1 + (copy_to is not None), sorted(strays)
    assert not [p for p in strays if p.startswith(("branch/", "snapshot/", "tag/", "schema/"))], sorted(strays)
    return strays


# --- defect 1: a branch created from a tag -------------------------------------------------------------------------

TAG_ROWS = [1, 2, 3, 4]
MAIN_ROWS = [5, 6, 7]
BRANCH_ROWS = [*TAG_ROWS, 8]


def tag_and_branch(pp: Paimon, rows: Rows, *, ttl: bool) -> str:
    """Snapshot 1 (ids 1-4 in dt=a and dt=b) gets tag ``release`` (with ``ttl``: a 1 s time-retained, created an
    hour ago); branch b1 is created from the tag and commits id 8 (its snapshot 2); the main table overwrites
    everything (snapshot 2, ids 5-6) and appends (snapshot 3, id 7). Returns the table root."""
    pp.create_table("t", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false"})
    root = pp.path("t")
    pp.append("t", rows.batch({"a": [1, 2], "b": [3, 4]}))
    pp.table("t").create_tag("release", snapshot_id=1, time_retained="1s" if ttl else None)
    if ttl:
        backdate_tag(root, "release", 3600)
    pp.create_branch("t", "b1", "release")
    assert sorted(files_under(Path(root) / "branch")) == [
        "branch-b1/schema/schema-0",
        "branch-b1/snapshot/snapshot-1",
        "branch-b1/tag/tag-release",
    ]
    pp.overwrite("t", rows.batch({"a": [5, 6]}), {})
    pp.append("t", rows.batch({"c": [7]}))
    pp.append(Paimon.branch("t", "b1"), rows.batch({"a": [8]}))
    assert (pp.latest_id("t"), pp.latest_id(Paimon.branch("t", "b1"))) == (3, 2)
    assert sorted(metadata_roots(root)) == [
        "branch b1 snapshot 1",
        "branch b1 snapshot 2",
        "branch b1 tag release",
        "snapshot 1",
        "snapshot 2",
        "snapshot 3",
        "tag release",
    ]
    return root


BRANCH_READS = {
    "t": MAIN_ROWS,
    "t@3": MAIN_ROWS,
    "t$branch_b1": BRANCH_ROWS,
    "t$branch_b1@1": TAG_ROWS,
    "t$branch_b1@2": BRANCH_ROWS,
    "t$branch_b1#release": TAG_ROWS,
}


def test_cli_expire_keeps_the_ttl_tag_a_branch_was_created_from(pp: Paimon) -> None:
    rows = Rows()
    root = tag_and_branch(pp, rows, ttl=True)
    keys = ("tag_name", "snapshot_id", "time_retained_ms")
    listed = [{k: t[k] for k in keys} for t in tablefmt_json("tag", "list", root)]
    assert listed == [{"tag_name": "release", "snapshot_id": 1, "time_retained_ms": 1000}]
    branch = tree_bytes(Path(root) / "branch")
    expected = retiring(root, ["snapshot 1", "snapshot 2"])
    # snapshot 1's data files and manifest lists are b1's (and the tag's): only snapshot 2's lists go
    assert len(expected) == 4 and not [p for p in expected if p.endswith(".parquet")], sorted(expected)

    result = tablefmt_json("expire", root, "--retain-max", "1", "--retain-min", "1")
    assert result["expired_snapshot_ids"] == [1, 2]
    assert result["expired_tags"] == []  # b1 was created from it: not expired while b1 exists
    assert sorted(result["deleted_paths"]) == sorted(expected)
    assert (Path(root) / "tag" / "tag-release").is_file()
    assert tree_bytes(Path(root) / "branch") == branch

    strays = plant_strays(
        pp,
        root,
        [("t", rows.batch({"b": [100]})), (Paimon.branch("t", "b1"), rows.batch({"d": [101]}))],
        copy_to="dt=a/bucket-0",
    )
    age_files(root, OLD)
    result = tablefmt_json("remove-orphans", root, "--older-than", "1h")
    assert sorted(result["deleted_paths"]) == sorted(strays)
    assert tree_bytes(Path(root) / "branch") == branch
    assert_check_ok(root, roots=5)  # snapshot 3, tag release, b1's snapshots 1 and 2 and its tag
    assert_reads(pp, rows, {**BRANCH_READS, "t#release": TAG_ROWS})

    # once the branch is dropped, the tag's time is up: the next expiration expires it with the files only it held,
    # and orphan cleanup takes what only b1 held (its id 8, its manifest, the lists of its snapshot 2)
    roots = metadata_roots(root)
    b1_roots = [label for label in roots if label.startswith("branch b1 ")]
    orphaned = unreferenced_without(root, roots, [*b1_roots, "tag release"], named=True)
    pp.drop_branch("t", "b1")
    expected = retiring(root, ["tag release"])
    assert len(expected) == 5, sorted(expected)  # the tag file, two data files (ids 1-2, 3-4), two manifest lists
    orphaned -= expected
    assert len(orphaned) == 4, sorted(orphaned)
    result = tablefmt_json("expire", root, "--retain-max", "1", "--retain-min", "1")
    assert (result["expired_snapshot_ids"], result["expired_tags"]) == ([], ["release"])
    assert sorted(result["deleted_paths"]) == sorted(expected)
    result = tablefmt_json("remove-orphans", root, "--older-than", "1h")
    assert sorted(result["deleted_paths"]) == sorted(orphaned)
    assert_check_ok(root, roots=1)
    assert_reads(pp, rows, {"t": MAIN_ROWS})


def test_api_expire_after_pypaimon_deleted_the_tag_a_branch_was_created_from(pp: Paimon) -> None:
    from support.operations import expire_snapshots, remove_orphan_files

    from tableformat.cleanup.check import check_table

    rows = Rows()
    root = tag_and_branch(pp, rows, ttl=False)
    pp.delete_tag("t", "release")  # pypaimon deletes only the tag file; b1 keeps its own copy
    branch = tree_bytes(Path(root) / "branch")
    expected = retiring(root, ["snapshot 1", "snapshot 2"])
    assert len(expected) == 4 and not [p for p in expected if p.endswith(".parquet")], sorted(expected)

    result = expire_snapshots(Table.open(root).context, retain_min=1, retain_max=1)
    assert result.expired_snapshot_ids == (1, 2)
    assert result.expired_tags == ()
    assert sorted(result.deleted_paths) == sorted(expected)
    assert tree_bytes(Path(root) / "branch") == branch

    strays = plant_strays(pp, root, [(Paimon.branch("t", "b1"), rows.batch({"a": [100], "e": [101]}))], None)
    age_files(root, OLD)
    result = remove_orphan_files(Table.open(root).context, older_than=dt.timedelta(hours=1))
    assert sorted(result.deleted_paths) == sorted(strays)
    assert tree_bytes(Path(root) / "branch") == branch
    check = check_table(Table.open(root).context)
    assert (check.ok, check.roots, check.orphan_files) == (True, 4, 0), check.to_json()
    assert_roots_intact(root)
    assert_reads(pp, rows, BRANCH_READS)

    # dropping b1 leaves what only it used to orphan cleanup: exactly those files go, and nothing else. The files
    # of ids 1-4 stay: the manifests of main's snapshot 3 still name them (snapshot 1's ADDs, snapshot 2's
    # DELETEs) and orphan cleanup keeps every file a manifest entry names, as Paimon does; the expiration that
    # could have freed them (snapshot 2's) ran while b1 needed them. A known leak, not a defect of branch protection.
    roots = metadata_roots(root)
    b1_roots = [label for label in roots if label.startswith("branch b1 ")]
    expected = unreferenced_without(root, roots, b1_roots, named=True)
    assert len(expected) == 6, sorted(expected)  # id 8's file, b1's manifest, the lists of b1's snapshots 1 and 2
    pp.drop_branch("t", "b1")
    result = remove_orphan_files(Table.open(root).context, older_than=dt.timedelta(hours=1))
    assert sorted(result.deleted_paths) == sorted(expected)
    assert check_table(Table.open(root).context).ok
    assert_reads(pp, rows, {"t": MAIN_ROWS, "t@3": MAIN_ROWS})


def test_cli_tag_delete_refuses_the_tag_a_branch_was_created_from(pp: Paimon) -> None:
    rows = Rows()
    root = tag_and_branch(pp, rows, ttl=False)
    before = tree_bytes(root)
    proc = tablefmt_cli("tag", "delete", root, "release", expect=1)
    assert proc.stderr.startswith("error: "), proc.stderr
    assert tree_bytes(root) == before
    assert_reads(pp, rows, {**BRANCH_READS, "t#release": TAG_ROWS})


# --- defect 2: a branch created from a snapshot --------------------------------------------------------------------


def test_cli_expire_and_orphans_keep_branches_created_from_a_snapshot_and_empty(pp: Paimon) -> None:
    rows = Rows()
    pp.create_table("s", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false"})
    root = pp.path("s")
    b2, e = Paimon.branch("s", "b2"), Paimon.branch("s", "e")
    pp.append("s", rows.batch({"a": [1, 2], "b": [3, 4]}))  # 1
    pp.append("s", rows.batch({"c": [5]}))  # 2
    pp.branch_from_snapshot("s", "b2", 1)  # no tag anywhere protects snapshot 1
    pp.create_branch("s", "e")  # pypaimon 2.1.0 "from the current state": the schema only, no snapshot
    assert (pp.latest_id(b2), pp.latest_id(e)) == (1, None)
    pp.append(e, rows.batch({"a": [20]}))  # e's snapshot 1: not main's snapshot 1
    pp.overwrite("s", rows.batch({"a": [6]}), {})  # 3
    pp.append("s", rows.batch({"d": [7]}))  # 4
    pp.append(b2, rows.batch({"b": [8]}))  # b2's snapshot 2
    assert sorted(metadata_roots(root)) == [
        "branch b2 snapshot 1",
        "branch b2 snapshot 2",
        "branch e snapshot 1",
        *[f"snapshot {i}" for i in range(1, 5)],
    ]
    branch = tree_bytes(Path(root) / "branch")
    expected = retiring(root, ["snapshot 1", "snapshot 2", "snapshot 3"])
    # of the files snapshot 3 overwrote only id 5's is free; ids 1-4 and snapshot 1's lists are b2's
    (only_in_2,) = [e["_FILE"]["_FILE_NAME"] for e in delta_entries(root, 2)]
    assert sorted(p for p in expected if p.endswith(".parquet")) == [f"dt=c/bucket-0/{only_in_2}"]
    assert len(expected) == 8, sorted(expected)  # + 3 snapshot files, the manifest lists of snapshots 2 and 3

    result = tablefmt_json("expire", root, "--retain-max", "1", "--retain-min", "1")
    assert result["expired_snapshot_ids"] == [1, 2, 3]
    assert sorted(result["deleted_paths"]) == sorted(expected)
    assert tree_bytes(Path(root) / "branch") == branch

    writes = [("s", rows.batch({"a": [100]})), (b2, rows.batch({"a": [101]})), (e, rows.batch({"f": [102]}))]
    strays = plant_strays(pp, root, writes, copy_to="dt=b/bucket-0")
    age_files(root, OLD)
    result = tablefmt_json("remove-orphans", root, "--older-than", "1h")
    assert sorted(result["deleted_paths"]) == sorted(strays)
    assert tree_bytes(Path(root) / "branch") == branch
    assert_check_ok(root, roots=4)  # main's snapshot 4, b2's snapshots 1 and 2, e's snapshot 1
    assert_reads(
        pp,
        rows,
        {"s": [6, 7], "s@4": [6, 7], b2: [1, 2, 3, 4, 8], f"{b2}@1": [1, 2, 3, 4], f"{b2}@2": [1, 2, 3, 4, 8], e: [20]},
    )


# --- defects 3 and 4: fixed buckets, data-file.path-directory ------------------------------------------------------

FIXED_BUCKETS = {"bucket": "3", "bucket-key": "k"}
DATA_DIRECTORY = {"data-file.path-directory": "data"}


@pytest.mark.parametrize(
    ("options", "run_check"),
    [
        pytest.param(FIXED_BUCKETS, False, id="fixed-buckets"),
        pytest.param(
            FIXED_BUCKETS,
            True,
            id="fixed-buckets-check",
        ),
        pytest.param(
            DATA_DIRECTORY,
            True,
            id="path-directory",
        ),
    ],
)
def test_cli_maintenance_on_layout(pp: Paimon, options: dict[str, str], run_check: bool) -> None:
    """``fixed-buckets`` runs without ``tablefmt check``; the other two run check before and after the
    maintenance."""
    rows = Rows()
    pp.create_table("l", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false", **options})
    root = pp.path("l")
    pp.append("l", rows.batch({"a": range(12)}))  # 1
    pp.append("l", rows.batch({"b": range(12, 24)}))  # 2
    pp.append("l", rows.batch({"a": range(24, 36)}))  # 3
    pp.overwrite("l", rows.batch({"a": range(36, 42)}), {"dt": "a"})  # 4: the files of 1 and 3 retire
    pp.create_tag("l", "t4")
    pp.append("l", rows.batch({"c": range(42, 48)}))  # 5

    # where pypaimon put the data: <partition>/bucket-<_BUCKET>/, under <root>/data/ when the directory is set
    prefix = "data/" if options is DATA_DIRECTORY else ""
    paths: dict[str, str] = {}
    added: dict[int, list[str]] = {}
    for snapshot_id, part in enumerate("abaac", start=1):
        for entry in delta_entries(root, snapshot_id):
            if entry["_KIND"] == 0:
                name = entry["_FILE"]["_FILE_NAME"]
                paths[name] = f"{prefix}dt={part}/bucket-{entry['_BUCKET']}/{name}"
                added.setdefault(snapshot_id, []).append(paths[name])
    assert {p for p in files_under(root) if p.endswith(".parquet")} == set(paths.values())
    buckets = {p.split("/")[-2] for p in paths.values()}
    assert buckets == ({"bucket-0", "bucket-1", "bucket-2"} if options is FIXED_BUCKETS else {"bucket-0"})
    if run_check:
        assert_check_ok(root, roots=6)

    expected = retiring(root, ["snapshot 1", "snapshot 2", "snapshot 3"])
    retired = sorted(added[1] + added[3])
    assert sorted(p for p in expected if p.endswith(".parquet")) == retired
    assert all(p.startswith(f"{prefix}dt=a/bucket-") for p in retired)
    assert len(expected) == 3 + 6 + len(retired), sorted(expected)  # snapshot files, their lists, the data

    result = tablefmt_json("expire", root, "--retain-max", "2", "--retain-min", "2")
    assert result["expired_snapshot_ids"] == [1, 2, 3]
    assert sorted(result["deleted_paths"]) == sorted(expected)
    assert result["deleted_data_files"] == len(retired)

    stray_dir = max(p.rsplit("/", 1)[0] for p in added[2])  # dt=b's highest bucket
    assert stray_dir == (f"{prefix}dt=b/bucket-2" if options is FIXED_BUCKETS else f"{prefix}dt=b/bucket-0")
    strays = plant_strays(pp, root, [("l", rows.batch({"b": range(100, 112)}))], stray_dir)
    assert all(p.startswith(("manifest/", f"{prefix}dt=b/bucket-")) for p in strays), sorted(strays)
    age_files(root, OLD)
    result = tablefmt_json("remove-orphans", root, "--older-than", "1h")
    assert sorted(result["deleted_paths"]) == sorted(strays)
    if run_check:
        assert_check_ok(root, roots=3)  # snapshots 4 and 5, tag t4
    assert_roots_intact(root)
    before_overwrite = [*range(12, 24), *range(36, 42)]
    latest = [*before_overwrite, *range(42, 48)]
    assert_reads(pp, rows, {"l": latest, "l@5": latest, "l@4": before_overwrite, "l#t4": before_overwrite})
