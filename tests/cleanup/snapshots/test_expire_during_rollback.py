"""An expiration that plans while a rollback removes the newest snapshots: it gives up with a note, deletes nothing,
and does not fail (only a rollback removes the latest snapshot; the run is due again once it ends)."""

from __future__ import annotations

import os
from pathlib import Path

from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS, files_under
from support.warehouses import table_with_commits

from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO


class RollbackAfterListing(ForwardingFileIO):
    """Deletes the newest snapshot files right after the first listing of ``snapshot/`` (as a rollback would)."""

    def __init__(self, inner: FileIO, newest: list[str]) -> None:
        super().__init__(inner)
        self.newest = newest

    def list_names(self, path: str) -> list[str]:
        names = self.inner.list_names(path)
        if path.rstrip("/").endswith("/snapshot") and self.newest:
            for file in self.newest:
                os.remove(file)
            self.newest = []
        return names


def test_the_latest_snapshot_gone_while_planning_is_a_note_not_a_failure(tmp_path: Path) -> None:
    table = table_with_commits(tmp_path / "t", 5)
    root = Path(table.location)
    (root / "snapshot" / "LATEST").unlink()  # the listing decides the latest
    before = files_under(root)
    racing = RollbackAfterListing(table.context.io, [str(root / "snapshot" / f"snapshot-{i}") for i in (4, 5)])
    result = expire_snapshots(table.context.with_io(racing), retain_min=1, time_retained=0, now_ms=FAR_FUTURE_MS)
    assert result.expired_snapshot_ids == () and result.deleted_paths == ()
    assert result.notes == ("the latest snapshot 5 disappeared while planning (a rollback removed it): nothing done",)
    assert before - files_under(root) == {"snapshot/snapshot-4", "snapshot/snapshot-5"}  # what the 'rollback' did
