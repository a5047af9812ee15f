"""A tablefmt table with more than 30 commits (manifest merging runs) read by pypaimon at the latest snapshot, at
older snapshots and at tags; then pypaimon appends on top of the merged manifests and tablefmt appends after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from interop.helpers import Model, Paimon, assert_rows, live_file_entries, read_avro, snapshot_json
from tableformat import Table

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()), pa.field("dt", pa.string())]
)
COMMITS = 36


def _manifests(root: str, list_name: str) -> list[dict[str, Any]]:
    return read_avro(Path(root) / "manifest" / list_name)


@pytest.mark.parametrize(
    "options",
    [
        {},  # Paimon's defaults: a minor merge once 30 small manifests pile up
        {"manifest.merge-min-count": "3", "manifest.full-compaction-threshold-size": "2 kb"},  # full compactions
    ],
    ids=["default-merge", "full-compaction"],
)
def test_many_commits(pp: Paimon, options: dict[str, str]) -> None:
    root = pp.path("m")
    table = Table.create(root, SCHEMA, ["dt"], options)
    model = Model(["dt"], lambda rows: pa.Table.from_pylist(rows, schema=SCHEMA))
    partitions = ["p0", "p1", "p2", "p3"]
    for snapshot_id in range(1, COMMITS + 1):
        if snapshot_id == 12:
            snapshot = table.drop_partitions([{"dt": "p1"}])
            model.drop([{"dt": "p1"}])
        elif snapshot_id == 20:
            rows = model.new_rows(["p2"], lambda i, p: {"id": i, "v": f"v{i}", "dt": p})
            snapshot = table.overwrite(pa.Table.from_pylist(rows, schema=SCHEMA), {"dt": "p2"})
            model.overwrite(rows, {"dt": "p2"})
        else:
            parts = [partitions[snapshot_id % 4], partitions[(snapshot_id + 1) % 4]]
            rows = model.new_rows(parts, lambda i, p: {"id": i, "v": None if i % 5 == 0 else f"v{i}", "dt": p})
            snapshot = table.append(pa.Table.from_pylist(rows, schema=SCHEMA))
            model.append(rows)
        assert snapshot is not None and snapshot.id == snapshot_id
        model.commit(snapshot_id)
        if snapshot_id in (5, 12, 29):
            table.create_tag(f"tag{snapshot_id}")
            model.tag(f"tag{snapshot_id}", snapshot_id)

    # merging happened: the latest snapshot does not reference one manifest per commit
    latest = snapshot_json(root, COMMITS)
    referenced = _manifests(root, latest["baseManifestList"]) + _manifests(root, latest["deltaManifestList"])
    assert len(referenced) < COMMITS // 2, f"{len(referenced)} manifests for {COMMITS} commits: nothing was merged"
    base_entries = [
        e
        for m in _manifests(root, latest["baseManifestList"])
        for e in read_avro(Path(root) / "manifest" / m["_FILE_NAME"])
    ]
    assert not [e for e in base_entries if e["_KIND"] == 1], "merged base still holds DELETE entries"
    live = live_file_entries(root, COMMITS)  # independent decode: no double ADD, every DELETE matches
    assert sum(e["_FILE"]["_ROW_COUNT"] for e in live.values()) == len(model.live)

    for snapshot_id in (1, 11, 12, 19, 20, 29, 30, 31, COMMITS):
        expected = model.at(snapshot_id)
        assert_rows(pp.read("m", snapshot_id=snapshot_id), expected, f"pypaimon, snapshot {snapshot_id}")
        assert_rows(table.to_arrow(snapshot_id=snapshot_id), expected, f"tablefmt, snapshot {snapshot_id}")
    for tag in model.by_tag:
        assert_rows(pp.read("m", tag=tag), model.at_tag(tag), f"pypaimon, tag {tag}")
    assert_rows(pp.read("m"), model.at(COMMITS), "pypaimon, latest")

    rows = model.new_rows(["p1", "p9"], lambda i, p: {"id": i, "v": "pp", "dt": p})
    pp.append("m", pa.Table.from_pylist(rows, schema=SCHEMA))
    model.append(rows)
    model.commit(COMMITS + 1)
    rows = model.new_rows(["p1", "p0"], lambda i, p: {"id": i, "v": "tf", "dt": p})
    assert Table.open(root).append(pa.Table.from_pylist(rows, schema=SCHEMA)).id == COMMITS + 2  # type: ignore[union-attr]
    model.append(rows)
    model.commit(COMMITS + 2)
    for snapshot_id in (COMMITS + 1, COMMITS + 2):
        expected = model.at(snapshot_id)
        assert_rows(pp.read("m", snapshot_id=snapshot_id), expected, f"pypaimon, snapshot {snapshot_id}")
        assert_rows(Table.open(root).to_arrow(snapshot_id=snapshot_id), expected, f"tablefmt, snapshot {snapshot_id}")
