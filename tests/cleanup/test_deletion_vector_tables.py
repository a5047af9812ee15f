"""Append tables with deletion vectors (``deletion-vectors.enabled=true``): tablefmt never rewrites their files.

A rewrite reads a data file's rows and writes them again; rows a deletion vector marks deleted would come back. So
compaction and record expiration are not applicable to such a table (NotApplicableError before anything is read,
skipped by maintain), while expiration and orphan cleanup keep every index file a retained snapshot names. The
deletion vectors are written in Paimon's format by tests/support/paimon_index.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paimon_index import PaimonIndex
from support.tables import ID_PART_SCHEMA, files_under, id_part_rows

from tableformat import Table
from tableformat.errors import NotApplicableError

DV_REASON = "the table has deletion vectors (deletion-vectors.enabled=true); tablefmt does not rewrite files"


@pytest.fixture
def table(tmp_path: Path) -> Table:
    options = {
        "write-only": "true",
        "deletion-vectors.enabled": "true",
        "record-level.expire-time": "1 d",
        "record-level.time-field": "id",
    }
    created = Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, ["part"], options=options)
    for start in range(0, 12, 4):
        created.append(id_part_rows(start, 4, parts=(0,)))
    index = PaimonIndex(created)
    first = sorted(index.live_files())[0]
    index.delete_rows({first: [0, 1]})
    return created


@pytest.mark.parametrize("name", ["compact", "expire-records", "erase"])
def test_rewrites_are_not_applicable(table: Table, name: str) -> None:
    before = files_under(table.location)
    with pytest.raises(NotApplicableError) as refused:
        table.maintenance.run(name)
    assert str(refused.value).startswith(f"{name}: {DV_REASON}")
    with pytest.raises(NotApplicableError):
        table.maintenance.run(name, dry_run=True)
    assert files_under(table.location) == before


def test_expiration_keeps_the_index_files_the_latest_snapshot_names(table: Table) -> None:
    latest = table.context.store.latest_snapshot()
    assert latest is not None and latest.index_manifest is not None
    named = {f"manifest/{latest.index_manifest}"} | {
        f"index/{e.index_file.file_name}" for e in table.context.store.read_index_manifest(latest.index_manifest)
    }
    table.maintenance.run("expire", retain_min=1, retain_max=1, time_retained=0)
    assert named <= files_under(table.location)
