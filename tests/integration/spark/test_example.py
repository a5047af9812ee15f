"""examples/spark_pipeline.py runs end to end on the shared session."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from tableformat import Table

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # a Spark session starts in seconds

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "spark_pipeline.py"


def test_daily_pipeline_example(spark: Any, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    summary = module.main(str(tmp_path), spark=spark)
    assert summary["events_per_day"] == {"2024-01-02": 450, "2024-01-03": 500, "2024-01-04": 500}
    assert summary["snapshot_ids"] == [3, 4, 5, 6]  # four appends, one overwrite, one drop; the hook keeps four
    assert summary["orphans_deleted"] == 0
    assert summary["data_files"] == 6
    table = Table.open(summary["table"])
    assert sorted({r["dt"] for r in table.to_arrow().to_pylist()}) == ["2024-01-02", "2024-01-03", "2024-01-04"]
    assert not spark.sparkContext._jsc.sc().isStopped()  # main() leaves a session it did not start running
