"""maintain_warehouse: the maintainer pass with tables spread over Spark's executors, the same reports as the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.ci import optional

optional("pyspark")

from support.warehouses import make_warehouse, snapshot_ids

from tableformat.cleanup.maintainer import settings_from_mapping
from tableformat.spark import maintain_warehouse

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

LAYOUT = {"sales": ["orders", "returns", "refunds"], "web": ["clicks"]}


def test_every_table_is_maintained_once_on_the_executors_with_the_clis_reports(spark: Any, tmp_path: Path) -> None:
    tables = make_warehouse(tmp_path / "wh", LAYOUT, commits=6)
    spark.createDataFrame([(100,)], "id long").write.format("tablefmt").mode("append").save(
        str(tables["web.clicks"])
    )  # a Spark commit: 7 snapshots there
    settings = settings_from_mapping({"tables": {"sales.refunds": {"snapshot.expire.limit": "1"}}}, "maintain.toml")
    reports = maintain_warehouse(spark, str(tmp_path / "wh"), settings=settings)
    assert [r.table for r in reports] == ["sales.orders", "sales.refunds", "sales.returns", "web.clicks"]
    assert all(r.ok and [n for n, _ in r.operations] == ["expire", "remove-orphans"] for r in reports)
    expired = {r.table: list(dict(r.operations)["expire"].to_json()["expired_snapshot_ids"]) for r in reports}
    assert expired == {
        "sales.orders": [1, 2, 3, 4],
        "sales.refunds": [1],
        "sales.returns": [1, 2, 3, 4],
        "web.clicks": [1, 2, 3, 4, 5],
    }
    assert {name: snapshot_ids(path) for name, path in tables.items()}["web.clicks"] == [6, 7]
    assert dict(reports[1].operations)["expire"].backlog == 3

    again = maintain_warehouse(spark, str(tmp_path / "wh"), settings=settings)
    assert [r.skipped for r in again] == ["nothing due"] * 4
    soon = {r.table for r in again if r.next_due_ms is not None and r.next_due_ms - r.last_success_ms <= 60_000}
    assert soon == {"sales.refunds"}  # its backlog brings it back after backlog-retry (1 min), the rest in 1 h


def test_a_target_that_does_not_exist_raises_before_any_task(spark: Any, tmp_path: Path) -> None:
    from tableformat.errors import TargetNotFoundError

    make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=1)
    missing = str(tmp_path / "wh" / "typo.db")
    with pytest.raises(TargetNotFoundError, match=f"^{missing}: does not exist$"):
        maintain_warehouse(spark, [str(tmp_path / "wh"), missing])
