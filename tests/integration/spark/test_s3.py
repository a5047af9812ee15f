"""Spark on an S3 table (SeaweedFS): storage options reach the executors; distributed orphan cleanup on S3."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from support.ci import optional

optional("pyspark")

from spark_support import rows
from support.operations import remove_orphan_files as local_remove_orphan_files

from tableformat import Table
from tableformat.spark import read_native, remove_orphan_files
from tableformat.spark.config import ReadConfig

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

DAY_MS = 86_400_000


def test_spark_on_s3_writes_reads_and_cleans(spark: Any, s3_root: tuple[str, dict[str, Any]]) -> None:
    url, storage = s3_root
    frame = spark.createDataFrame([(i, f"d{i % 2}") for i in range(10)], "id long, dt string").repartition(2)
    frame.write.format("tablefmt").mode("append").option("partitionBy", "dt").option(
        "storage-options", json.dumps(storage)
    ).save(url)
    loaded = spark.read.format("tablefmt").option("storage-options", json.dumps(storage)).load(url)
    expected = sorted((i, f"d{i % 2}") for i in range(10))
    assert rows(loaded) == expected
    # Spark here has no s3a filesystem: read_native falls back to the data source, same snapshot, same rows
    assert rows(read_native(spark, url, storage_options=storage)) == expected

    table = Table.open(url, storage)
    stray = f"{table.context.layout.root}/dt=d0/bucket-0/data-{uuid.uuid4()}-0.parquet"
    table.context.io.write_bytes(stray, b"leftover of a killed task")
    later = table.latest_snapshot()
    assert later is not None
    now_ms = later.time_millis + 2 * DAY_MS  # every file counts as old; only the stray is unreferenced
    guard = timedelta(days=1)
    local = local_remove_orphan_files(table.context, older_than=guard, dry_run=True, now_ms=now_ms)
    distributed = remove_orphan_files(spark, url, older_than=guard, storage_options=storage, now_ms=now_ms)
    assert distributed.deleted_paths == local.deleted_paths == (table.context.layout.relative(stray),)
    assert not table.context.io.exists(stray)
    assert sorted((r["id"], r["dt"]) for r in table.to_arrow().to_pylist()) == expected


def test_storage_keys_reach_the_s3_file_io_typed(spark: Any, s3_root: tuple[str, dict[str, Any]]) -> None:
    """``storage.anon=false`` is False (a truthy "false" would send unsigned requests, which SeaweedFS refuses),
    ``storage.max_concurrency`` an int and ``storage.client_kwargs.region_name`` nests under client_kwargs."""
    url, storage = s3_root
    options = {
        "storage.key": storage["key"],
        "storage.secret": storage["secret"],
        "storage.endpoint_url": storage["endpoint_url"],
        "storage.client_kwargs.region_name": storage["client_kwargs"]["region_name"],
        "storage.anon": "false",
        "storage.max_concurrency": "4",
        "storage-options": json.dumps({"config_kwargs": storage["config_kwargs"]}),
    }
    assert ReadConfig.parse({"path": url, **options}).storage_options == {
        **storage,
        "anon": False,
        "max_concurrency": 4,
    }
    frame = spark.createDataFrame([(i, f"d{i % 2}") for i in range(4)], "id long, dt string")
    frame.write.format("tablefmt").mode("append").options(**options).save(url)
    loaded = spark.read.format("tablefmt").options(**options).load(url)
    assert rows(loaded) == sorted((i, f"d{i % 2}") for i in range(4))
