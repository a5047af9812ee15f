"""Schema changes under faults and concurrency.

* Crash sweep: every mutating call of a column change (``update_schema``) and of ``append(..., merge_schema=True)``
  (the schema write, then the data files, manifests and snapshot) fails once, before or after it takes effect,
  transiently or as a crash. Right after the failure the table reads exactly its old or its new state (a schema
  file is whole or absent); a re-run (same commit user and identifier) ends with exactly one new schema, one new
  snapshot and the rows once; after a transient fault no file is left that nothing references.
* Two processes evolving the schema (each adding its own columns, one at a time) while a third appends with
  ``merge_schema`` and filled columns: every column added exactly once, every row there once, schema ids dense.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.processes import join_all
from support.tables import files_under, reachable_files

from tableformat.context import TableContext
from tableformat.table import Table

from .kit import chain

SPAWN = multiprocessing.get_context("spawn")
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
VARIANTS = [(mode, sticky) for sticky in (False, True) for mode in ("before", "after")]
COMMIT_USER = "schema-sweep"
COMMIT_ID = 7


def _base(root: Path) -> Path:
    table = Table.create(str(root), SCHEMA, ["part"], {"write-only": "true"})
    table.append(pa.table({"id": [1, 2], "part": ["a", "b"]}, schema=SCHEMA))
    return root


def _schemas(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "schema").iterdir())


def _rows(root: Path) -> list[dict[str, Any]]:
    return sorted(Table.open(str(root)).to_arrow().to_pylist(), key=lambda r: r["id"])


def _sweep(tmp_path: Path, run: Callable[[Table], Any], check: Callable[[Path, bool], None]) -> int:
    """Fail every call point of ``run`` in every variant; ``check(root, settled)`` after the failure (False) and
    after the re-run (True). Returns the number of call points."""
    counting_root = _base(tmp_path / "count")
    counter = FaultyFileIO(Table.open(str(counting_root)).context.io)
    run(Table(faulty_context(Table.open(str(counting_root)).context, counter)))
    points = len(counter.calls)
    failures = []
    for number, (point, (mode, sticky)) in enumerate(itertools.product(range(1, points + 1), VARIANTS)):
        root = _base(tmp_path / f"case-{number}")
        ctx: TableContext = Table.open(str(root)).context
        faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
        label = f"point {point} {counter.calls[point - 1][0]} {counter.calls[point - 1][1].rsplit('/', 1)[-1]} {mode}"
        try:
            try:
                run(Table(faulty_context(ctx, faulty)))
            except Exception as exc:
                assert any(isinstance(e, InjectedFault) for e in chain(exc)), f"unrelated error {exc!r}"
            assert faulty.fired is not None, "the call point was never reached"
            check(root, False)
            run(Table.open(str(root)))
            check(root, True)
            if not sticky:  # a transient fault leaves nothing behind that no snapshot references
                leftovers = files_under(root) - reachable_files(Table.open(str(root)).context)
                assert leftovers == set(), leftovers
        except Exception as exc:
            failures.append(f"{label}{' crash' if sticky else ''}: {type(exc).__name__}: {exc}")
    assert failures == []
    return points


def test_a_column_change_survives_a_fault_at_its_schema_write(tmp_path: Path) -> None:
    def run(table: Table) -> None:
        if "total" in table.context.store.latest_schema().field_names:
            return  # the re-run of a change that landed: nothing left to do
        with table.update_schema() as update:
            update.add_column("total", "DOUBLE")
            update.rename_column("id", "key")

    def check(root: Path, settled: bool) -> None:
        schemas = _schemas(root)
        assert schemas in (["schema-0"], ["schema-0", "schema-1"]) and (not settled or len(schemas) == 2)
        names = [f.name for f in Table.open(str(root)).schema.fields]
        assert names == (["key", "part", "total"] if len(schemas) == 2 else ["id", "part"])
        ids = [r.get("key", r.get("id")) for r in Table.open(str(root)).to_arrow().to_pylist()]
        assert sorted(ids) == [1, 2]

    assert _sweep(tmp_path, run, check) == 1


def test_a_merging_append_survives_a_fault_at_every_call(tmp_path: Path) -> None:
    data = pa.table({"id": [3], "part": ["a"], "extra": ["x"]})

    def run(table: Table) -> None:
        table.append(data, merge_schema=True, commit_user=COMMIT_USER, commit_identifier=COMMIT_ID)

    def check(root: Path, settled: bool) -> None:
        schemas = _schemas(root)
        assert schemas in (["schema-0"], ["schema-0", "schema-1"])
        snapshots = sorted(p.name for p in (root / "snapshot").iterdir() if p.name.startswith("snapshot-"))
        assert snapshots in (["snapshot-1"], ["snapshot-1", "snapshot-2"])
        assert len(snapshots) == 1 or len(schemas) == 2  # the schema is committed before the data
        rows = _rows(root)
        old = [{"id": 1, "part": "a"}, {"id": 2, "part": "b"}]
        if len(schemas) == 2:
            old = [{**r, "extra": None} for r in old]
        expected = [*old, {"id": 3, "part": "a", "extra": "x"}] if len(snapshots) == 2 else old
        assert rows == expected
        if settled:
            assert (len(schemas), len(snapshots)) == (2, 2)

    assert _sweep(tmp_path, run, check) == 7  # schema, data file, manifest, two manifest lists, snapshot, LATEST


# --- processes -----------------------------------------------------------------------------------------------------
EVOLVERS = 2
COLUMNS_EACH = 6
APPENDS = 12


def _evolver(root: str, number: int, barrier: Any) -> None:
    table = Table.open(root)
    barrier.wait(timeout=120)
    for column in range(COLUMNS_EACH):
        with table.update_schema() as update:
            update.add_column(f"c{number}_{column}", "BIGINT")


def _appender(root: str, barrier: Any, out: str) -> None:
    table = Table.open(root)
    barrier.wait(timeout=120)
    ids = []
    for i in range(APPENDS):
        data = pa.table({"id": [100 + i], "part": ["p"], "w": [i]})  # its own column, added by merging
        snapshot = table.append(data, merge_schema=True, fill_missing_columns=True)
        assert snapshot is not None
        ids.append(snapshot.id)
    Path(out).write_text(json.dumps(ids))


def test_two_evolvers_and_an_appender_lose_no_column_and_no_row(tmp_path: Path) -> None:
    root = _base(tmp_path / "t")
    barrier = SPAWN.Barrier(EVOLVERS + 1)
    out = tmp_path / "appender.json"
    processes = [
        SPAWN.Process(target=_evolver, args=(str(root), n, barrier), name=f"evolver-{n}") for n in range(EVOLVERS)
    ]
    processes.append(SPAWN.Process(target=_appender, args=(str(root), barrier, str(out)), name="appender"))
    for process in processes:
        process.start()
    join_all(processes, 240)
    assert [p.exitcode for p in processes] == [0] * (EVOLVERS + 1)
    table = Table.open(str(root))
    added = {f"c{n}_{c}" for n in range(EVOLVERS) for c in range(COLUMNS_EACH)}
    names = [f.name for f in table.schema.fields]
    assert sorted(names) == sorted(["id", "part", "w", *added])  # each column once
    count = EVOLVERS * COLUMNS_EACH + 1  # the appender's merge adds "w" once
    assert _schemas(root) == sorted(f"schema-{i}" for i in range(count + 1))  # dense: 0..count, none twice
    assert [f.id for f in table.schema.fields][:2] == [0, 1]
    assert sorted(f.id for f in table.schema.fields) == list(range(count + 2))
    assert table.schema.highest_field_id == count + 1
    for n in range(EVOLVERS):  # each evolver's columns in its own order
        mine = [name for name in names if name.startswith(f"c{n}_")]
        assert mine == [f"c{n}_{c}" for c in range(COLUMNS_EACH)]
    rows = sorted(table.to_arrow().select(["id", "w"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "w": None}, {"id": 2, "w": None}, *({"id": 100 + i, "w": i} for i in range(APPENDS))]
    assert json.loads(out.read_text()) == sorted(json.loads(out.read_text()))
    assert [s.id for s in table.snapshots()] == list(range(1, APPENDS + 2))
