"""``erase --purge --include-tags``: the tags that hold erased rows are rewritten without them, and the bytes go."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from support.operations import expire_snapshots
from support.tables import FAR_FUTURE_MS
from support.warehouses import table_with_commits

from tableformat.table import Table

EVERYTHING = {"retain_min": 1, "retain_max": 1, "time_retained": 0, "now_ms": FAR_FUTURE_MS}


def _ids(table: Table, **at: object) -> list[int]:
    return sorted(table.to_arrow(**at)["id"].to_pylist())


def _tagged(root: Path) -> Table:
    """Appends 0-3 (snapshots 1-4), tag 'q1' on snapshot 3 and 'live' on 4; expired to the latest: 'q1' alone holds
    the files of its rows."""
    table = table_with_commits(root, 4)
    table.create_tag("q1", 3)
    table.create_tag("live", 4)
    table.append(pa.table({"id": [1, 5]}, schema=table.arrow_schema))
    expire_snapshots(table.context, **EVERYTHING)
    return table


def test_tags_holding_erased_rows_read_as_before_minus_them(tmp_path: Path) -> None:
    table = _tagged(tmp_path / "t")
    dry = table.maintenance.erase("id = 1", purge=True, include_tags=True, dry_run=True)
    assert dry.rewritten_tags == ("live", "q1") and dry.pinned_by == ()
    without_tags = table.maintenance.erase("id = 1", purge=True, dry_run=True)
    assert {p.name for p in without_tags.pinned_by} == {"live", "q1"} and without_tags.rewritten_tags == ()

    result = table.maintenance.erase("id = 1", purge=True, include_tags=True)
    assert result.rewritten_tags == ("live", "q1") and result.pinned_by == ()
    assert result.erased_rows == 2 + 2  # append 1 and the last append live, and append 1 in each tag
    assert _ids(table) == [0, 2, 3, 5]
    assert _ids(table, tag="q1") == [0, 2] and _ids(table, tag="live") == [0, 2, 3]
    assert table.maintenance.verify_erasure("id = 1").certified
    assert table.maintenance.check().ok
    assert set(dry.deleted_paths) <= set(result.deleted_paths) | set(result.rewritten_paths)
    assert not (Path(table.location) / ".tablefmt" / "erasures").exists() or not any(
        (Path(table.location) / ".tablefmt" / "erasures").iterdir()
    )


def test_include_tags_needs_purge_on_the_command_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tableformat.cli.main import cli

    table = _tagged(tmp_path / "t")
    run = CliRunner().invoke(cli, ["erase", table.location, "--where", "id = 1", "--include-tags"])
    assert run.exit_code == 2 and "--include-tags rewrites tags as part of a purge: give --purge too" in run.output
    assert _ids(table, tag="q1") == [0, 1, 2]
