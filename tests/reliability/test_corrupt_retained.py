"""Unreadable metadata of the newest snapshot stops every deletion (G8), also when expiration's range ends below it.

A snapshot file is created by an atomic create-if-absent (A1): it is never visible half written, so a truncated or
unparseable ``snapshot-N`` is damage, not a commit in progress. Expiration counts its retention from the latest
snapshot and keeps everything the latest snapshot holds, so it reads that snapshot, its manifest lists and those of
its manifests that may hold a file the run would delete; any of them unreadable stops the run (CLI, API, dry run,
``tablefmt maintain``, the after-commit hook) before anything is deleted, with one line naming the file.

The table: eight snapshots; snapshot 3 overwrites partition p1 and snapshot 5 drops p2 (so expiring them deletes
data files), snapshot 8 appends to p0, p1 and p2 (its new manifest may hold files of the partitions expiration
deletes from). With ``--retain-min 2`` the range ends at snapshot 7, with ``--limit 3`` at snapshot 4: the planner
needs no content of snapshot 8 to find the range, only its id.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.operations import expire_snapshots
from support.tables import context_with_io, files_under
from support.warehouses import table_files

from tableformat.errors import MaintenanceError
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table

from .kit import SCHEMA, assert_one_line_error, batch, copy_table, run_cli

CORPUS = Path(__file__).resolve().parent.parent / "resources" / "bad_input" / "snapshot"
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.name != "README.md")
UNSAFE_MARKERS = ("../", "/etc/passwd", "s3://")
OPTIONS = {"write-only": "true", "file-operation.thread-num": "2"}
RETAIN = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "100"}

SETTINGS = {
    "retain-min-2": ["--retain-min", "2", "--time-retained", "0s"],  # ends at 7: the latest is only counted
    "limit-3": ["--retain-min", "1", "--time-retained", "0s", "--limit", "3"],  # ends at 4
    "retain-max-1": ["--retain-min", "1", "--retain-max", "1"],  # ends at 8: the walk reads the latest itself
}


def build(root: Path, options: dict[str, str]) -> Table:
    table = Table.create(str(root), SCHEMA, partition_keys=["part"], options=options)
    table.append(batch([(0, "p0"), (1, "p1")]))
    table.append(batch([(2, "p1"), (3, "p2")]))
    table.overwrite(batch([(4, "p1")]), {"part": "p1"})
    table.append(batch([(5, "p0")]))
    table.drop_partitions([{"part": "p2"}])
    table.append(batch([(6, "p1")]))
    table.append(batch([(7, "p3")]))
    table.append(batch([(8, "p0"), (9, "p1"), (10, "p2")]))
    return table


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pristine") / "t"
    build(root, OPTIONS)
    return root


@pytest.fixture
def table_root(pristine: Path, tmp_path: Path) -> Iterator[Path]:
    yield copy_table(pristine, tmp_path / "t")


def damage_snapshot(root: Path, snapshot_id: int, how: str) -> Path:
    """``half``: the first half of the file's bytes; otherwise a corpus file, placeholders filled from the original."""
    path = root / "snapshot" / f"snapshot-{snapshot_id}"
    original = Table.open(str(root)).context.store.read_snapshot(snapshot_id)
    if how == "half":
        halve(path)
        return path
    data = (CORPUS / how).read_bytes().replace(b"@ID@", str(snapshot_id).encode())
    data = data.replace(b"@BASE@", original.base_manifest_list.encode())
    path.write_bytes(data.replace(b"@DELTA@", original.delta_manifest_list.encode()))
    return path


def halve(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def latest_metadata(root: Path, which: str) -> Path:
    """A file of snapshot 8: its base or delta manifest list, or the manifest its delta list names."""
    store = Table.open(str(root)).context.store
    latest = store.read_snapshot(8)
    if which == "snapshot":
        return root / "snapshot" / "snapshot-8"
    if which == "base-list":
        return root / "manifest" / latest.base_manifest_list
    if which == "delta-list":
        return root / "manifest" / latest.delta_manifest_list
    (added,) = store.read_manifest_list(latest.delta_manifest_list)
    return root / "manifest" / added.file_name


def test_the_table_expires_files_when_nothing_is_damaged(table_root: Path) -> None:
    """The control: each setting deletes snapshots and data files, so refusing below is not a no-op."""
    for name, args in SETTINGS.items():
        root = copy_table(table_root, table_root.parent / name)
        result = run_cli("expire", str(root), "--dry-run", "--json", *args)
        assert result.exit_code == 0, result.output
        planned = json.loads(result.stdout)
        assert planned["expired_snapshot_ids"] and planned["deleted_data_files"], (name, planned)


@pytest.mark.parametrize("how", ["half", "garbage.json", "truncated.json", "empty"])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_expire_cli_stops_at_a_damaged_latest_snapshot(table_root: Path, setting: str, how: str) -> None:
    victim = damage_snapshot(table_root, 8, how)
    before = files_under(table_root)
    for dry in ([], ["--dry-run"]):
        result = run_cli("expire", str(table_root), *SETTINGS[setting], *dry)
        assert result.exit_code == 1
        assert_one_line_error(result, str(victim))
        assert files_under(table_root) == before


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_expire_api_stops_at_any_unreadable_latest_snapshot(table_root: Path, name: str) -> None:
    damage_snapshot(table_root, 8, name)
    before = files_under(table_root)
    for dry_run in (True, False):
        with pytest.raises(MaintenanceError) as raised:
            expire_snapshots(Table.open(str(table_root)).context, retain_min=2, time_retained=0, dry_run=dry_run)
        message = str(raised.value)
        assert "\n" not in message
        assert "snapshot-8" in message or any(marker in message for marker in UNSAFE_MARKERS), message
        assert files_under(table_root) == before


@pytest.mark.parametrize("which", ["base-list", "delta-list", "delta-manifest"])
@pytest.mark.parametrize("setting", ["retain-min-2", "limit-3"])
def test_expire_stops_at_damaged_avro_of_the_latest_snapshot(table_root: Path, setting: str, which: str) -> None:
    victim = latest_metadata(table_root, which)
    halve(victim)
    before = files_under(table_root)
    result = run_cli("expire", str(table_root), *SETTINGS[setting])
    assert result.exit_code == 1
    assert_one_line_error(result, victim.name)
    assert files_under(table_root) == before


@pytest.mark.parametrize("which", ["snapshot", "base-list", "delta-list", "delta-manifest"])
def test_maintain_reports_the_table_failed_and_deletes_nothing(tmp_path: Path, which: str) -> None:
    warehouse = tmp_path / "wh"
    damaged, healthy = warehouse / "db.db" / "damaged", warehouse / "db.db" / "healthy"
    build(damaged, {**OPTIONS, **RETAIN})
    build(healthy, {**OPTIONS, **RETAIN})
    victim = latest_metadata(damaged, which)
    halve(victim)
    before = table_files(damaged)
    result = run_cli("maintain", "--once", str(warehouse))
    assert result.exit_code == 1, result.output
    failed = [line for line in result.output.splitlines() if line.startswith("FAILED db.damaged:")]
    assert len(failed) == 1 and victim.name in failed[0] and "nothing was deleted" in failed[0], result.output
    assert any(line.startswith("db.healthy: ok") for line in result.output.splitlines()), result.output
    assert table_files(damaged) == before
    assert not (healthy / "snapshot" / "snapshot-1").exists()  # the healthy table was expired


class NewerSnapshotLands(ForwardingFileIO):
    """Once the commit that creates ``snapshot-<after>`` has moved LATEST (its last write), a damaged
    ``snapshot-<after + 1>`` appears (another writer's, damaged on disk): what the after-commit expiration of that
    commit finds."""

    def __init__(self, inner: FileIO, after: int) -> None:
        super().__init__(inner)
        self.after = after
        self.created: tuple[str, bytes] | None = None

    def write_if_absent(self, path: str, data: bytes) -> bool:
        created = super().write_if_absent(path, data)
        if created and path.endswith(f"/snapshot/snapshot-{self.after}"):
            self.created = path, data
        return created

    def write_bytes(self, path: str, data: bytes) -> None:
        super().write_bytes(path, data)
        if self.created is not None and path.endswith("/snapshot/LATEST"):
            created, content = self.created
            self.created = None
            newer = content.replace(f'"id": {self.after},'.encode(), f'"id": {self.after + 1},'.encode())
            self.inner.write_bytes(f"{created[: -len(str(self.after))]}{self.after + 1}", newer[: len(newer) // 2])


@pytest.mark.parametrize("damaged", [False, True])
def test_after_commit_expiration_stops_at_a_corrupt_latest_and_the_commit_succeeds(
    table_root: Path, caplog: pytest.LogCaptureFixture, damaged: bool
) -> None:
    """Undamaged (the control), the commit of snapshot 9 expires 1..7 (retain-min 2); with a damaged snapshot 10 it
    deletes nothing, logs why, and the commit still succeeds."""
    table = Table.open(str(table_root))
    table.set_options({**RETAIN, "write-only": "false"})
    io = NewerSnapshotLands(table.context.io, after=9) if damaged else table.context.io
    committing = Table(context_with_io(table_root, io))
    before = files_under(table_root)
    with caplog.at_level(logging.WARNING, logger="tableformat"):
        snapshot = committing.append(batch([(11, "p1")]))
    assert snapshot is not None and snapshot.id == 9
    warnings = [r.getMessage() for r in caplog.records if "after commit failed" in r.getMessage()]
    if not damaged:
        assert not warnings and not (table_root / "snapshot" / "snapshot-7").exists()
        return
    assert (table_root / "snapshot" / "snapshot-10").is_file()
    assert before <= files_under(table_root), sorted(before - files_under(table_root))
    assert warnings and all("snapshot-10" in w for w in warnings), warnings
