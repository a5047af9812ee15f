"""A daily event pipeline on a tablefmt table with PySpark, end to end on local disk.

1. ingest four days of events, one Spark job per day, into a table partitioned by day (created by the first write);
2. a corrected batch for day 2 arrives late: overwrite just that partition;
3. retention: drop the oldest day;
4. maintenance: snapshot expiration (also run after every commit, per the table's options) and orphan cleanup
   on Spark's executors;
5. report: events per day through Spark's native Parquet reader, and the table's history.

Run it as a script (``python examples/spark_pipeline.py [BASE_DIR]``) or call ``main(base_dir)``; pass ``spark=``
to reuse a session (the function only stops a session it started).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from datetime import timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from tableformat import Table
from tableformat.spark import maintain, read_native, register

FIRST_DAY = dt.date(2024, 1, 1)
DAYS = 4
EVENTS_PER_DAY = 500
CORRECTED_EVENTS = 450
TABLE_OPTIONS = {
    "snapshot.num-retained.min": "2",  # keep at least the last two snapshots
    "snapshot.num-retained.max": "4",  # and never more than four
    "file.compression": "zstd",
}


def events(spark: SparkSession, day: dt.date, count: int, version: int = 1) -> DataFrame:
    """``count`` synthetic events of one day (deterministic, so reruns give the same table)."""
    start = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.timezone.utc).timestamp())
    return spark.range(count, numPartitions=2).selectExpr(
        f"id + {day.toordinal() * 100_000} as event_id",
        "cast(id % 50 as int) as user_id",
        "element_at(array('view', 'click', 'buy'), cast(id % 3 + 1 as int)) as kind",
        f"cast(id % 100 as double) / 4 * {version} as amount",
        f"timestamp_seconds({start} + id * 60) as event_time",
        f"'{day.isoformat()}' as dt",
    )


def build_session() -> SparkSession:
    """A small local session for running this file as a script."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName("tablefmt-daily-pipeline")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )


def main(base_dir: str, spark: SparkSession | None = None) -> dict[str, Any]:
    """Run the pipeline in ``base_dir``; returns a summary of the final table."""
    own_session = spark is None
    session = build_session() if spark is None else spark
    try:
        return run(session, os.path.join(base_dir, "events"))
    finally:
        if own_session:
            session.stop()


def run(spark: SparkSession, path: str) -> dict[str, Any]:
    register(spark)
    days = [FIRST_DAY + timedelta(days=i) for i in range(DAYS)]

    # 1. daily ingestion: the first write creates the table, partitioned by day, with its retention options
    for day in days:
        writer = events(spark, day, EVENTS_PER_DAY).write.format("tablefmt").mode("append")
        writer = writer.option("partitionBy", "dt")
        for key, value in TABLE_OPTIONS.items():
            writer = writer.option(key, value)
        writer.save(path)

    # 2. late-arriving corrections for day 2 replace that day only
    late_day = days[1].isoformat()
    corrected = events(spark, days[1], CORRECTED_EVENTS, version=2)
    corrected.write.format("tablefmt").mode("overwrite").option("partition", f"dt={late_day}").save(path)

    # 3. retention: drop the oldest day (metadata only; expiration frees the bytes later)
    table = Table.open(path)
    table.drop_partitions([{"dt": days[0].isoformat()}])

    # 4. maintenance on demand: expiration now, orphan files older than a day (a crashed job's leftovers)
    report = maintain(spark, path, remove_orphans=True, older_than=timedelta(days=1))

    # 5. report through the native Parquet reader
    daily = read_native(spark, path).groupBy("dt").count().orderBy("dt").collect()
    per_day = {row["dt"]: row["count"] for row in daily}
    latest = spark.read.format("tablefmt").load(path).selectExpr("sum(amount) as total").collect()[0]["total"]
    snapshots = table.snapshots()
    return {
        "table": path,
        "events_per_day": per_day,
        "total_amount": latest,
        "snapshot_ids": [s.id for s in snapshots],
        "expired_by_maintain": list(report.expiration.expired_snapshot_ids),
        "orphans_deleted": 0 if report.orphans is None else len(report.orphans.deleted_paths),
        "data_files": len(table.files()),
    }


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="tablefmt-pipeline-")
    summary = main(target)
    for key, value in summary.items():
        print(f"{key}: {value}")
