"""``erase.deadline``: an erasure without ``--purge`` is completed by ``tablefmt maintain`` once its deadline has
come (every older snapshot expires), and reported past due while a tag still holds erased rows."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from support.warehouses import FakeClock, table_with_commits

from tableformat.cleanup.maintainer import MaintainSettings, TableTarget, maintain_table
from tableformat.cleanup.maintainer.table_pass import TableReport
from tableformat.table import Table

DAY_MS = 86_400_000


def _erase_then_maintain(root: Path, table: Table, days: float) -> tuple[TableReport, FakeClock]:
    erased = table.maintenance.run("erase", where="id = 1", deadline="1d")
    assert erased.snapshot_id == 5 and erased.deadline_ms is not None and not erased.purged_snapshot_ids
    early = maintain_table(
        _target(root), MaintainSettings(), owner="o", clock=FakeClock(erased.deadline_ms - 2 * 3_600_000)
    )
    assert "erase" not in dict(early.operations)  # not due yet: the table's retention alone
    clock = FakeClock(erased.deadline_ms + int(days * DAY_MS))
    return maintain_table(_target(root), MaintainSettings(), owner="o", clock=clock), clock


def _target(root: Path) -> TableTarget:
    return TableTarget(name="t", location=str(root))


def test_maintain_completes_the_purge_once_the_deadline_has_come(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = table_with_commits(root, 4, **{"snapshot.num-retained.min": "10", "snapshot.num-retained.max": "100"})
    report, _ = _erase_then_maintain(root, table, 0)
    ran = dict(report.operations)
    assert report.ok and ran["erase"].purged_snapshot_ids == (1, 2, 3, 4)
    assert table.context.store.snapshot_ids() == [5]
    assert table.maintenance.verify_erasure("id = 1").certified
    assert not (root / ".tablefmt" / "erasures").exists() or not list((root / ".tablefmt" / "erasures").iterdir())
    assert sorted(table.to_arrow()["id"].to_pylist()) == [0, 2, 3]


def test_an_erasure_a_tag_still_holds_is_reported_past_due_every_pass(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = table_with_commits(root, 4, **{"snapshot.num-retained.min": "10", "snapshot.num-retained.max": "100"})
    table.create_tag("audit-2026", 2)
    report, clock = _erase_then_maintain(root, table, 0.5)
    assert not report.ok
    errors = dict(report.errors)
    assert "past its deadline" in errors["erase"] and "tag audit-2026 (snapshot 2)" in errors["erase"]
    assert [p.name for p in dict(report.operations)["erase"].pinned_by] == ["audit-2026"]
    table.delete_tag("audit-2026")
    table.append(pa.table({"id": [7]}, schema=table.arrow_schema))  # makes expiration due again
    clock.advance(DAY_MS)
    later = maintain_table(_target(root), MaintainSettings(), owner="o", clock=clock)
    assert later.ok and "erase" in dict(later.operations)
    assert table.maintenance.verify_erasure("id = 1").certified
