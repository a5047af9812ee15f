"""Fault sweep of partition expiration on a primary-key table pypaimon 2.1.0 wrote: every mutating call of the run
(the claim, the delta manifest, a manifest merge, the manifest lists, the snapshot, the LATEST hint, the claim's
removal) fails once, before or after it takes effect, transiently or as a crash (every later call refused).

After each failure pypaimon reads the latest snapshot as either the table before or the table after the drop, and
every earlier snapshot as before; no file a snapshot or tag names is missing. A re-run then finishes the drop:
exactly one new snapshot, DELETE copies of exactly the expired partitions' entries, pypaimon reads the kept
partition and keeps upserting. Nothing leaks: after a transient fault the files are the table's before plus those
the drop snapshot names; after a crash, orphan cleanup (cutoff after every file) leaves exactly that too.
"""

from __future__ import annotations

import itertools
import shutil
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.operations import expire_partitions, remove_orphan_files
from support.tables import files_under

from interop.helpers import Paimon, rows_of, snapshot_json
from interop.pk_upserts import (
    UpsertModel,
    assert_exact_drop,
    create_pk_table,
    missing_references,
    named_files,
    pk_options,
    upsert,
)
from tableformat import Table
from tableformat.context import TableContext

SEED = 11
ROUNDS = 5
EXPIRED = ["2020-01-01", "2020-01-02"]
NOW_MS = 1_893_456_000_000  # 2030-01-01: the 2020 partitions expire, 2099 does not
VARIANTS = [(mode, sticky) for sticky in (False, True) for mode in ("before", "after")]
OPTIONS = {"manifest.merge-min-count": "2"}  # the drop merges the base manifests: those writes are swept too


def _run(ctx: TableContext) -> Any:
    return expire_partitions(ctx, now_ms=NOW_MS)


def _chain(exc: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def _paimon_for(root: Path) -> Paimon:
    return Paimon(root.parent.parent)


@pytest.fixture
def base(pp: Paimon) -> tuple[Path, UpsertModel]:
    root = Path(create_pk_table(pp, "t", pk_options(**OPTIONS)))
    model = UpsertModel()
    for number in range(1, ROUNDS + 1):
        upsert(pp, "t", model.next_round(SEED, number))
    pp.create_tag("t", "keep", 2)
    return root, model


def _copy(root: Path, target: Path) -> Path:
    """A copy of the table in its own filesystem-catalog warehouse (``<target>/db.db/t``)."""
    copy = target / "db.db" / "t"
    shutil.copytree(root, copy)
    return copy


def _drop_files(root: Path, drop_id: int) -> set[str]:
    """The files the drop added: its snapshot and every metadata file it names that the table did not have."""
    meta, _ = named_files(root, snapshot_json(root, drop_id))
    return {f"snapshot/snapshot-{drop_id}", *meta}


def _without_claims(files: set[str]) -> set[str]:
    return {f for f in files if not f.startswith(".tablefmt/")}


def test_partition_expiration_on_a_pk_table_survives_a_fault_at_every_call(
    base: tuple[Path, UpsertModel], tmp_path: Path
) -> None:
    root, model = base
    pp = _paimon_for(root)
    history = {sid: rows_of(pp.read("t", snapshot_id=sid)) for sid in range(1, ROUNDS + 1)}
    before_files = files_under(root)
    after = UpsertModel()
    after.live = dict(model.live)
    for dt in EXPIRED:
        after.drop(dt)
    drop_id = ROUNDS + 1

    counting = Table.open(str(_copy(root, tmp_path / "count"))).context  # the base table stays untouched
    counter = FaultyFileIO(counting.io)
    _run(faulty_context(counting, counter))
    points = list(counter.calls)
    names = [path.rsplit("/", 2)[-1] for _, path in points]
    assert f"snapshot-{drop_id}" in names and any(n.startswith("manifest-list-") for n in names)
    assert {op for op, _ in points} >= {"write_bytes", "write_if_absent", "delete_files"}, points

    failures: list[str] = []
    cases = list(itertools.product(range(1, len(points) + 1), VARIANTS))
    for number, (point, (mode, sticky)) in enumerate(cases):
        label = f"point {point} {points[point - 1][0]} {names[point - 1]} {mode}{' crash' if sticky else ''}"
        case = _copy(root, tmp_path / f"case-{number}")
        case_pp = _paimon_for(case)
        try:
            ctx = Table.open(str(case)).context
            faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
            try:
                _run(faulty_context(ctx, faulty))
            except Exception as exc:
                assert any(isinstance(e, InjectedFault) for e in _chain(exc)), f"unrelated error {exc!r}"
            assert faulty.fired is not None, "the fault never fired"
            # right after the failure: the table before or after the drop, history intact, nothing missing
            assert rows_of(case_pp.read("t")) in (model.rows(), after.rows())
            assert missing_references(case) == []
            for sid, rows in history.items():
                assert rows_of(case_pp.read("t", snapshot_id=sid)) == rows, f"snapshot {sid}"

            _run(Table.open(str(case)).context)  # the re-run finishes the drop
            ids = sorted(int(p.name.split("-")[1]) for p in (case / "snapshot").glob("snapshot-*"))
            assert ids == [*history, drop_id], f"snapshots {ids}"
            assert_exact_drop(case, drop_id, EXPIRED)
            assert rows_of(case_pp.read("t")) == after.rows()
            assert rows_of(case_pp.read("t", tag="keep")) == model.by_round[2]
            if sticky:  # a crash leaves files behind: orphan cleanup must find every one, and nothing else
                remove_orphan_files(
                    Table.open(str(case)).context,
                    older_than=timedelta(0),
                    force=True,
                    parallelism=1,
                    now_ms=int(time.time() * 1000) + 60_000,
                )
            expected = before_files | _drop_files(case, drop_id)
            left = _without_claims(files_under(case)) - expected
            lost = expected - files_under(case)
            assert not left and not lost, f"left behind {sorted(left)}, lost {sorted(lost)}"
            assert missing_references(case) == []

            writes_on = UpsertModel()
            writes_on.live = dict(after.live)
            upsert(case_pp, "t", writes_on.next_round(SEED, ROUNDS + 1))
            assert rows_of(case_pp.read("t")) == writes_on.rows()
        except AssertionError as exc:
            failures.append(f"{label}: {exc}")
        finally:
            shutil.rmtree(case.parent.parent, ignore_errors=True)
    assert not failures, f"{len(failures)} of {len(cases)} failure points broke an invariant:\n" + "\n".join(failures)
