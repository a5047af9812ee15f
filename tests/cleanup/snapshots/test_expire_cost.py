"""Cost follows the work: expiring k snapshots reads O(k) files and lists snapshot/ at most once, by
prefix and without a stat per file, whatever the length of the history."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from support.faults import faulty_context
from support.operations import expire_snapshots

from tableformat.io.fileio import FileInfo, FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.table import Table


class CountingIO(ForwardingFileIO):
    """Counts every metadata call by kind and directory (snapshot ids and file names left out)."""

    def __init__(self, inner: FileIO, root: str) -> None:
        super().__init__(inner)
        self.root = root
        self.calls: Counter[tuple[str, str]] = Counter()

    def _where(self, path: str) -> str:
        rel = path[len(self.root) + 1 :]
        return rel.split("/")[0] if "/" in rel else rel

    def read_bytes(self, path: str) -> bytes:
        self.calls["read", self._where(path)] += 1
        return super().read_bytes(path)

    def exists(self, path: str) -> bool:
        self.calls["exists", self._where(path)] += 1
        return super().exists(path)

    def file_exists(self, path: str) -> bool:
        self.calls["exists", self._where(path)] += 1
        return super().file_exists(path)

    def list_dir(self, path: str) -> list[FileInfo]:
        self.calls["list with stats", path[len(self.root) + 1 :]] += 1
        return super().list_dir(path)

    def list_names(self, path: str) -> list[str]:
        self.calls["list names", path[len(self.root) + 1 :]] += 1
        return super().list_names(path)

    def list_names_with_prefix(self, path: str, prefix: str) -> list[str]:
        self.calls[f"list names {prefix}*", path[len(self.root) + 1 :]] += 1
        return super().list_names_with_prefix(path, prefix)

    def stat_file(self, path: str) -> FileInfo | None:
        self.calls["stat", self._where(path)] += 1
        return super().stat_file(path)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self.calls["delete", ""] += len(paths)
        return super().delete_files(paths)


def expire_oldest(kit, history: int, k: int) -> tuple[Counter[tuple[str, str]], tuple[int, ...]]:
    table: Table = kit.table()
    for _ in range(history):
        table.append(kit.rows(2))
    expire_snapshots(table.context, retain_min=1, time_retained=0, limit=1)  # writes EARLIEST, as any run has
    counting = CountingIO(table.context.io, table.context.layout.root)
    # retain_max decides the range: when the per-run limit cuts it instead, the result also reports the backlog
    # (snapshots left expirable), which costs one listing of snapshot/ and O(log history) reads (reason.py)
    ctx = faulty_context(table.context, counting)
    result = expire_snapshots(ctx, retain_min=1, retain_max=history - 1 - k, time_retained="1d", limit=1000)
    return counting.calls, result.expired_snapshot_ids


def test_expiring_k_snapshots_costs_the_same_whatever_the_history(kit) -> None:
    short, expired_short = expire_oldest(kit, 15, 5)
    long, expired_long = expire_oldest(kit, 150, 5)
    assert expired_short == expired_long == (2, 3, 4, 5, 6)
    assert short == long  # every read, listing and existence check, by kind and directory
    assert short[("list names .expire-journal-*", "snapshot")] == 1
    assert not any(kind in ("list with stats", "list names") and where == "snapshot" for kind, where in short)
    assert short[("read", "snapshot")] == 5 + 2 + 1 + 2 + 1  # the expired ones, the new earliest and the one after
    # it (its commit time keeps the new earliest), the latest (it is read, not only checked: the plan keeps what it
    # holds), the LATEST and EARLIEST hints, and the new earliest again once the run holds its claim
    # (tableformat/claims.py): k + 6 reads of snapshot/, whatever the history
    assert short[("exists", "snapshot")] == 2  # EARLIEST - 1 and LATEST + 1
    assert short[("read", "manifest")] == 2 * 5 + 2 + 2  # the manifest lists of the expired ones, of the new earliest
    # and of the latest (appends only: no manifest is read)
