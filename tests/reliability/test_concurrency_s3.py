"""Concurrency on S3: a writer appending and dropping a partition while two expirer processes plan and delete with
parallel reads (RangeReader: the range read while the end is looked for, manifests read ahead), then exact checks.

What must hold (docs/reliability.md): every commit lands once; no file a present snapshot or tag references is ever
deleted (the tag holds the dropped partition's files); every present snapshot reads exactly; the expirers report no
error; once quiet, one more expiration leaves exactly the files the table references.
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.operations import expire_snapshots
from support.processes import join_all
from support.tables import reachable_files, row_counts

from tableformat.errors import CommitConflictError
from tableformat.table import Table

from .kit import SCHEMA, batch

pytestmark = pytest.mark.s3

SPAWN = multiprocessing.get_context("spawn")
JOIN_TIMEOUT_S = 240
INITIAL = [(i, f"p{i % 3}") for i in range(6)]
RETAIN: dict[str, Any] = {"retain_min": 2, "retain_max": 3, "time_retained": 0, "limit": 1000, "parallelism": 4}
COMMITS = 16
DROP_AFTER = 6
"""The writer drops partition p1 (initial rows only) after this many appends: expiration then deletes data files."""


def _row(commit: int) -> tuple[int, str]:
    return (1_000_000 + commit, f"w{commit % 2}")


def _writer(url: str, options: dict[str, Any], barrier: Any, out: str) -> None:
    table = Table.open(url, options)
    barrier.wait(timeout=120)
    ids: list[int] = []
    for commit in range(COMMITS):
        for _attempt in range(5):  # an id taken and expired meanwhile fails the commit, and it is retried
            try:
                ids.append(table.append(batch([_row(commit)])).id)
                break
            except CommitConflictError:
                continue
        if commit + 1 == DROP_AFTER:
            table.drop_partitions([{"part": "p1"}])
    Path(out).write_text(json.dumps({"snapshots": ids}))


def _expirer(url: str, options: dict[str, Any], barrier: Any, stop: Any, out: str) -> None:
    ctx = Table.open(url, options).context
    barrier.wait(timeout=120)
    runs, expired, errors = 0, [], []
    for _ in range(2_000):
        last = stop.is_set()
        try:
            expired += list(expire_snapshots(ctx, **RETAIN).expired_snapshot_ids)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        runs += 1
        if last:
            break
    Path(out).write_text(json.dumps({"runs": runs, "expired": expired, "errors": errors}))


def objects(table: Table) -> set[str]:
    layout = table.context.layout
    fs = table.context.io.fsspec_filesystem()
    prefix = layout.root.split("://", 1)[-1].rstrip("/") + "/"
    found = {path[len(prefix) :] for path in fs.find(layout.root)}
    return {path for path in found if not path.startswith(".tablefmt/audit/")}  # the ledger: docs/audit.md


@pytest.mark.slow
def test_a_writer_and_two_expirers_at_once_on_s3(s3_root: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    url, options = s3_root
    table = Table.create(url, SCHEMA, partition_keys=["part"], options={"write-only": "true"}, storage_options=options)
    for start in range(0, len(INITIAL), 2):
        table.append(batch(INITIAL[start : start + 2]))
    table.create_tag("keep", 3)
    first_new = table.latest_snapshot().id + 1  # type: ignore[union-attr]

    barrier, stop = SPAWN.Barrier(3), SPAWN.Event()
    outs = [str(tmp_path / f"{name}.json") for name in ("writer", "expirer-0", "expirer-1")]
    writer = SPAWN.Process(target=_writer, args=(url, options, barrier, outs[0]), name="writer")
    expirers = [
        SPAWN.Process(target=_expirer, args=(url, options, barrier, stop, out), name=f"expirer-{i}")
        for i, out in enumerate(outs[1:])
    ]
    for process in [writer, *expirers]:
        process.start()
    try:
        join_all([writer], JOIN_TIMEOUT_S)
    finally:
        stop.set()
        join_all(expirers, JOIN_TIMEOUT_S)
    assert [p.exitcode for p in [writer, *expirers]] == [0, 0, 0]
    written, *reports = (json.loads(Path(out).read_text()) for out in outs)

    # every commit landed once (the drop is one more snapshot), and the latest holds exactly the expected rows
    assert len(written["snapshots"]) == COMMITS
    drop = first_new + DROP_AFTER
    assert sorted(written["snapshots"]) == [i for i in range(first_new, first_new + COMMITS + 1) if i != drop]
    final = Table.open(url, options)
    kept_initial = Counter(r for r in INITIAL if r[1] != "p1")
    assert row_counts(final.to_arrow()) == kept_initial + Counter(_row(c) for c in range(COMMITS))

    # the expirers ran without error and expired snapshots that are gone now (both may report a snapshot they deleted
    # at the same moment: S3 has no delete that fails on a missing key, docs/reliability.md)
    assert [r["errors"] for r in reports] == [[], []]
    expired = {sid for r in reports for sid in r["expired"]}
    assert expired and not expired & {s.id for s in final.snapshots()}

    # nothing a present snapshot or the tag references is gone; each present snapshot and the tag read exactly
    reachable = reachable_files(final.context)
    assert reachable <= objects(final), sorted(reachable - objects(final))
    for snapshot in final.snapshots():
        assert final.to_arrow(snapshot_id=snapshot.id).num_rows == snapshot.total_record_count
    assert row_counts(final.to_arrow(tag="keep")) == Counter(INITIAL)

    # quiet again: one more expiration leaves exactly what the table references
    expire_snapshots(final.context, **RETAIN)
    after = Table.open(url, options)
    assert objects(after) == reachable_files(after.context)
    assert row_counts(after.to_arrow(tag="keep")) == Counter(INITIAL)
