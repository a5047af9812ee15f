"""Random histories: the cleaner deletes exactly the table files that no manifest of any root names.

The cleaner reads only the manifests it needs (see references.DataManifestSelection); the oracle here reads every
manifest list and manifest of every snapshot and tag, so any history the shortcut gets wrong shows up as a
difference in the deleted set.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path, PurePosixPath

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.operations import remove_orphan_files
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, files_under

from tableformat import Table

TABLE_FILE = re.compile(r"^(data-.*\.parquet|manifest-.*|\..*\.tmp)$")

OPERATIONS = st.lists(
    st.sampled_from(["append", "append", "append", "overwrite_part", "overwrite_all", "drop", "tag", "expire_oldest"])
    | st.sampled_from(["rollback", "gap", "uncommitted"]),
    min_size=3,
    max_size=14,
)


def batch(seed: int, parts: tuple[int, ...] = (0, 1, 2)) -> pa.Table:
    return pa.table({"id": [seed * 10 + i for i in range(6)], "part": [parts[i % len(parts)] for i in range(6)]})


def snapshot_ids(root: Path) -> list[int]:
    names = os.listdir(root / "snapshot") if (root / "snapshot").is_dir() else []
    return sorted(int(n[len("snapshot-") :]) for n in names if re.fullmatch(r"snapshot-\d+", n))


def apply(table: Table, root: Path, op: str, step: int) -> None:
    ids = snapshot_ids(root)
    if op == "append" or not ids:
        table.append(batch(step))
    elif op == "overwrite_part":
        table.overwrite(batch(step, parts=(1,)), {"part": 1})
    elif op == "overwrite_all":
        table.overwrite(batch(step))
    elif op == "drop":
        table.drop_partitions([{"part": 2}])
    elif op == "tag":
        table.create_tag(f"t{step}", ids[len(ids) // 2])
    elif op == "expire_oldest" and len(ids) > 1:
        (root / "snapshot" / f"snapshot-{ids[0]}").unlink()
    elif op == "rollback" and len(ids) > 1:
        for sid in ids[len(ids) // 2 + 1 :]:
            (root / "snapshot" / f"snapshot-{sid}").unlink()
        (root / "snapshot" / "LATEST").write_text(str(ids[len(ids) // 2]))
    elif op == "gap" and len(ids) > 2:
        (root / "snapshot" / f"snapshot-{ids[len(ids) // 2]}").unlink()
    elif op == "uncommitted":
        table.write_files(batch(step, parts=(0, 5)))


def referenced_names(table: Table) -> set[str]:
    """Every name any root's metadata mentions, by reading everything (the oracle)."""
    store = table.context.store
    roots = [s for s in (store.try_read_snapshot(i) for i in store.snapshot_ids()) if s is not None]
    roots += [tag.snapshot for tag in store.tags()]
    names: set[str] = set()
    for snapshot in roots:
        for list_name in snapshot.manifest_lists():
            names.add(list_name)
            for meta in store.read_manifest_list(list_name):
                names.add(meta.file_name)
                for entry in store.read_manifest(meta.file_name):
                    names.add(entry.file.file_name)
                    names.update(entry.file.extra_files)
    return names


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=OPERATIONS, merge_min=st.sampled_from(["2", "3", "30"]))
def test_random_histories(tmp_path_factory: object, operations: list[str], merge_min: str) -> None:
    root = Path(str(tmp_path_factory.mktemp("model"))) / f"t-{uuid.uuid4().hex[:8]}"  # type: ignore[attr-defined]
    options = {"write-only": "true", "manifest.merge-min-count": merge_min}
    table = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options=options)
    for step, op in enumerate(operations):
        apply(table, root, op, step)
    (root / "part=1" / "bucket-0").mkdir(parents=True, exist_ok=True)
    (root / "part=1" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet").write_bytes(b"stray")
    age_files(root, 10 * DAY_S)

    used = referenced_names(table)
    on_disk = [PurePosixPath(rel) for rel in files_under(root)]
    expected = {
        str(p) for p in on_disk if TABLE_FILE.match(p.name) and p.name not in used and p.parent.name != "snapshot"
    }
    result = remove_orphan_files(table.context, parallelism=3)
    assert set(result.deleted_paths) == expected, operations
    for snapshot_id in snapshot_ids(root):
        table.to_arrow(snapshot_id=snapshot_id)
    for tag in table.tags():
        table.to_arrow(tag=tag.name)
