"""Spark write and full-read throughput of tablefmt next to Spark's native Parquet, in one session.

Data: ROWS rows x 10 columns (longs, ints, doubles, strings, a boolean, a date, a timestamp) in 8 Spark
partitions, cached before timing. Every repetition writes to a fresh directory:

* write: ``df.write.parquet(dir)`` vs ``df.write.format("tablefmt").save(dir)`` (one snapshot per job);
* full read, all columns into Spark's ``noop`` sink: ``spark.read.parquet(dir)`` vs the ``tablefmt`` data source
  vs ``tableformat.spark.read_native`` (Spark's Parquet reader over the snapshot's files), in alternating order;
* the floor of any Python data source: one that reads nothing and yields the same number of rows and columns from
  Arrow batches built once per Python worker (what pyspark's worker transfer and Spark's conversion of the batches
  to rows cost alone).

Beside each read's wall time, the CPU time it took in the JVM and in the Python processes under this one (Spark's
Python workers: planners and tasks), from /proc (Linux; omitted elsewhere): on two shared cores CPU time is what a read
costs once the cores are busy, and it says where the time goes.

Targets: write <= 1.2x native, full read <= 1.5x native, data-source read <= 1.2x. Usage::

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
import types
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from tableformat import Table
from tableformat.spark import read_native, register

PARTITIONS = 8


def memory_batches(rows: int) -> list[pa.RecordBatch]:
    """The bench's 10 columns (as ``frame`` builds them) as Arrow batches of at most 131,072 rows, in Spark's types."""
    ids = pa.array(range(rows), pa.int64())
    user = pc.binary_join_element_wise("user-", pc.cast(pc.remainder(ids, 10000), pa.string()), "")
    kinds = pc.take(pa.array(["view", "click", "buy", "refund"]), pc.remainder(ids, 4))
    table = pa.table(
        {
            "id": ids,
            "small": pc.cast(pc.remainder(ids, 1000), pa.int32()),
            "big": pc.multiply(ids, 7),
            "ratio": pc.divide(pc.cast(ids, pa.float64()), 3),
            "amount": pc.multiply(pc.cast(pc.remainder(ids, 977), pa.float64()), 1.5),
            "user": user,
            "kind": kinds,
            "flag": pc.equal(pc.remainder(ids, 2), 0),
            "day": pc.cast(pc.cast(pc.add(pc.remainder(ids, 365), 19723), pa.int32()), pa.date32()),
            "ts": pc.cast(pc.multiply(pc.add(ids, 1704067200), 1_000_000), pa.timestamp("us", tz="UTC")),
        }
    )
    return table.to_batches(max_chunksize=131_072)


class MemoryReader(DataSourceReader):
    """Yields ``rows`` rows in ``parts`` tasks from batches built once per Python worker (nothing is read)."""

    def __init__(self, rows: int, parts: int, schema: StructType) -> None:
        self.rows = rows
        self.parts = parts
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # A module of the worker process keeps the batches (this class is pickled by value: its globals are new
        # in every task).
        cache = sys.modules.setdefault("_tablefmt_bench_memory", types.ModuleType("_tablefmt_bench_memory"))
        batches: list[pa.RecordBatch] | None = getattr(cache, "batches", None)
        if batches is None or sum(b.num_rows for b in batches) != self.rows:
            target = to_arrow_schema(self.schema, timezone="UTC")  # with the declared nullability
            batches = cache.batches = [b.cast(target) for b in memory_batches(self.rows)]
        yield from batches[partition.value :: self.parts]


class MemorySource(DataSource):
    """``format("tablefmt_bench_memory")``: the floor of a Python data source read."""

    @classmethod
    def name(cls) -> str:
        return "tablefmt_bench_memory"

    def schema(self) -> str:
        return (
            "id bigint not null, small int, big bigint not null, ratio double, amount double, user string, "
            "kind string not null, flag boolean, day date, ts timestamp not null"
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        return MemoryReader(int(self.options["rows"]), int(self.options.get("parts", "2")), schema)


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
    spark.dataSource.register(MemorySource)
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


def tree_cpu(root: int) -> tuple[float, float] | None:
    """CPU seconds (user + system) so far of the JVM and of the Python processes under ``root`` (not ``root``)."""
    if not os.path.isdir("/proc/self"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    usage: dict[int, tuple[bool, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                text = stat.read()
        except OSError:  # ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(name))
        is_jvm = "java" in text[text.index("(") + 1 : text.rindex(")")]
        usage[int(name)] = (is_jvm, (int(fields[11]) + int(fields[12])) / tick)
    jvm = python = 0.0
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        if pid in usage:
            if usage[pid][0]:
                jvm += usage[pid][1]
            else:
                python += usage[pid][1]
    return jvm, python


def timed_with_cpu(fn: Callable[..., object], *args: object) -> tuple[float, tuple[float, float] | None]:
    """Wall seconds of ``fn(*args)`` and the (JVM, Python workers) CPU seconds it took (None without /proc)."""
    before = tree_cpu(os.getpid())
    wall = timed(fn, *args)
    after = tree_cpu(os.getpid())
    if before is None or after is None:
        return wall, None
    return wall, (after[0] - before[0], after[1] - before[1])


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


def read_memory(spark: SparkSession, rows: int, parts: int) -> None:
    reader = spark.read.format("tablefmt_bench_memory").option("rows", str(rows)).option("parts", str(parts))
    reader.load().write.format("noop").mode("overwrite").save()


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
                "in-memory data source",
            )
        }
        cpu: dict[str, list[tuple[float, float]]] = {k: [] for k in results}
        loads: list[float] = []
        parts = spark.sparkContext.defaultParallelism  # the tablefmt source's split count for a table this small
        for rep in range(args.reps + 1):  # repetition 0 warms up every path and is not counted
            native_dir = os.path.join(base, f"native-{rep}")
            table_dir = os.path.join(base, f"table-{rep}")
            samples = {
                "native write": timed(write_native, df, native_dir, args.compression),
                "tablefmt write": timed(write_tablefmt, df, table_dir, args.compression),
            }
            reads: list[tuple[str, Callable[..., None], tuple[object, ...]]] = [
                ("native read", read_parquet_dir, (spark, native_dir)),
                ("tablefmt read (data source)", read_datasource, (spark, table_dir)),
                ("tablefmt read_native", read_snapshot_natively, (spark, table_dir)),
                ("in-memory data source", read_memory, (spark, args.rows, parts)),
            ]
            cpu_samples: dict[str, tuple[float, float]] = {}
            for key, read, read_args in reads if rep % 2 else reversed(reads):
                samples[key], cpu_sample = timed_with_cpu(read, *read_args)
                if cpu_sample is not None:
                    cpu_samples[key] = cpu_sample
            if rep:
                for key, value in samples.items():
                    results[key].append(value)
                for key, cpu_sample in cpu_samples.items():
                    cpu[key].append(cpu_sample)
                loads.append(os.getloadavg()[0])
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
        print(f"  load average (1 min) during the rounds: {min(loads):.1f}-{max(loads):.1f}")
        if cpu["native read"]:
            native_cpu = statistics.median(sum(c) for c in cpu["native read"])
            print("  CPU time per read, median of rounds (JVM + Python workers), its total against the native read:")
            for key in ("native read", "tablefmt read (data source)", "tablefmt read_native", "in-memory data source"):
                jvm = statistics.median(c[0] for c in cpu[key])
                python = statistics.median(c[1] for c in cpu[key])
                total = statistics.median(sum(c) for c in cpu[key])
                print(
                    f"    {key:30s} JVM {jvm:.2f} s + Python {python:.2f} s = {total:.2f} s "
                    f"({total / native_cpu:.2f}x native)"
                )
        for label, key, peer, target in (
            ("write", "tablefmt write", "native write", 1.2),
            ("read, data source", "tablefmt read (data source)", "native read", 1.2),
            ("read, read_native", "tablefmt read_native", "native read", 1.5),
            ("read, in-memory floor", "in-memory data source", "native read", None),
        ):
            ratios = [a / b for a, b in zip(results[key], results[peer])]
            target_text = "" if target is None else f"; target <= {target}x"
            print(
                f"  {label:22s} {statistics.median(ratios):.2f}x median of rounds, {median[key] / median[peer]:.2f}x "
                f"of medians, {best[key] / best[peer]:.2f}x best{target_text}; rounds: "
                + " ".join(f"{r:.2f}" for r in ratios)
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
