"""Erasure on a table pypaimon 2.1.0 wrote: after ``tablefmt erase`` pypaimon reads the latest snapshot without the
erased rows and every retained snapshot as before; after ``--purge`` pypaimon reads the table (EARLIEST moved), its
tag (kept, still holding the erased rows, named in ``pinned_by``) and appends; ``--verify`` finds the rows only in
the tag's files and names the tag."""

from __future__ import annotations

import json

import pyarrow as pa
from click.testing import CliRunner

from interop.helpers import Paimon, rows_of
from tableformat import Table
from tableformat.cli.main import cli

SCHEMA = pa.schema([pa.field("user_id", pa.int64()), pa.field("email", pa.string()), pa.field("dt", pa.string())])
BATCHES = [
    [(1, "a@x", "d1"), (2, "b@x", "d1"), (3, "c@x", "d2")],
    [(2, "b2@x", "d2"), (4, "d@x", "d2")],
    [(5, "e@x", "d1")],
    [(2, "b3@x", "d3"), (6, "f@x", "d3")],
]


def _cli(*args: str, code: int = 0) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == code, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _batch(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table(
        {"user_id": [r[0] for r in rows], "email": [r[1] for r in rows], "dt": [r[2] for r in rows]}, SCHEMA
    )


def test_pypaimon_reads_after_erase_and_purge_and_the_certificate_follows_the_tag(pp: Paimon) -> None:
    pp.create_table("t", SCHEMA, ["dt"], {})
    for rows in BATCHES:
        pp.append("t", _batch(rows))
    path = pp.path("t")
    pp.create_tag("t", "before", 2)
    everything = [r for rows in BATCHES for r in rows]
    kept = rows_of(_batch([r for r in everything if r[0] != 2]))
    history = {i: rows_of(pp.read("t", snapshot_id=i)) for i in range(1, 5)}

    erased = _cli("erase", path, "--where", "user_id = 2")
    assert erased["erased_rows"] == 3 and erased["rewritten_files"] == 3 and erased["snapshot_id"] == 5
    assert rows_of(pp.read("t")) == kept == rows_of(Table.open(path).to_arrow())
    for snapshot_id, rows in history.items():
        assert rows_of(pp.read("t", snapshot_id=snapshot_id)) == rows

    purged = _cli("erase", path, "--where", "user_id = 2", "--purge")
    assert purged["erased_rows"] == 0 and purged["purged_snapshot_ids"] == [1, 2, 3, 4]
    assert [p["name"] for p in purged["pinned_by"]] == ["before"]  # type: ignore[index,union-attr]
    assert pp.earliest_id("t") == 5 and rows_of(pp.read("t")) == kept
    assert rows_of(pp.read("t", tag="before")) == history[2]
    certificate = _cli("erase", path, "--verify", "--where", "user_id = 2", code=1)
    assert certificate["matches"] == 2  # the tag's two files (snapshot 2's rows of user 2)

    pp.append("t", _batch([(7, "g@x", "d1")]))
    assert rows_of(pp.read("t")) == rows_of(_batch([r for r in everything if r[0] != 2] + [(7, "g@x", "d1")]))
    assert rows_of(pp.read("t")) == rows_of(Table.open(path).to_arrow())
    again = _cli("erase", path, "--where", "user_id = 2", "--purge", "--dry-run")
    assert again["erased_rows"] == 0 and [p["name"] for p in again["pinned_by"]] == ["before"]  # type: ignore[index,union-attr]


def test_pypaimon_reads_a_tag_erase_include_tags_rewrote(pp: Paimon) -> None:
    pp.create_table("g", SCHEMA, ["dt"], {})
    for rows in BATCHES:
        pp.append("g", _batch(rows))
    path = pp.path("g")
    pp.create_tag("g", "before", 2)
    tagged = [r for rows in BATCHES[:2] for r in rows]
    purged = _cli("erase", path, "--where", "user_id = 2", "--purge", "--include-tags")
    assert purged["rewritten_tags"] == ["before"] and purged["pinned_by"] == []
    assert purged["purged_snapshot_ids"] == [1, 2, 3, 4]
    assert rows_of(pp.read("g", tag="before")) == rows_of(_batch([r for r in tagged if r[0] != 2]))
    assert rows_of(Table.open(path).to_arrow(tag="before")) == rows_of(pp.read("g", tag="before"))
    certificate = _cli("erase", path, "--verify", "--where", "user_id = 2")
    assert certificate["matches"] == 0 and certificate["pinned_by"] == []
    pp.append("g", _batch([(2, "again@x", "d1")]))  # pypaimon writes on: the table is sound
    assert rows_of(pp.read("g", tag="before")) == rows_of(_batch([r for r in tagged if r[0] != 2]))
