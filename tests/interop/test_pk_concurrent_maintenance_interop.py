"""tablefmt maintaining a primary-key table while pypaimon 2.1.0 upserts into it from another process.

A child process (interop/pk_upserts.py) commits rounds of upserts and deletes, one snapshot each; meanwhile this
process expires snapshots again and again (retaining two), and, in the second test, also removes orphan files with a
10-minute cutoff (everything written before the test started is aged two hours: old enough, while the writer's files
in flight are not). Afterwards, and checked independently of tablefmt: every file any snapshot or tag names exists
(manifest lists, the changelog's too, manifests, live data files, changelog files), pypaimon reads every retained
snapshot and the tag as the reference model says, and the final read is the model's last round. The invariants hold
whatever the snapshot-expiration and orphan-cleanup work on changelogs and index files leaves behind; counts of
reclaimed files are not asserted.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any

from support.operations import expire_snapshots, remove_orphan_files
from support.tables import age_files, files_under

from interop.helpers import Paimon, rows_of
from interop.pk_upserts import (
    Upserter,
    UpsertModel,
    arrow_rows,
    create_pk_table,
    missing_references,
    model_of,
    pk_options,
    upsert,
)
from tableformat import Table

SEED = 4
BEFORE = 3
"""Rounds committed before the writer process starts (snapshots 1..3; the tag ``keep`` is on snapshot 2)."""
ROUNDS = 16
RETAIN: dict[str, Any] = {"retain_min": 2, "retain_max": 3, "time_retained": dt.timedelta(0)}


def _prepared(pp: Paimon) -> Path:
    root = Path(create_pk_table(pp, "t", pk_options()))
    model = UpsertModel()
    for number in range(1, BEFORE + 1):
        upsert(pp, "t", model.next_round(SEED, number))
    pp.create_tag("t", "keep", 2)
    return root


def _run_alongside(pp: Paimon, root: Path, maintain: Any) -> tuple[dict[int, int], int]:
    """Start the writer for rounds BEFORE+1.., call ``maintain()`` until it has finished (once more after); the
    writer's {round: snapshot id} and how many maintenance runs began while it was running."""
    writer = Upserter(pp.warehouse, "t", SEED, BEFORE + 1, ROUNDS, root.parent / "upserts.jsonl")
    during = 0
    while writer.running():
        maintain()
        during += 1
    commits = writer.finish()
    maintain()
    return commits, during


def _check(pp: Paimon, root: Path, commits: dict[int, int]) -> None:
    """No file any snapshot or tag names is missing; pypaimon reads every retained snapshot, the tag and the latest
    as the model says, and writes on."""
    assert sorted(commits) == list(range(BEFORE + 1, BEFORE + ROUNDS + 1))
    round_of = {**{n: n for n in range(1, BEFORE + 1)}, **{sid: n for n, sid in commits.items()}}
    assert sorted(round_of) == list(range(1, BEFORE + ROUNDS + 1)), "one snapshot per commit, in order"
    assert missing_references(root) == []
    model = model_of(SEED, range(1, BEFORE + ROUNDS + 1))
    retained = sorted(int(p.name.split("-")[1]) for p in (root / "snapshot").glob("snapshot-*"))
    assert retained[-1] == max(round_of) and len(retained) <= 3
    for snapshot_id in retained:
        expected = model.by_round[round_of[snapshot_id]]
        assert rows_of(pp.read("t", snapshot_id=snapshot_id)) == expected, f"snapshot {snapshot_id}"
    assert rows_of(pp.read("t", tag="keep")) == model.by_round[2]
    assert rows_of(pp.read("t")) == model.rows()
    number = BEFORE + ROUNDS + 1
    upsert(pp, "t", model.next_round(SEED, number))  # pypaimon still writes after all of it
    assert rows_of(pp.read("t")) == model.rows()


def test_snapshots_expired_again_and_again_while_pypaimon_upserts(pp: Paimon) -> None:
    root = _prepared(pp)
    expired: list[int] = []

    def expire() -> None:
        expired.extend(expire_snapshots(Table.open(str(root)).context, **RETAIN).expired_snapshot_ids)

    commits, during = _run_alongside(pp, root, expire)
    assert during >= 2, "expiration never ran while the writer did"
    assert expired and expired == sorted(set(expired)), expired
    _check(pp, root, commits)


def test_orphans_removed_and_snapshots_expired_while_pypaimon_upserts(pp: Paimon) -> None:
    root = _prepared(pp)
    pp.uncommitted_write("t", arrow_rows(model_of(SEED, range(1, BEFORE + 1)).next_round(SEED, 99)))  # a crash
    strays = {
        f"dt=2099-01-01/bucket-0/data-{uuid.uuid4()}-0.parquet",
        f"manifest/manifest-{uuid.uuid4()}-0",
        f"manifest/manifest-list-{uuid.uuid4()}-1",
    }
    for rel in strays:
        (root / rel).write_bytes(b"left behind by a crashed writer")
    uncommitted = {p for p in files_under(root) if p.endswith(".parquet") and "/data-" in p} - _named_data(root)
    assert len(uncommitted) >= 3  # one data file per partition at least (strays included)
    age_files(root, 2 * 3600)  # old enough for the 10-minute cutoff below; files written from now on are not
    deleted: list[str] = []
    failed: list[str] = []

    def maintain() -> None:
        ctx = Table.open(str(root)).context
        expire_snapshots(ctx, **RETAIN)
        result = remove_orphan_files(ctx, older_than=dt.timedelta(minutes=10), force=True)
        deleted.extend(result.deleted_paths)
        failed.extend(result.failed)

    commits, during = _run_alongside(pp, root, maintain)
    assert during >= 2, "maintenance never ran while the writer did"
    assert failed == []
    assert uncommitted | {s for s in strays if "/data-" in s} <= set(deleted)
    assert {s for s in strays if s.startswith("manifest/")} <= set(deleted)
    _check(pp, root, commits)


def _named_data(root: Path) -> set[str]:
    """Data files (relative paths) some snapshot or tag names, ADD or DELETE."""
    from interop.helpers import metadata_roots, referenced_files

    named: set[str] = set()
    for _, metadata in metadata_roots(root).values():
        named |= referenced_files(root, metadata, named=True)
    return named
