"""The undo window on a table pypaimon 2.1.0 writes: tablefmt expires its snapshots and a tag with
``maintenance.undo-window`` on, pypaimon reads the table as expired (the files the window holds stay on disk), then
``tablefmt undo`` puts the run back and pypaimon reads every restored snapshot (time travel by id) and the restored
tag with exactly the rows it read before, finds the earliest snapshot again, and appends on top."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.operations import check, expire_snapshots
from support.tables import files_under

from interop.helpers import Model, Paimon, assert_rows, backdate_tag, tablefmt_json
from tableformat import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()), pa.field("dt", pa.string())]
)
PLAN: list[tuple[str, list[str], dict[str, Any] | None]] = [
    ("append", ["a", "b"], None),  # 1
    ("append", ["a", "c"], None),  # 2  <- tag release (expires)
    ("overwrite", ["a"], {"dt": "a"}),  # 3: the files of a from 1 and 2 leave the table
    ("append", ["d"], None),  # 4
    ("append", ["b"], None),  # 5
]


def _written_by_pypaimon(pp: Paimon) -> Model:
    pp.create_table("u", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false", "maintenance.undo-window": "1d"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=SCHEMA))

    def make(i: int, part: str) -> dict[str, Any]:
        return {"id": i, "v": f"v{i}", "dt": part}

    for snapshot_id, (op, parts, spec) in enumerate(PLAN, start=1):
        rows = model.new_rows(parts, make)
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        if op == "append":
            pp.append("u", data)
            model.append(rows)
        else:
            assert spec is not None
            pp.overwrite("u", data, spec)
            model.overwrite(rows, spec)
        model.commit(snapshot_id)
    pp.table("u").create_tag("release", snapshot_id=2, time_retained="1s")
    model.tag("release", 2)
    backdate_tag(pp.path("u"), "release", 3600)
    return model


def test_pypaimon_reads_every_snapshot_and_tag_an_undo_restores(pp: Paimon) -> None:
    model = _written_by_pypaimon(pp)
    root = pp.path("u")
    before = {i: pp.read("u", snapshot_id=i) for i in range(1, len(PLAN) + 1)}
    tag_before = pp.read("u", tag="release")
    for snapshot_id, read in before.items():
        assert_rows(read, model.at(snapshot_id), f"pypaimon before, snapshot {snapshot_id}")
    assert_rows(tag_before, model.at_tag("release"), "pypaimon before, tag release")

    table = Table.open(root)
    done = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=int(time.time() * 1000))
    assert sorted(done.deleted_paths) == [*(f"snapshot/snapshot-{i}" for i in range(1, 5)), "tag/tag-release"]
    assert [p for p in done.deferred_paths if p.startswith("dt=a/")]  # the overwritten files of a, held
    assert set(done.deferred_paths) <= files_under(root)
    assert pp.earliest_id("u") == 5 and sorted(t.name for t in Table.open(root).tags()) == []
    assert_rows(pp.read("u"), model.at(5), "pypaimon after the expiration, latest")

    undone = tablefmt_json("undo", root, done.run_id)
    assert undone["undone"] == done.run_id and undone["dry_run"] is False
    assert undone["restored_snapshots"] == [1, 2, 3, 4] and undone["restored_tags"] == ["release"]
    assert undone["restored_files"] == len(done.deferred_paths)
    assert sorted(undone["restored_paths"]) == sorted(done.deferred_paths)

    assert pp.earliest_id("u") == 1 and pp.latest_id("u") == 5
    for snapshot_id in range(1, len(PLAN) + 1):
        assert_rows(pp.read("u", snapshot_id=snapshot_id), model.at(snapshot_id), f"pypaimon, snapshot {snapshot_id}")
        assert pp.read("u", snapshot_id=snapshot_id).sort_by("id").equals(before[snapshot_id].sort_by("id"))
    assert_rows(pp.read("u", tag="release"), model.at_tag("release"), "pypaimon, tag release")
    assert not list((Path(root) / ".tablefmt" / "undo").glob("*"))  # the run's window is gone with the undo
    assert check(Table.open(root).context).ok

    rows = [{"id": 1000, "v": "after", "dt": "e"}]
    pp.append("u", pa.Table.from_pylist(rows, schema=SCHEMA))
    model.append(rows)
    model.commit(6)
    assert_rows(pp.read("u"), model.at(6), "pypaimon, appended after the undo")
