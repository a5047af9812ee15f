"""pypaimon 2.1.0 tables with rollback and uncommitted-write leftovers: exactly those leftovers are removed.

Needs pypaimon 2.1.0 in the same environment (the interop env; the ``pypaimon_version`` fixture skips or fails
elsewhere, as for every interop test). pypaimon then reads every snapshot and tag after the cleanup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from support.operations import remove_orphan_files
from support.tables import DAY_S, age_files, files_under

from tableformat import Table
from tableformat.cleanup.check import check_table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string())])


def commit(table: Any, rows: dict[str, list[Any]], overwrite: dict[str, str] | None = None) -> None:
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(overwrite)
    write, committer = builder.new_write(), builder.new_commit()
    try:
        write.write_arrow(pa.Table.from_pydict(rows, schema=SCHEMA))
        committer.commit(write.prepare_commit())
    finally:
        write.close()
        committer.close()


def read_rows(table: Any, **options: str) -> int:
    scoped = table.copy(options) if options else table
    builder = scoped.new_read_builder()
    return int(builder.new_read().to_arrow(builder.new_scan().plan().splits()).num_rows)


@pytest.mark.parametrize("max_files", [None, 3], ids=["one-run", "runs-of-3"])
def test_pypaimon_rollback_and_uncommitted_leftovers(
    pypaimon_version: str, tmp_path: Path, max_files: int | None
) -> None:
    import pypaimon

    catalog = pypaimon.CatalogFactory.create({"warehouse": str(tmp_path / "wh")})
    catalog.create_database("db", ignore_if_exists=True)
    catalog.create_table("db.t", pypaimon.Schema.from_pyarrow_schema(SCHEMA, partition_keys=["dt"]), False)
    table = catalog.get_table("db.t")
    root = tmp_path / "wh" / "db.db" / "t"
    for i in range(4):
        commit(table, {"id": [i * 10 + 1, i * 10 + 2], "dt": ["a", f"d{i}"]})
    table.create_tag("v2", 2)
    before_rollback = files_under(root)
    commit(table, {"id": [99], "dt": ["a"]}, overwrite={"dt": "a"})
    commit(table, {"id": [100], "dt": ["z"]})
    table.rollback_to(4)
    rolled_back = {f for f in files_under(root) - before_rollback if not f.startswith("snapshot/")}
    before_write = files_under(root)
    write = table.new_batch_write_builder().new_write()
    write.write_arrow(pa.Table.from_pydict({"id": [555], "dt": ["q"]}, schema=SCHEMA))
    write.prepare_commit()
    write.close()
    uncommitted = files_under(root) - before_write
    age_files(root, 3 * DAY_S)

    ours = Table.open(str(root))
    runs = [remove_orphan_files(ours.context, max_files=max_files)]
    while runs[-1].backlog:  # runs of at most max_files orphans, until none is left
        runs.append(remove_orphan_files(ours.context, max_files=max_files))
    deleted = [path for run in runs for path in run.deleted_paths]

    assert sorted(deleted) == sorted(rolled_back | uncommitted)  # each once
    assert [len(run.deleted_paths) for run in runs] == ([9] if max_files is None else [3, 3, 3])
    assert len(rolled_back) == 8 and len(uncommitted) == 1
    assert check_table(ours.context).ok
    reopened = catalog.get_table("db.t")
    assert [read_rows(reopened, **{"scan.snapshot-id": str(i)}) for i in (1, 2, 3, 4)] == [2, 4, 6, 8]
    assert read_rows(reopened, **{"scan.tag-name": "v2"}) == 4
