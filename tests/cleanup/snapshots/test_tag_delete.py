"""Deleting a tag deletes the files only it held (Paimon's tag deletion), and nothing any other root needs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import FAR_FUTURE_MS, files_under
from support.warehouses import table_with_commits

from tableformat.errors import UndoRefusedError
from tableformat.table import Table

EVERYTHING = {"retain_min": 1, "retain_max": 1, "time_retained": 0, "now_ms": FAR_FUTURE_MS}


def _data(root: Path) -> set[str]:
    return {p for p in files_under(root) if p.startswith("bucket-")}


def _overwritten(root: Path, **options: str) -> Table:
    """Snapshots 1-3 append one file each, tag 'old' on 2; snapshot 4 overwrites everything; 1-3 expire."""
    table = table_with_commits(root, 3, **options)
    table.create_tag("old", 2)
    table.overwrite(pa.table({"id": [9]}, schema=table.arrow_schema))
    expire_snapshots(table.context, **EVERYTHING)
    assert table.context.store.snapshot_ids() == [4]
    return table


def test_a_tag_of_an_expired_snapshot_takes_its_own_files_with_it(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _overwritten(root)
    tagged = _data(root) - {f.path[len(str(root)) + 1 :] for f in table.files()}
    assert len(tagged) == 2  # the tag alone holds the files of appends 0 and 1
    table.delete_tag("old")
    assert _data(root) == {f.path[len(str(root)) + 1 :] for f in table.files()}
    assert not any(p.startswith("manifest/") and p in tagged for p in files_under(root))
    assert table.to_arrow()["id"].to_pylist() == [9] and table.maintenance.check().ok
    # nothing an orphan cleanup would still find: the tag's manifests and lists went too
    assert remove_orphan_files(table.context, now_ms=FAR_FUTURE_MS).deleted_paths == ()


def test_a_tag_of_a_retained_snapshot_leaves_every_file_to_that_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = table_with_commits(root, 3)
    table.create_tag("mid", 2)
    before = files_under(root)
    table.delete_tag("mid")
    assert before - files_under(root) == {"tag/tag-mid"}
    assert sorted(table.to_arrow(snapshot_id=2)["id"].to_pylist()) == [0, 1]


def test_with_an_undo_window_a_deleted_tag_comes_back(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _overwritten(root, **{"maintenance.undo-window": "1 d"})
    rows = sorted(table.to_arrow(tag="old")["id"].to_pylist())
    table.delete_tag("old")
    run = next(s.run for s in table.audit() if s.run.operation == "tag delete")
    assert run.counts.deferred_files == 4  # the two data files and the metadata only the tag used
    table.maintenance.undo(run.run_id)
    assert sorted(table.to_arrow(tag="old")["id"].to_pylist()) == rows == [0, 1]
    with pytest.raises(UndoRefusedError, match="undone already"):
        table.maintenance.undo(run.run_id)
