"""Spark write and full-read throughput of tablefmt next to Spark's native Parquet, in one session.

Data: ROWS rows x 10 columns (longs, ints, doubles, strings, a boolean, a date, a timestamp) in 8 Spark
partitions, cached before timing. Every repetition writes to a fresh directory:

* write: ``df.write.parquet(dir)`` vs ``df.write.format("tablefmt").save(dir)`` (one snapshot per job);
* full read, all columns into Spark's ``noop`` sink: ``spark.read.parquet(dir)`` vs the ``tablefmt`` data source
  vs ``tableformat.spark.read_native`` (Spark's Parquet reader over the snapshot's files).

Targets (issue 5): write <= 1.2x native, full read <= 1.5x native. Usage::

    python bench/spark_io.py [--rows 1000000] [--reps 5] [--compression zstd|snappy] [--master local[2]]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from tableformat import Table
from tableformat.spark import read_native, register

PARTITIONS = 8


def session(master: str) -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("tablefmt-bench-spark-io")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(PARTITIONS))
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def frame(spark: SparkSession, rows: int) -> DataFrame:
    df = spark.range(rows, numPartitions=PARTITIONS).selectExpr(
        "id",
        "cast(id % 1000 as int) as small",
        "id * 7 as big",
        "cast(id as double) / 3 as ratio",
        "cast(id % 977 as double) * 1.5 as amount",
        "concat('user-', cast(id % 10000 as string)) as user",
        "element_at(array('view', 'click', 'buy', 'refund'), cast(id % 4 + 1 as int)) as kind",
        "id % 2 = 0 as flag",
        "date_add(date'2024-01-01', cast(id % 365 as int)) as day",
        "timestamp_seconds(1704067200 + id) as ts",
    )
    df = df.cache()
    df.count()
    return df


def timed(fn: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def write_native(df: DataFrame, path: str, compression: str) -> None:
    df.write.mode("overwrite").option("compression", compression).parquet(path)


def write_tablefmt(df: DataFrame, path: str, compression: str) -> None:
    df.write.format("tablefmt").mode("append").option("file.compression", compression).save(path)


def read_parquet_dir(spark: SparkSession, path: str) -> None:
    spark.read.parquet(path).write.format("noop").mode("overwrite").save()


def read_datasource(spark: SparkSession, path: str) -> None:
    spark.read.format("tablefmt").load(path).write.format("noop").mode("overwrite").save()


def read_snapshot_natively(spark: SparkSession, path: str) -> None:
    read_native(spark, path).write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--compression", default="zstd", help="Parquet codec for both writers (zstd, snappy)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    spark = session(args.master)
    base = tempfile.mkdtemp(prefix="tablefmt-bench-")
    try:
        df = frame(spark, args.rows)
        results: dict[str, list[float]] = {
            k: []
            for k in (
                "native write",
                "tablefmt write",
                "native read",
                "tablefmt read (data source)",
                "tablefmt read_native",
            )
        }
        for rep in range(args.reps + 1):  # repetition 0 warms up every path and is not counted
            native_dir = os.path.join(base, f"native-{rep}")
            table_dir = os.path.join(base, f"table-{rep}")
            samples = {
                "native write": timed(write_native, df, native_dir, args.compression),
                "tablefmt write": timed(write_tablefmt, df, table_dir, args.compression),
                "native read": timed(read_parquet_dir, spark, native_dir),
                "tablefmt read (data source)": timed(read_datasource, spark, table_dir),
                "tablefmt read_native": timed(read_snapshot_natively, spark, table_dir),
            }
            if rep:
                for key, value in samples.items():
                    results[key].append(value)
            if rep == 0:
                files = Table.open(table_dir).files()
                print(
                    f"tablefmt: {len(files)} data files, {sum(f.row_count for f in files)} rows, "
                    f"{sum(f.file_size for f in files) / 1e6:.1f} MB; native: "
                    f"{sum(os.path.getsize(os.path.join(native_dir, n)) for n in os.listdir(native_dir)) / 1e6:.1f}"
                    " MB"
                )
            shutil.rmtree(native_dir)
            shutil.rmtree(table_dir)
        median = {k: statistics.median(v) for k, v in results.items()}
        best = {k: min(v) for k, v in results.items()}
        print(
            f"{args.rows} rows x 10 columns, {PARTITIONS} partitions, {args.compression}, {args.master}, "
            f"median of {args.reps} (min-max)"
        )
        for key, values in results.items():
            print(f"  {key:30s} {median[key]:6.2f} s  ({min(values):.2f}-{max(values):.2f})")
        for label, key, base, target in (
            ("write", "tablefmt write", "native write", 1.2),
            ("read, data source", "tablefmt read (data source)", "native read", 1.5),
            ("read, read_native", "tablefmt read_native", "native read", 1.5),
        ):
            print(
                f"  {label:20s} {median[key] / median[base]:.2f}x median, {best[key] / best[base]:.2f}x best "
                f"(target <= {target}x)"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
