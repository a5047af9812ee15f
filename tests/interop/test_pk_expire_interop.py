"""Snapshot expiration on a primary-key table pypaimon 2.1.0 wrote with ``changelog-producer=input``:
every file a snapshot names goes with the last retained root that named it, the changelog (list, manifests, files)
included, and pypaimon still reads the retained snapshots, the tag and the branch, batch and changelog alike.

The expected files are computed independently of tablefmt: the snapshot and tag JSON, the manifest lists and
manifests decoded with fastavro (helpers.referenced_files for the data side, :func:`changelog_files` here).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.tables import files_under, rows_of

from interop.helpers import Paimon, metadata_roots, read_avro, referenced_files, tablefmt_json

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
OPTIONS = {"bucket": "3", "changelog-producer": "input"}
ROUNDS = 8
METADATA_DIRS = ("snapshot/", "schema/", "tag/", "branch/")


def upserts(pp: Paimon, name: str, options: dict[str, str] | None = None) -> dict[int, pa.Table]:
    """8 rounds of 25 upserted keys out of 60 (partitions d1/d2, 3 buckets); the input of each round, by snapshot."""
    from pypaimon import Schema

    pp.catalog.create_table(
        f"db.{name}",
        Schema.from_pyarrow_schema(
            SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options={**OPTIONS, **(options or {})}
        ),
        False,
    )
    rng = random.Random(1)
    rounds = {}
    for r in range(1, ROUNDS + 1):
        ids = rng.sample(range(60), 25)
        batch = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "dt": pa.array(["d1" if i % 2 else "d2" for i in ids]),
                "v": [f"r{r}-{i}" for i in ids],
            },
            schema=SCHEMA,
        )
        pp.append(name, batch)
        rounds[r] = batch
    assert pp.latest_id(name) == ROUNDS
    return rounds


def changelog_files(root: Path, metadata: dict[str, Any]) -> set[str]:
    """The changelog manifest list a snapshot or tag JSON names, its manifests and the files they ADD (fastavro)."""
    name = metadata.get("changelogManifestList")
    if not name:
        return set()
    found = {f"manifest/{name}"}
    data = {p.name: p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}
    for meta in read_avro(root / "manifest" / name):
        found.add(f"manifest/{meta['_FILE_NAME']}")
        for entry in read_avro(root / "manifest" / meta["_FILE_NAME"]):
            assert entry["_KIND"] == 0, "a changelog manifest holds ADD entries only"
            found.add(data[entry["_FILE"]["_FILE_NAME"]])
    return found


def needed(root: Path) -> set[str]:
    """Every non-metadata file the present snapshots, tags and branch roots name (changelogs included)."""
    result: set[str] = set()
    for _, metadata in metadata_roots(root).values():
        result |= referenced_files(root, metadata) | changelog_files(root, metadata)
        if metadata.get("statistics"):
            result.add(f"statistics/{metadata['statistics']}")
    return result


def table_files(root: Path) -> set[str]:
    return {p for p in files_under(root) if not p.startswith(METADATA_DIRS)}


def commit_time(pp: Paimon, name: str, snapshot_id: int) -> int:
    return int(pp.table(name).snapshot_manager().get_snapshot_by_id(snapshot_id).time_millis)


def changelog_rows(pp: Paimon, name: str, start_ms: int) -> list[tuple[Any, ...]]:
    """pypaimon's incremental changelog read (``incremental-between-timestamp``, changelog mode because a producer
    is set) from ``start_ms`` to the latest commit: the changelogs of the snapshots committed after it."""
    table = pp.table(name)
    end = table.snapshot_manager().get_latest_snapshot().time_millis
    table = table.copy({"incremental-between-timestamp": f"{start_ms},{end}"})
    builder = table.new_read_builder()
    return rows_of(builder.new_read().to_arrow(builder.new_scan().plan().splits()))


def test_expire_leaves_exactly_the_retained_snapshot_files(pp: Paimon) -> None:
    rounds = upserts(pp, "t")
    root = Path(pp.path("t"))
    latest = rows_of(pp.read("t"))
    start = commit_time(pp, "t", ROUNDS - 1)
    last_changelog = changelog_rows(pp, "t", start)
    assert last_changelog == rows_of(rounds[ROUNDS])  # input producer: the changelog is what was written
    before = table_files(root)
    expired = [root / "snapshot" / f"snapshot-{i}" for i in range(1, ROUNDS)]
    expired_changelogs = set().union(*(changelog_files(root, _json(p)) for p in expired))
    retained = referenced_files(root, _json(root / "snapshot" / f"snapshot-{ROUNDS}")) | changelog_files(
        root, _json(root / "snapshot" / f"snapshot-{ROUNDS}")
    )

    result = tablefmt_json("expire", str(root), "--retain-min", "1", "--retain-max", "1")

    after = table_files(root)
    assert after == retained, f"left behind: {sorted(after - retained)}, missing: {sorted(retained - after)}"
    assert before - after == before - retained  # the leak: every file no retained snapshot names is gone
    assert expired_changelogs <= before - after
    assert set(result["deleted_paths"]) >= before - after
    assert result["deleted_changelog_files"] == len({p for p in expired_changelogs if p.endswith(".parquet")})
    assert result["deleted_changelog_manifest_list_files"] == ROUNDS - 1
    assert result["deleted_changelog_manifest_files"] == ROUNDS - 1
    assert sorted(p.name for p in (root / "snapshot").iterdir()) == ["EARLIEST", "LATEST", f"snapshot-{ROUNDS}"]
    assert needed(root) == after
    assert rows_of(pp.read("t")) == latest
    assert rows_of(pp.read("t", snapshot_id=ROUNDS)) == latest
    assert changelog_rows(pp, "t", start) == last_changelog


def test_tag_and_branch_keep_their_changelogs_and_pypaimon_reads_them(pp: Paimon) -> None:
    upserts(pp, "k")
    root = Path(pp.path("k"))
    pp.create_tag("k", "t3", 3)
    pp.branch_from_snapshot("k", "b5", 5)
    at = {i: rows_of(pp.read("k", snapshot_id=i)) for i in (3, 5, ROUNDS)}
    tagged = rows_of(pp.read("k", tag="t3"))
    branch = rows_of(pp.read(pp.branch("k", "b5"), snapshot_id=5))
    kept_changelogs = {i: changelog_files(root, _json(root / "snapshot" / f"snapshot-{i}")) for i in (3, 5, ROUNDS)}
    gone = {i: changelog_files(root, _json(root / "snapshot" / f"snapshot-{i}")) for i in (1, 2, 4, 6, 7)}

    tablefmt_json("expire", str(root), "--retain-min", "1", "--retain-max", "1")

    after = table_files(root)
    assert after == needed(root), f"left behind: {sorted(after - needed(root))}"
    for i, files in kept_changelogs.items():
        assert files <= after, f"changelog of snapshot {i} lost"
    for i, files in gone.items():
        assert not files & after, f"changelog of snapshot {i} left behind"
    assert rows_of(pp.read("k", tag="t3")) == tagged == at[3]
    assert rows_of(pp.read(pp.branch("k", "b5"), snapshot_id=5)) == branch == at[5]
    assert rows_of(pp.read("k", snapshot_id=ROUNDS)) == at[ROUNDS]


def _json(path: Path) -> dict[str, Any]:
    from interop.helpers import read_json

    return read_json(path)


DV_SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.int32())])
DV_OPTIONS = {"data-evolution.enabled": "true", "row-tracking.enabled": "true", "deletion-vectors.enabled": "true"}


def index_files(root: Path, metadata: dict[str, Any]) -> set[str]:
    """The index manifest a snapshot or tag JSON names and the index files in it (fastavro)."""
    name = metadata.get("indexManifest")
    if not name:
        return set()
    return {f"manifest/{name}"} | {f"index/{e['_FILE_NAME']}" for e in read_avro(root / "manifest" / name)}


def test_expire_deletes_replaced_deletion_vectors_and_pypaimon_reads_the_same_rows(pp: Paimon) -> None:
    """pypaimon 2.1.0 writes deletion vectors (data-evolution tables, delete_by_row_id): each delete a new index
    manifest, a new vector file per touched bucket. Expiring all but the latest snapshot deletes the earlier
    index manifests and the vector files only they listed; the rows pypaimon reads do not change."""
    pp.create_table("dv", DV_SCHEMA, partition_keys=["part"], options=DV_OPTIONS)
    for start in (0, 10, 20):
        pp.append("dv", pa.table({"id": list(range(start, start + 6)), "part": [0, 1] * 3}, schema=DV_SCHEMA))
    for row_ids in ([0, 2, 7], [11, 4], [13]):
        builder = pp.table("dv").new_batch_write_builder()
        commit = builder.new_commit()
        try:
            commit.commit(builder.new_update().delete_by_row_id(row_ids))
        finally:
            commit.close()
    root = Path(pp.path("dv"))
    latest = pp.latest_id("dv")
    assert latest is not None
    rows = rows_of(pp.read("dv"))
    snapshots = {i: _json(root / "snapshot" / f"snapshot-{i}") for i in range(1, latest + 1)}
    kept = index_files(root, snapshots[latest])
    every = set().union(*(index_files(root, s) for s in snapshots.values()))
    assert kept and every - kept, "the deletes replaced no vector file: nothing to test"
    before = table_files(root)

    result = tablefmt_json("expire", str(root), "--retain-min", "1", "--retain-max", "1")

    after = table_files(root)
    assert {p for p in after if p.startswith("index/") or "index-manifest" in p} == kept
    assert after == needed(root) | kept
    assert before - after >= every - kept
    assert result["deleted_index_manifest_files"] == len({p for p in every - kept if p.startswith("manifest/")})
    assert result["deleted_index_files"] == len({p for p in every - kept if p.startswith("index/")})
    assert rows_of(pp.read("dv")) == rows
