"""The report of a table on S3 (SeaweedFS): the history read through threads (latency-bound storage), figures equal
to the dry runs and ``inspect.partitions()``, and the warehouse discovery of ``tablefmt maintain``."""

from __future__ import annotations

from typing import Any

import pytest
from support.events import build_events
from support.operations import planned_json

from tableformat.report import render_html, warehouse_report

pytestmark = pytest.mark.s3


def test_a_warehouse_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    root, storage = s3_root
    table = build_events(f"{root}/wh/db.db/events", orphans=False, storage_options=storage)
    report = warehouse_report([f"{root}/wh"], storage_options=storage)
    (events,) = report.tables
    assert events.name == "db.events" and events.errors == ()
    assert [p.snapshot_id for p in events.storage.points] == table.context.store.snapshot_ids()
    for rule in events.rules:
        if not rule.configured:
            continue
        dry = table.maintenance.run(rule.operation, dry_run=True, now_ms=events.now_ms)
        assert rule.result is not None and planned_json(rule.result) == planned_json(dry)
    partitions = table.inspect.partitions().to_pylist()
    assert [(p.partition, p.record_count, p.file_size_in_bytes) for p in events.partitions] == [
        (p["partition"], p["record_count"], p["file_size_in_bytes"]) for p in partitions
    ]
    assert sum(1 for p in events.partitions if p.dropped_by) == 3
    assert "db.events" in render_html(report)
