"""Orphan cleanup fails closed: unreadable or unsafe metadata, failed listings and concurrent changes."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.operations import remove_orphan_files
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, files_under, id_part_rows

from tableformat import MaintenanceError, Table
from tableformat.cleanup.kernel import deleter
from tableformat.cleanup.orphans import plan as orphan_plan
from tableformat.codec import avro_codec
from tableformat.errors import DeleteFailedError, SnapshotNotFoundError
from tableformat.io.local import LocalFileIO
from tableformat.store import MetadataStore


def stray_name() -> str:
    return f"data-{uuid.uuid4()}-0.parquet"


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Three appends, a tag and one old stray data file (the only orphan)."""
    root = tmp_path / "t"
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for i in range(3):
        t.append(id_part_rows(i * 100, 8))
    t.create_tag("v2", 2)
    (root / "part=0" / "bucket-0" / stray_name()).write_bytes(b"stray")
    age_files(root, 10 * DAY_S)
    return t


def root_of(table: Table) -> Path:
    return Path(table.context.layout.root)


def snapshot_doc(table: Table, snapshot_id: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((root_of(table) / "snapshot" / f"snapshot-{snapshot_id}").read_text())
    return doc


def write_snapshot_doc(table: Table, snapshot_id: int, doc: dict[str, Any]) -> None:
    (root_of(table) / "snapshot" / f"snapshot-{snapshot_id}").write_text(json.dumps(doc))


def assert_aborts_without_deleting(table: Table, match: str) -> None:
    before = files_under(root_of(table))
    with pytest.raises(MaintenanceError, match=match):
        remove_orphan_files(table.context)
    assert files_under(root_of(table)) == before


# --- unreadable metadata ----------------------------------------------------------------------------------------


def test_corrupt_manifest_aborts(table: Table) -> None:
    store = table.context.store
    manifest = store.manifests_of(store.read_snapshot(2))[0].file_name
    (root_of(table) / "manifest" / manifest).write_bytes(b"not avro at all")
    assert_aborts_without_deleting(table, manifest)


def test_corrupt_snapshot_aborts(table: Table) -> None:
    (root_of(table) / "snapshot" / "snapshot-1").write_text("{ truncated")
    assert_aborts_without_deleting(table, "snapshot-1")


def test_corrupt_tag_aborts(table: Table) -> None:
    (root_of(table) / "tag" / "tag-v2").write_text('{"version": 3}')
    assert_aborts_without_deleting(table, "tag-v2")


def test_missing_manifest_list_of_a_present_snapshot_aborts(table: Table) -> None:
    name = snapshot_doc(table, 3)["deltaManifestList"]
    (root_of(table) / "manifest" / name).unlink()
    assert_aborts_without_deleting(table, name)


def test_missing_manifest_still_referenced_aborts(table: Table) -> None:
    store = table.context.store
    manifest = store.manifests_of(store.read_snapshot(3))[-1].file_name
    (root_of(table) / "manifest" / manifest).unlink()
    assert_aborts_without_deleting(table, manifest)


@pytest.mark.parametrize(
    ("method", "directory"), [("list_dir", "part=2"), ("list_dir_without_file_stats", "part=0/bucket-0")]
)
def test_failed_listing_aborts(table: Table, monkeypatch: pytest.MonkeyPatch, method: str, directory: str) -> None:
    original = getattr(LocalFileIO, method)
    failed: list[str] = []

    def flaky(self: LocalFileIO, path: str) -> list[Any]:
        if path.endswith(directory):
            failed.append(path)
            raise PermissionError(13, "Permission denied", path)
        return original(self, path)

    monkeypatch.setattr(LocalFileIO, method, flaky)
    assert_aborts_without_deleting(table, "Permission denied")
    assert len(failed) == 1


def test_failed_stat_of_an_unreferenced_file_aborts(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(self: LocalFileIO, path: str) -> Any:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(LocalFileIO, "stat_file", refused)
    assert_aborts_without_deleting(table, "Permission denied")


def test_file_gone_before_its_stat_is_skipped(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bucket directories are listed without mtimes; the unreferenced files are stat'ed after the references are
    read. A file deleted in between (by another cleaner) is simply not an orphan any more."""
    root = root_of(table)
    [stray] = [p for p in root.glob("part=0/bucket-0/*") if p.name not in referenced_names(table)]
    original = LocalFileIO.stat_file
    statted: list[str] = []

    def deleted_first(self: LocalFileIO, path: str) -> Any:
        statted.append(path)
        Path(path).unlink()
        return original(self, path)

    monkeypatch.setattr(LocalFileIO, "stat_file", deleted_first)
    result = remove_orphan_files(table.context, dry_run=True)
    assert statted == [str(stray)]
    assert result.orphan_files == 0 and result.deleted_paths == ()


def referenced_names(table: Table) -> set[str]:
    store = table.context.store
    names: set[str] = set()
    for sid in store.snapshot_ids():
        for meta in store.manifests_of(store.read_snapshot(sid)):
            names.update(entry.file.file_name for entry in store.read_manifest(meta.file_name))
    return names


def test_no_snapshot_but_latest_hint_aborts(table: Table) -> None:
    for sid in (1, 2, 3):
        (root_of(table) / "snapshot" / f"snapshot-{sid}").unlink()
    assert_aborts_without_deleting(table, "LATEST")


# --- names outside the table root ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["../../escape", "sub/dir", "s3://other-bucket/x", ".."])
def test_unsafe_manifest_list_name_in_snapshot_aborts(table: Table, bad: str) -> None:
    doc = snapshot_doc(table, 1)
    doc["baseManifestList"] = bad
    write_snapshot_doc(table, 1, doc)
    assert_aborts_without_deleting(table, "refusing")


def test_unsafe_manifest_name_in_manifest_list_aborts(table: Table) -> None:
    name = snapshot_doc(table, 3)["baseManifestList"]
    path = root_of(table) / "manifest" / name
    metas = avro_codec.read_manifest_list(path.read_bytes(), str(path))
    metas[0] = dataclasses.replace(metas[0], file_name="../manifest/../../x")
    path.write_bytes(avro_codec.write_manifest_list(metas))
    assert_aborts_without_deleting(table, "refusing")


def test_unsafe_data_file_name_in_manifest_aborts(table: Table) -> None:
    store = table.context.store
    manifest = store.manifests_of(store.read_snapshot(3))[-1].file_name
    path = root_of(table) / "manifest" / manifest
    entries = avro_codec.read_manifest(path.read_bytes(), str(path))
    bad = dataclasses.replace(entries[0].file, file_name="../../../etc/data-x.parquet")
    entries[0] = dataclasses.replace(entries[0], file=bad)
    path.write_bytes(avro_codec.write_manifest(entries))
    assert_aborts_without_deleting(table, "refusing")


# --- concurrency ----------------------------------------------------------------------------------------------------


def test_snapshot_vanishing_while_read_is_skipped(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Expiration removed snapshot 1 between the listing and the read: only its own manifest lists become orphans."""
    root = root_of(table)
    doc = snapshot_doc(table, 1)
    original = MetadataStore.read_snapshot

    def expire_first(self: MetadataStore, snapshot_id: int) -> Any:
        if snapshot_id == 1:
            (root / "snapshot" / "snapshot-1").unlink(missing_ok=True)
        return original(self, snapshot_id)

    monkeypatch.setattr(MetadataStore, "read_snapshot", expire_first)
    result = remove_orphan_files(table.context)
    own_lists = {f"manifest/{doc['baseManifestList']}", f"manifest/{doc['deltaManifestList']}"}
    assert own_lists <= set(result.deleted_paths)
    assert all(not p.startswith("part=") or "stray" not in p for p in result.deleted_paths)
    monkeypatch.undo()
    reopened = Table.open(str(root))
    assert reopened.to_arrow().num_rows == 24
    assert reopened.to_arrow(snapshot_id=2).num_rows == 16


def test_commit_landing_after_the_listing_keeps_its_files(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidates are listed first: a commit after the listing is seen when references are read (Paimon #3074)."""
    root = root_of(table)
    pending = table.write_files(id_part_rows(900, 4))  # written long ago by a slow job ...
    age_files(root, 10 * DAY_S)
    written = {str(Path(f.path).relative_to(root)) for f in pending}
    original = orphan_plan._discard_referenced

    def commit_then_read(*args: Any) -> int:
        table.commit_files(pending)  # ... and committed while the cleaner runs, after its listing
        return original(*args)

    monkeypatch.setattr(orphan_plan, "_discard_referenced", commit_then_read)
    result = remove_orphan_files(table.context)
    assert not written & set(result.deleted_paths)
    assert written <= files_under(root)
    assert Table.open(str(root)).to_arrow().num_rows == 28


def test_roots_that_never_settle_abort(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    original = MetadataStore.snapshot_ids

    def growing(self: MetadataStore) -> list[int]:
        table.append(id_part_rows(int(time.time_ns() % 1_000_000), 1))  # a commit lands between every two listings
        return original(self)

    monkeypatch.setattr(MetadataStore, "snapshot_ids", growing)
    with pytest.raises(MaintenanceError, match="kept changing"):
        remove_orphan_files(table.context)


def test_tag_deleted_while_read_is_skipped(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    original = MetadataStore.read_tag

    def deleted_first(self: MetadataStore, name: str) -> Any:
        (root_of(table) / "tag" / f"tag-{name}").unlink(missing_ok=True)
        return original(self, name)

    monkeypatch.setattr(MetadataStore, "read_tag", deleted_first)
    result = remove_orphan_files(table.context)
    assert len(result.deleted_paths) == 1  # the stray only: snapshot 2 still holds what the tag held


def test_root_listed_but_never_readable_aborts(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    def gone(self: MetadataStore, name: str) -> Any:
        raise SnapshotNotFoundError(f"tag {name!r} does not exist")

    monkeypatch.setattr(MetadataStore, "read_tag", gone)
    with pytest.raises(MaintenanceError, match="kept changing"):
        remove_orphan_files(table.context)


# --- deletion ---------------------------------------------------------------------------------------------------------


def test_deletes_in_batches_and_reports_only_confirmed_deletions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    t.append(id_part_rows(0, 4))
    strays = {f"part=1/bucket-0/{stray_name()}" for _ in range(7)}
    for rel in strays:
        (root / rel).write_bytes(b"x")
    age_files(root, 10 * DAY_S)
    calls: list[int] = []
    original = LocalFileIO.delete_files
    refused = sorted(strays)[0]

    def some_fail(self: LocalFileIO, paths: Any) -> list[str]:
        if all("/.tablefmt/" in p for p in paths):  # the run's claim (tableformat/claims.py)
            return original(self, paths)
        calls.append(len(paths))
        ok = [p for p in paths if not p.endswith(refused)]
        deleted = original(self, ok)
        if len(ok) != len(paths):
            raise DeleteFailedError("could not delete 1 file(s)", deleted, [f"{refused}: busy"])
        return deleted

    monkeypatch.setattr(LocalFileIO, "delete_files", some_fail)
    monkeypatch.setattr(deleter, "DELETE_BATCH", 3)
    result = remove_orphan_files(t.context, parallelism=2)
    assert sorted(calls) == [1, 3, 3]
    assert set(result.deleted_paths) == strays - {refused}
    assert result.failed == (f"{refused}: busy",)
    assert result.orphan_files == 7 and result.deleted_bytes == 6
    assert (root / refused).exists()
