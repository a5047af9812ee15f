"""Record-level TTL and compaction on a table pypaimon 2.1.0 wrote with ``record-level.*`` set: after
``tablefmt expire-records``, ``tablefmt compact`` and ``tablefmt expire``, pypaimon reads the latest snapshot
(exactly the unexpired rows), every retained snapshot (what tablefmt reads there with ``include_expired``), and
appends. pypaimon records no statistics tablefmt can use for the time column here, so the footers decide.
Times are 2020 (expired) or 2037 (kept) so any real clock judges them alike."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
from click.testing import CliRunner

from interop.helpers import Paimon, rows_of
from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us")), pa.field("dt", pa.string())])
OPTIONS = {
    "record-level.expire-time": "30 d",
    "record-level.time-field": "ts",
    "compaction.min.file-num": "3",
    "snapshot.num-retained.min": "2",
    "snapshot.time-retained": "1 ms",
}
OLD = dt.datetime(2020, 1, 1)
NEW = dt.datetime(2037, 1, 1)
BATCHES = [
    [(0, OLD, "a"), (1, OLD, "a")],  # fully expired
    [(2, OLD, "a"), (3, None, "a"), (4, NEW, "a")],  # partly expired, a null kept
    [(5, NEW, "a")],
    [(6, NEW, "b")],
    [(7, NEW, "b")],
    [(8, OLD, "b"), (9, NEW, "b")],
]


def _cli(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _batch(rows: list[tuple[int, dt.datetime | None, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "ts": [r[1] for r in rows], "dt": [r[2] for r in rows]}, SCHEMA)


def test_pypaimon_reads_and_appends_after_expire_records_compact_and_expire(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt"], OPTIONS)
    for rows in BATCHES:
        pp.append("t", _batch(rows))
    path = pp.path("t")
    kept_rows = [r for rows in BATCHES for r in rows if r[1] != OLD]
    kept = rows_of(_batch(kept_rows))
    assert rows_of(Table.open(path).to_arrow()) == kept  # tablefmt's read hides the expired rows already

    records = _cli("expire-records", path)
    assert len(records["dropped_paths"]) == 1 and len(records["rewritten_paths"]) == 2  # type: ignore[arg-type]
    assert records["expired_records"] == 4 and len(records["snapshot_ids"]) == 2  # type: ignore[arg-type]
    assert "6 file(s) had no time statistics in the manifest; their footers were read" in records["notes"]  # type: ignore[operator]
    assert rows_of(pp.read("t")) == kept  # pypaimon filters nothing: the table itself holds no expired row
    compacted = _cli("compact", path)
    assert compacted["groups"] == 1 and compacted["expired_records"] == 0  # partition b: 3 files; a has 2 < 3
    assert rows_of(pp.read("t")) == kept

    table = Table.open(path)
    history = {s.id: rows_of(table.to_arrow(snapshot_id=s.id, include_expired=True)) for s in table.snapshots()}
    _cli("expire", path)
    retained = [s.id for s in Table.open(path).snapshots()]
    assert len(retained) == 2
    for snapshot_id in retained:
        assert rows_of(pp.read("t", snapshot_id=snapshot_id)) == history[snapshot_id]

    pp.append("t", _batch([(100, NEW, "c"), (101, OLD, "c")]))
    assert rows_of(pp.read("t")) == rows_of(_batch([*kept_rows, (100, NEW, "c"), (101, OLD, "c")]))
    assert rows_of(Table.open(path).to_arrow()) == rows_of(_batch([*kept_rows, (100, NEW, "c")]))
    again = _cli("expire-records", path)
    assert again["expired_records"] == 1 and rows_of(pp.read("t")) == rows_of(Table.open(path).to_arrow())
