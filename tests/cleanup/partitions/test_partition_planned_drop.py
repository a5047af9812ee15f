"""The drop commits the plan's own reading of the manifests while the table has not changed since planning.

Then it reads no manifest again and writes the DELETE copies of the planned files' entries: the same entries (and
the same bytes, entry for entry) the guarded re-check would write. Once the latest snapshot moved, the commit
re-plans as before (tests/cleanup/partitions/test_partition_concurrency.py shows what it keeps).
"""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.faults import faulty_context
from support.partition_tables import fill, ms, partitioned_table, partitions, rows
from support.warehouses import RequestLogFileIO

from tableformat.cleanup.kernel import run_operation
from tableformat.cleanup.partitions import PARTITION_EXPIRATION, PartitionExpireResult
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer, PlannedDrop
from tableformat.context import TableContext
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.store import MetadataStore
from tableformat.table import Table

NOW = ms(2026, 1, 20, 12)
DAYS = [{"dt": f"2026-01-{d:02d}"} for d in range(1, 16)]


@pytest.fixture
def manifest_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Names of the manifests read (full entries or records) while the fixture is active."""
    names: list[str] = []
    for method in ("read_manifest", "read_manifest_records"):
        original = getattr(MetadataStore, method)

        def counting(self: MetadataStore, name: str, _original: Any = original) -> Any:
            names.append(name)
            return _original(self, name)

        monkeypatch.setattr(MetadataStore, method, counting)
    yield names


def _table(path: Path, **options: str) -> Table:
    table = partitioned_table(path, [("dt", pa.string())], ["dt"], **{"partition.expiration-time": "10d", **options})
    fill(table, DAYS)
    table.append(pa.table({"id": [500, 501], "dt": ["2026-01-02", "2026-01-14"]}, schema=table.arrow_schema))
    return table


def _run(table: Table, *, planned: bool) -> PartitionExpireResult:
    ctx = TableContext.load(table.location)
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, NOW)
    if not planned:
        plan = dataclasses.replace(plan, base=None)  # as if the table had moved: the guarded re-check runs
    return PARTITION_EXPIRATION.execute(ctx, plan, config, None)


def _deltas(table: Table) -> list[list[ManifestEntry]]:
    """The entries of each drop snapshot's delta manifests."""
    store = table.context.store
    result = []
    for snapshot in table.snapshots():
        if snapshot.commit_user.startswith("tablefmt-partition-expiration-"):
            metas = store.read_manifest_list(snapshot.delta_manifest_list)
            result.append([e for m in metas for e in store.read_manifest(m.file_name)])
    return result


@pytest.mark.parametrize("batch_size", [None, "2"])
def test_an_unchanged_table_is_dropped_from_the_plan_without_reading_manifests_again(
    tmp_path: Path, manifest_reads: list[str], batch_size: str | None
) -> None:
    options = {} if batch_size is None else {"partition.expiration-batch-size": batch_size}
    table = _table(tmp_path / "fast", **options)
    shutil.copytree(table.location, tmp_path / "replanned")
    replanned = Table.open(str(tmp_path / "replanned"))
    ctx = TableContext.load(table.location)
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, NOW)
    manifest_reads.clear()
    result = PARTITION_EXPIRATION.execute(ctx, plan, config, None)
    assert manifest_reads == []  # neither the re-check nor a second batch read a manifest

    other = _run(replanned, planned=False)
    assert manifest_reads  # the re-check reads the manifests
    expired = [{"dt": f"2026-01-{d:02d}"} for d in range(1, 11)]
    assert [dict(p) for p in result.expired_partitions] == expired
    assert (result.files, result.rows, result.bytes) == (11, 21, other.bytes)
    assert result.expired_partitions == other.expired_partitions and len(result.snapshot_ids) == (
        1 if batch_size is None else 5
    )
    assert partitions(table) == partitions(replanned) == {(f"2026-01-{d:02d}",) for d in range(11, 16)}
    assert rows(table) == rows(replanned)
    fast, slow = _deltas(table), _deltas(replanned)
    assert [len(d) for d in fast] == [len(d) for d in slow]
    for fast_delta, slow_delta in zip(fast, slow):
        assert {e.kind for e in fast_delta} == {FileKind.DELETE}
        assert sorted(fast_delta, key=repr) == sorted(slow_delta, key=repr)


def test_a_moved_table_is_rechecked(tmp_path: Path, manifest_reads: list[str]) -> None:
    table = _table(tmp_path / "t")
    ctx = TableContext.load(table.location)
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, NOW)
    Table.open(table.location).append(pa.table({"id": [900], "dt": ["2026-01-03"]}, schema=table.arrow_schema))
    manifest_reads.clear()
    result = PARTITION_EXPIRATION.execute(ctx, plan, config, None)
    assert manifest_reads  # re-planned against the new latest snapshot
    assert {p["dt"] for p, _ in result.skipped_partitions} == {"2026-01-03"}
    assert partitions(table) == {("2026-01-03",)} | {(f"2026-01-{d:02d}",) for d in range(11, 16)}


def _records(store: MetadataStore, day: str) -> list[Any]:
    latest = store.latest_snapshot()
    assert latest is not None
    found = [r for m in store.manifests_of(latest) for r in store.read_manifest_records(m.file_name)]
    return [r for r in found if day.encode() in r.partition]


def test_the_committer_uses_a_planned_drop_only_on_its_base(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    store = table.context.store
    committer = Committer(store, store.latest_schema())

    def request(day: str, identifier: int) -> CommitRequest:
        base, records = store.latest_snapshot(), _records(store, day)
        assert base is not None and records
        return CommitRequest(
            kind=ChangeKind.DROP,
            overwrite_scope=({"dt": day},),
            expected_files=frozenset(r.identifier() for r in records),
            commit_identifier=identifier,
            planned=PlannedDrop(base, records),
        )

    stale = request("2026-01-01", 1)
    Table.open(table.location).append(pa.table({"id": [7], "dt": ["2026-01-05"]}, schema=table.arrow_schema))
    moved = committer.commit(stale)  # the base is no longer the latest: the guarded re-check decides
    assert moved.created and not moved.used_plan and moved.changed_partitions == ()
    current = committer.commit(request("2026-01-02", 2))
    assert current.created and current.used_plan
    assert [len(d) for d in _deltas(table)] == []  # (not partition expiration's commit user)
    left = {(f"2026-01-{d:02d}",) for d in range(3, 16)}
    assert partitions(table) == left
    assert sorted(r[0] for r in rows(table)) == sorted([7, 501, *range(4, 30)])
    assert current.snapshot is not None and current.snapshot.total_record_count == 28


def test_a_run_reads_each_manifest_and_manifest_list_once(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    log: list[tuple[str, str]] = []
    ctx = faulty_context(TableContext.load(table.location), RequestLogFileIO(table.context.io, log))
    latest = table.context.store.latest_snapshot()
    assert latest is not None
    result = run_operation(PARTITION_EXPIRATION, ctx, {}, dry_run=False, now_ms=NOW)
    assert len(result.expired_partitions) == 10
    root = table.context.layout.root
    read = Counter(path[len(root) + 1 :] for kind, path in log if kind == "read")
    manifests = {f"manifest/{m.file_name}" for m in table.context.store.manifests_of(latest)}
    lists = {f"manifest/{latest.base_manifest_list}", f"manifest/{latest.delta_manifest_list}"}
    assert {path: count for path, count in read.items() if path.startswith("manifest/")} == dict.fromkeys(
        manifests | lists, 1
    )
    # the commit finds the latest snapshot again (is it still the plan's base?): nothing else is read twice
    assert {path: count for path, count in read.items() if count > 1} == {
        "snapshot/LATEST": 2,
        f"snapshot/snapshot-{latest.id}": 2,
    }
