"""Orphan cleanup and check on a pypaimon-written primary-key table with changelog files.

pypaimon 2.1.0 writes, per commit of a table with ``changelog-producer=input``, a changelog data file per bucket
(``changelog-<uuid>-<n>.parquet`` next to the data files), changelog manifests (``manifest-<uuid>-changelog-<n>``)
and a changelog manifest list (``manifest-list-<uuid>-changelog``). None of them may be proposed while a root names
it; every planted orphan of each kind is found; after a tablefmt expiration, check and remove-orphans list the
same orphans, exactly the files no remaining root names (found independently with fastavro).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import DAY_S, age_files, age_path, files_under

from interop.helpers import Paimon, metadata_roots, read_avro
from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cleanup.orphans import plan_orphan_removal

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("v", pa.string()),
    ]
)
ROUNDS = 6
KEYS = 60


def upsert_rounds(pp: Paimon, name: str, rounds: int = ROUNDS) -> dict[int, str]:
    """``rounds`` upserts of 25 random keys each; returns the latest value of every key written."""
    from pypaimon import Schema

    options = {"bucket": "3", "changelog-producer": "input"}
    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options=options)
    pp.catalog.create_table(f"db.{name}", schema, False)
    rng = random.Random(26)
    latest: dict[int, str] = {}
    for r in range(rounds):
        ids = rng.sample(range(KEYS), 25)
        values = [f"r{r}-{i}" for i in ids]
        latest.update(zip(ids, values))
        dts = ["d1" if i % 2 else "d2" for i in ids]
        pp.append(name, pa.table({"id": pa.array(ids, pa.int64()), "dt": dts, "v": values}, schema=SCHEMA))
    return latest


def needed_by(root: Path, metadata: Mapping[str, Any]) -> set[str]:
    """Every file a snapshot JSON names, relative to the root, found with fastavro: its manifest lists (changelog
    list included), their manifests, and every data or changelog file any entry names (ADD or DELETE), located by
    its unique name under the root."""
    names = {p.name: p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}
    needed: set[str] = set()
    for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
        if not metadata.get(key):
            continue
        needed.add(f"manifest/{metadata[key]}")
        for meta in read_avro(root / "manifest" / metadata[key]):
            needed.add(f"manifest/{meta['_FILE_NAME']}")
            for entry in read_avro(root / "manifest" / meta["_FILE_NAME"]):
                file_name = entry["_FILE"]["_FILE_NAME"]
                if file_name in names:
                    needed.add(names[file_name])
    return needed


def table_files(root: Path) -> set[str]:
    """Files orphan cleanup may judge: everything but the metadata roots (snapshots, hints, schemas)."""
    return {f for f in files_under(root) if not f.startswith(("snapshot/", "schema/"))}


@pytest.fixture
def pk_table(pp: Paimon) -> tuple[Path, dict[int, str]]:
    latest = upsert_rounds(pp, "t")
    return Path(pp.path("t")), latest


def read_latest(pp: Paimon) -> dict[int, str]:
    rows = pp.read("t").to_pylist()
    return {row["id"]: row["v"] for row in rows}


def test_no_live_file_of_a_pk_table_with_changelog_is_proposed(
    pp: Paimon, pk_table: tuple[Path, dict[int, str]]
) -> None:
    root, latest = pk_table
    changelog_files = {f for f in files_under(root) if f.split("/")[-1].startswith("changelog-")}
    assert len(changelog_files) == ROUNDS * 6  # a changelog file per bucket (2 partitions x 3 buckets) per commit
    age_files(root, 3 * DAY_S)
    ours = Table.open(str(root))

    plan = plan_orphan_removal(ours.context)
    now = plan_orphan_removal(ours.context, older_than=timedelta(0), force=True)
    checked = check_table(ours.context)

    assert plan.orphans == () and now.orphans == ()
    assert plan.skipped_unknown == ()  # changelog files are known, not "unknown"
    assert checked.ok and checked.orphan_paths == () and checked.skipped_unknown == ()
    kinds = {p.split("/")[-1].split("-")[0] for p in changelog_files}
    assert kinds == {"changelog"}
    assert read_latest(pp) == latest


def test_planted_orphans_of_every_kind_are_found_and_removed(pp: Paimon, pk_table: tuple[Path, dict[int, str]]) -> None:
    root, latest = pk_table
    age_files(root, 3 * DAY_S)
    live = table_files(root)
    u = uuid.uuid4

    def plant(rel: str, days: float = 3) -> str:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stray")
        age_path(path, days * DAY_S)
        return rel

    planted = {
        plant(f"dt=d1/bucket-0/changelog-{u()}-0.parquet"),
        plant(f"dt=d2/bucket-2/changelog-{u()}-0.parquet.index"),
        plant(f"dt=d2/bucket-1/data-{u()}-0.parquet"),
        plant(f"dt=d1/bucket-1/data-{u()}-0.parquet-1.index"),
        plant(f"manifest/manifest-{u()}-changelog-0"),
        plant(f"manifest/manifest-list-{u()}-changelog"),
        plant(f"manifest/manifest-{u()}-0"),
        plant(f"manifest/index-manifest-{u()}-0"),
        plant(f"statistics/stat-{u()}-0"),
    }
    young = plant(f"dt=d1/bucket-2/changelog-{u()}-0.parquet", days=0)
    ours = Table.open(str(root))

    plan = plan_orphan_removal(ours.context)
    checked = check_table(ours.context)
    result = remove_orphan_files(ours.context)

    assert {o.path for o in plan.orphans} == planted
    assert checked.orphan_paths == tuple(o.path for o in plan.orphans)
    assert set(result.deleted_paths) == planted
    assert table_files(root) == live | {young}
    assert check_table(ours.context).ok
    assert read_latest(pp) == latest
    for snapshot_id in range(1, ROUNDS + 1):
        assert pp.read("t", snapshot_id=snapshot_id).num_rows > 0


@pytest.mark.parametrize("retain", [1, 3])
def test_after_tablefmt_expire_check_and_remove_orphans_agree(
    pp: Paimon, pk_table: tuple[Path, dict[int, str]], retain: int
) -> None:
    root, latest = pk_table
    ours = Table.open(str(root))
    expire_snapshots(ours.context, retain_min=retain, retain_max=retain)
    remaining = metadata_roots(root)
    assert len(remaining) == retain
    needed = set().union(*(needed_by(root, document) for _, document in remaining.values()))
    unnamed = table_files(root) - needed
    age_files(root, 3 * DAY_S)

    plan = plan_orphan_removal(ours.context)
    checked = check_table(ours.context)
    cli_like = remove_orphan_files(ours.context, dry_run=True)

    assert {o.path for o in plan.orphans} == unnamed
    assert checked.orphan_paths == tuple(o.path for o in plan.orphans) == cli_like.deleted_paths
    assert checked.ok and plan.skipped_unknown == ()
    remove_orphan_files(ours.context)
    assert table_files(root) == needed
    after = check_table(ours.context)
    assert after.ok and after.orphan_paths == ()
    assert read_latest(pp) == latest


def test_index_files_of_a_dynamic_bucket_table(pp: Paimon) -> None:
    """pypaimon's dynamic-bucket primary-key table (no ``bucket`` option) writes a hash index file per partition and
    bucket in ``index/`` and an index manifest per commit: none is proposed while a root names it; after a tablefmt
    expiration exactly the unnamed ones are, and check agrees."""
    from pypaimon import Schema

    schema = Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"])
    pp.catalog.create_table("db.dyn", schema, False)
    rng = random.Random(7)
    latest: dict[int, str] = {}
    for r in range(4):
        ids = rng.sample(range(KEYS), 25)
        values = [f"r{r}-{i}" for i in ids]
        latest.update(zip(ids, values))
        dts = ["d1" if i % 2 else "d2" for i in ids]
        pp.append("dyn", pa.table({"id": pa.array(ids, pa.int64()), "dt": dts, "v": values}, schema=SCHEMA))
    root = Path(pp.path("dyn"))
    index_files = {f for f in files_under(root) if f.startswith("index/")}
    assert index_files and all(f.startswith("index/index-") for f in index_files)
    age_files(root, 3 * DAY_S)
    ours = Table.open(str(root))
    plan = plan_orphan_removal(ours.context)
    assert plan.orphans == () and plan.skipped_unknown == ()
    assert check_table(ours.context).ok

    expire_snapshots(ours.context, retain_min=1, retain_max=1)
    remaining = metadata_roots(root)
    (document,) = (d for _, d in remaining.values())
    needed = needed_by(root, document)
    named_index = {f"index/{e['_FILE_NAME']}" for e in read_avro(root / "manifest" / document["indexManifest"])}
    needed |= {f"manifest/{document['indexManifest']}"} | named_index
    age_files(root, 3 * DAY_S)

    plan = plan_orphan_removal(ours.context)
    checked = check_table(ours.context)

    assert {o.path for o in plan.orphans} == table_files(root) - needed
    assert checked.orphan_paths == tuple(o.path for o in plan.orphans) and checked.ok
    remove_orphan_files(ours.context)
    assert table_files(root) == needed
    rows = pp.read("dyn").to_pylist()
    assert {row["id"]: row["v"] for row in rows} == latest
