"""``check_table`` and ``tablefmt check``: missing files, size mismatches, orphans, exit codes."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.operations import remove_orphan_files
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, id_part_rows

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cli.orphans_command import check
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO


@pytest.fixture
def table(tmp_path: Path) -> Table:
    root = tmp_path / "t"
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    for i in range(3):
        t.append(id_part_rows(i * 100, 8))
    t.create_tag("v1", 1)
    (root / "part=2" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet").write_bytes(b"12345")
    age_files(root, 10 * DAY_S)
    return t


def root_of(table: Table) -> Path:
    return Path(table.context.layout.root)


def live_file(table: Table, index: int = 0) -> Path:
    path = Path(table.files()[index].path)
    assert path.is_file()
    return path


def test_healthy_table(table: Table) -> None:
    result = check_table(table.context)
    assert result.ok
    assert (result.snapshots, result.tags, result.roots) == (3, 1, 4)
    assert result.missing_files == () and result.size_mismatches == () and result.errors == ()
    # 12 data files, 3 delta manifests, 6 manifest lists
    assert result.referenced_files == 12 + 3 + 6
    assert (result.orphan_files, result.orphan_bytes) == (1, 5)
    assert result.reclaimable_bytes >= 5 and result.reclaimable_note
    dry = remove_orphan_files(table.context, dry_run=True)
    assert (dry.orphan_files, dry.orphan_bytes) == (result.orphan_files, result.orphan_bytes)
    doc = result.to_json()
    for key in ("ok", "snapshots", "missing_files", "orphan_files", "orphan_bytes", "reclaimable_bytes"):
        assert key in doc


def test_finds_a_deleted_data_file(table: Table) -> None:
    victim = live_file(table, 2)
    victim.unlink()
    result = check_table(table.context)
    assert not result.ok
    rel = str(victim.relative_to(root_of(table)))
    assert [p.path for p in result.missing_files] == [rel]
    assert result.missing_files[0].kind == "data" and result.missing_files[0].actual_size is None
    assert result.to_json()["missing_files"] == 1 and [p["path"] for p in result.to_json()["missing"]] == [rel]


def test_finds_a_size_mismatch(table: Table) -> None:
    victim = live_file(table, 1)
    recorded = victim.stat().st_size
    with victim.open("ab") as handle:
        handle.write(b"garbage")
    result = check_table(table.context)
    assert not result.ok and result.missing_files == ()
    (problem,) = result.size_mismatches
    assert problem.path == str(victim.relative_to(root_of(table)))
    assert (problem.expected_size, problem.actual_size) == (recorded, recorded + 7)


def test_finds_missing_and_resized_metadata(table: Table) -> None:
    store = table.context.store
    snapshot = store.read_snapshot(3)
    manifest = store.manifests_of(snapshot)[-1].file_name
    (root_of(table) / "manifest" / manifest).unlink()
    with (root_of(table) / "manifest" / snapshot.base_manifest_list).open("ab") as handle:
        handle.write(b"x")
    result = check_table(table.context)
    assert not result.ok
    assert [(p.kind, p.path) for p in result.missing_files] == [("manifest", f"manifest/{manifest}")]
    assert [(p.kind, p.path) for p in result.size_mismatches] == [
        ("manifest-list", f"manifest/{snapshot.base_manifest_list}")
    ]


def test_files_deleted_after_their_snapshot_expired_are_not_missing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    t.append(id_part_rows(0, 8))
    replaced = [Path(f.path) for f in t.files()]
    t.overwrite(id_part_rows(100, 8))  # snapshot 2 DELETEs the files of snapshot 1
    assert check_table(t.context).ok
    replaced[0].unlink()
    assert not check_table(t.context).ok  # snapshot 1 still reads it
    (root / "snapshot" / "snapshot-1").unlink()  # as expiration would
    for path in replaced[1:]:
        path.unlink()
    result = check_table(t.context)
    assert result.ok, result.to_json()
    assert result.snapshots == 1


def test_unreadable_manifest_is_an_error(table: Table) -> None:
    store = table.context.store
    manifest = store.manifests_of(store.read_snapshot(2))[-1].file_name
    (root_of(table) / "manifest" / manifest).write_bytes(b"garbage")
    result = check_table(table.context)
    assert not result.ok
    assert any(manifest in error for error in result.errors)
    assert result.orphan_files is None
    # what could be read is verified once: 8 data files of the two other manifests, 3 manifests, 6 lists
    assert (result.referenced_files, len(result.missing_files)) == (8 + 3 + 6, 0)
    assert [p.path for p in result.size_mismatches] == [f"manifest/{manifest}"]


def test_cli_exit_codes_and_json(table: Table) -> None:
    runner = CliRunner()
    ok = runner.invoke(check, [str(root_of(table)), "--json"])
    assert ok.exit_code == 0, ok.output
    doc = json.loads(ok.output)
    assert doc["ok"] is True and doc["orphan_files"] == 1 and doc["missing_files"] == 0

    text = runner.invoke(check, [str(root_of(table))])
    assert text.exit_code == 0 and text.output.startswith("ok:")

    victim = live_file(table)
    victim.unlink()
    bad = runner.invoke(check, [str(root_of(table)), "--json"])
    assert bad.exit_code == 1
    missing = json.loads(bad.output)
    assert missing["missing_files"] == 1 and [p["path"] for p in missing["missing"]] == [
        str(victim.relative_to(root_of(table)))
    ]
    bad_text = runner.invoke(check, [str(root_of(table))])
    assert bad_text.exit_code == 1 and "missing data" in bad_text.output


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(check, [str(tmp_path / "nothing")])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error:") and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_reclaimable_counts_what_expiration_would_free(tmp_path: Path) -> None:
    root = tmp_path / "t"
    options = {"write-only": "true", "snapshot.num-retained.min": "1", "snapshot.time-retained": "0 s"}
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options=options)
    t.append(id_part_rows(0, 8))
    replaced = sum(f.file_size for f in t.files())
    t.overwrite(id_part_rows(100, 8))
    t.append(id_part_rows(200, 8))
    result = check_table(t.context)
    assert result.ok and result.orphan_files == 0
    assert result.reclaimable_note.startswith("orphan bytes + bytes an expiration"), result.reclaimable_note
    assert result.reclaimable_bytes >= replaced


class _ListAndReadLog(ForwardingFileIO):
    """Logs every directory listing and every file read."""

    def __init__(self, inner: FileIO, log: list[tuple[str, str]]) -> None:
        super().__init__(inner)
        self.log = log

    def list_dir(self, path: str) -> list[FileInfo]:
        self.log.append(("list", path))
        return self.inner.list_dir(path)

    def list_dir_without_file_stats(self, path: str) -> list[FileInfo]:
        self.log.append(("list", path))
        return self.inner.list_dir_without_file_stats(path)

    def read_bytes(self, path: str) -> bytes:
        self.log.append(("read", path))
        return self.inner.read_bytes(path)


def test_check_lists_each_data_directory_once_and_reads_each_manifest_once(table: Table) -> None:
    log: list[tuple[str, str]] = []
    ctx = table.context
    result = check_table(ctx.with_io(_ListAndReadLog(ctx.io, log)))
    assert result.ok and result.orphan_files == 1
    root = root_of(table)
    buckets = sorted(str(root / f"part={p}" / "bucket-0") for p in range(4))
    listed = Counter(path for op, path in log if op == "list")
    assert {path: listed[path] for path in buckets} == dict.fromkeys(buckets, 1)
    manifests = sorted(p.name for p in (root / "manifest").iterdir() if not p.name.startswith("manifest-list-"))
    assert len(manifests) == 3
    read = Counter(Path(path).name for op, path in log if op == "read")
    assert {name: read[name] for name in manifests} == dict.fromkeys(manifests, 1)


def test_files_a_tag_keeps_after_a_rewrite_are_verified(tmp_path: Path) -> None:
    """A root without DELETE entries (snapshot 1, the tag) sharing manifests with one that has them (the overwrite's
    snapshot 2 merges them): the files only the old root keeps are verified for it."""
    root = tmp_path / "t"
    t = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options={"write-only": "true"})
    t.append(id_part_rows(0, 8))
    t.create_tag("v1", 1)
    replaced = sorted(Path(f.path) for f in t.files())
    t.overwrite(id_part_rows(100, 8))
    t.append(id_part_rows(200, 8))
    assert check_table(t.context).ok
    replaced[0].unlink()
    (root / "snapshot" / "snapshot-1").unlink()  # expired; the tag still reads the file
    result = check_table(t.context)
    assert [(p.path, p.kind, p.referenced_by) for p in result.missing_files] == [
        (str(replaced[0].relative_to(root)), "data", "tag v1")
    ]
    # 12 data files, 3 manifests, 6 manifest lists (the tag keeps snapshot 1's two)
    assert (result.snapshots, result.tags, result.referenced_files) == (2, 1, 12 + 3 + 6)
