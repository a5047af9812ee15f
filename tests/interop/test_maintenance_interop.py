"""tablefmt's maintenance on tables written by pypaimon 2.1.0.

* Expiration (cleanup/snapshots/): afterwards pypaimon still reads every retained snapshot and tag, finds
  the earliest snapshot (tablefmt writes snapshot/EARLIEST; pypaimon never does), and can append.
* Orphan cleanup (cleanup/orphans/): after a pypaimon rollback and an uncommitted pypaimon write, the
  cleaner deletes exactly those leftovers (once they are old enough) and nothing else; pypaimon then reads every
  snapshot and tag.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import DAY_S, age_files, files_under

from interop.helpers import (
    Model,
    Paimon,
    assert_rows,
    check_history,
    live_file_entries,
    read_json,
    referenced_files,
    snapshot_json,
)
from tableformat import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()), pa.field("dt", pa.string())]
)


def _deleted(result: Any) -> set[str]:
    """The files a maintenance result reports as deleted (relative to the table root), checked to be relative."""
    paths = set(result.deleted_paths)
    assert not [p for p in paths if p.startswith("/") or "://" in p or ".." in p.split("/")], paths
    return paths


def test_expire_pypaimon_table(pp: Paimon) -> None:
    pp.create_table("x", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=SCHEMA))
    root = pp.path("x")

    def make(i: int, part: str) -> dict[str, Any]:
        return {"id": i, "v": f"v{i}", "dt": part}

    plan: list[tuple[str, list[str], dict[str, Any] | None]] = [
        ("append", ["a", "b"], None),  # 1
        ("append", ["a", "c"], None),  # 2
        ("append", ["b"], None),  # 3  <- tag keep3
        ("overwrite", ["a"], {"dt": "a"}),  # 4: files of a from 1 and 2 deleted (tag keep3 still holds them)
        ("append", ["d"], None),  # 5: a file that only snapshots 5 and 6 hold
        ("append", ["c"], None),  # 6
        ("drop", [], {"dt": "d"}),  # 7: ...dropped here
        ("append", ["e", "a"], None),  # 8  <- tag keep8
        ("append", ["e"], None),  # 9
        ("overwrite", ["e"], {"dt": "e"}),  # 10
        ("append", ["f"], None),  # 11
        ("append", ["a", "f"], None),  # 12
    ]
    for snapshot_id, (op, parts, spec) in enumerate(plan, start=1):
        rows = model.new_rows(parts, make)
        data = pa.Table.from_pylist(rows, schema=SCHEMA)
        if op == "append":
            pp.append("x", data)
            model.append(rows)
        elif op == "overwrite":
            assert spec is not None
            pp.overwrite("x", data, spec)
            model.overwrite(rows, spec)
        else:
            assert spec is not None
            pp.drop_partitions("x", [spec])
            model.drop([spec])
        assert pp.latest_id("x") == snapshot_id
        model.commit(snapshot_id)
        if snapshot_id in (3, 8):
            pp.create_tag("x", f"keep{snapshot_id}")
            model.tag(f"keep{snapshot_id}", snapshot_id)
    # pypaimon tags with a time-retained (tagCreateTime as local wall-clock fields, tagTimeRetained in seconds):
    # tablefmt expires the one whose TTL has passed (at now + 2 h) and keeps the other and its files
    pp.table("x").create_tag("ttl1h", snapshot_id=9, time_retained="1h")
    pp.table("x").create_tag("ttl1d", snapshot_id=9, time_retained="1d")
    model.tag("ttl1d", 9)
    only_in_5_and_6 = {
        name
        for (_, _, name) in live_file_entries(root, 5)
        if name not in {n for (_, _, n) in live_file_entries(root, 4)}
    }
    assert len(only_in_5_and_6) == 1
    assert not (Path(root) / "snapshot" / "EARLIEST").exists()  # pypaimon never writes it

    table = Table.open(root)
    result = expire_snapshots(
        table.context,
        retain_min=3,
        retain_max=3,
        time_retained=dt.timedelta(hours=1),
        limit=100,
        now_ms=int(time.time() * 1000) + 2 * 3_600_000,
    )
    assert result.expired_snapshot_ids == tuple(range(1, 10))
    assert result.earliest_snapshot == 10
    assert result.expired_tags == ("ttl1h",)
    assert sorted(p.name for p in (Path(root) / "tag").iterdir()) == ["tag-keep3", "tag-keep8", "tag-ttl1d"]
    retained = [10, 11, 12]
    assert sorted(int(p.name.split("-")[1]) for p in (Path(root) / "snapshot").glob("snapshot-*")) == retained
    assert (Path(root) / "snapshot" / "EARLIEST").read_bytes() == b"10"
    assert pp.earliest_id("x") == 10
    assert pp.latest_id("x") == 12
    # nothing a retained snapshot or tag needs is gone; the file only expired snapshots held is
    on_disk = files_under(root)
    for snapshot_id in retained:
        assert referenced_files(root, snapshot_json(root, snapshot_id)) <= on_disk
    for tag in ("keep3", "keep8", "ttl1d"):
        assert referenced_files(root, read_json(Path(root) / "tag" / f"tag-{tag}")) <= on_disk
    assert not [p for p in on_disk if p.rsplit("/", 1)[-1] in only_in_5_and_6]
    deleted = _deleted(result)
    assert {f"snapshot/snapshot-{i}" for i in range(1, 10)} | {"tag/tag-ttl1h"} <= deleted
    assert not (deleted & on_disk)
    assert any(p.rsplit("/", 1)[-1] in only_in_5_and_6 for p in deleted)

    for snapshot_id in range(1, 10):
        del model.by_snapshot[snapshot_id]
    check_history(pp, "x", model)  # every retained snapshot and tag, both readers

    rows = model.new_rows(["a", "g"], make)
    pp.append("x", pa.Table.from_pylist(rows, schema=SCHEMA))
    model.append(rows)
    assert pp.latest_id("x") == 13
    model.commit(13)
    check_history(pp, "x", model)
    assert pp.earliest_id("x") == 10


def test_orphans_after_pypaimon_rollback_and_uncommitted_write(pp: Paimon) -> None:
    pp.create_table("o", SCHEMA, ["dt"], {"dynamic-partition-overwrite": "false"})
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=SCHEMA))
    root = pp.path("o")

    def append(parts: list[str], snapshot_id: int | None) -> None:
        rows = model.new_rows(parts, lambda i, p: {"id": i, "v": None, "dt": p})
        pp.append("o", pa.Table.from_pylist(rows, schema=SCHEMA))
        if snapshot_id is not None:
            model.append(rows)
            assert pp.latest_id("o") == snapshot_id
            model.commit(snapshot_id)

    append(["a", "b"], 1)
    append(["a"], 2)
    pp.create_tag("o", "t2")
    model.tag("t2", 2)
    kept = files_under(root)

    append(["b", "z"], None)  # 3, rolled back: z exists only here
    pp.drop_partitions("o", [{"dt": "a"}])  # 4, rolled back
    pp.create_tag("o", "t4")  # deleted by the rollback
    uncommitted = ["a", "u"]
    pp.uncommitted_write(
        "o", pa.Table.from_pylist([{"id": 100, "v": "x", "dt": p} for p in uncommitted], schema=SCHEMA)
    )
    pp.rollback_to("o", 2)
    after_rollback = files_under(root)
    leftovers = after_rollback - kept
    # data files of 3 and of the uncommitted write, manifests and manifest lists of 3 and 4
    assert {p.split("/")[0] for p in leftovers} == {"dt=b", "dt=z", "dt=a", "dt=u", "manifest"}
    assert not [p for p in leftovers if p.startswith(("snapshot/", "tag/"))]

    append(["b", "c"], 3)  # id 3 again: live, not an orphan
    age_files(root, 3 * DAY_S)
    # a fresh leftover (an uncommitted write still in flight) must survive the age guard
    pp.uncommitted_write("o", pa.Table.from_pylist([{"id": 200, "v": "y", "dt": "a"}], schema=SCHEMA))
    fresh = files_under(root) - after_rollback
    fresh = {p for p in fresh if p.startswith("dt=a/")}
    before = files_under(root)

    table = Table.open(root)
    result = remove_orphan_files(table.context, older_than=dt.timedelta(days=1))
    assert _deleted(result) == leftovers
    assert files_under(root) == before - leftovers
    assert fresh <= files_under(root)

    check_history(pp, "o", model)
    append(["a", "z"], 4)
    check_history(pp, "o", model)
    assert_rows(Table.open(root).to_arrow(tag="t2"), model.at_tag("t2"), "tablefmt, tag t2 after cleanup")
