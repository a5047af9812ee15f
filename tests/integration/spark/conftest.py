"""One SparkSession for the whole test run (spark.md section 11), shared by every Spark test.

The master is ``local[2,3]``: two cores and up to three attempts per task, so the retry test runs in the same JVM
as everything else (plain ``local[2]`` never retries a task). Tests without Java or pyspark are skipped, unless
CI is set, where that is an error: pyspark is imported here first, so the modules' ``optional("pyspark")``
can only skip outside CI.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from support.ci import on_ci

if on_ci():  # under CI a missing pyspark fails the run here (loading this conftest), never skips a module
    import pyspark  # noqa: F401


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session-scoped SparkSession with the ``tablefmt`` source registered."""
    java_home = os.environ.get("JAVA_HOME")
    has_java = shutil.which("java") is not None or bool(
        java_home and os.path.exists(os.path.join(java_home, "bin", "java"))
    )
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        if on_ci():
            raise
        pytest.skip(f"Spark tests need pyspark: {exc}")
    if not has_java:
        if on_ci():
            raise RuntimeError("Spark tests need Java 17 (java on PATH or JAVA_HOME)")
        pytest.skip("Spark tests need Java 17 (java on PATH or JAVA_HOME)")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2,3]")
        .appName("tablefmt-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from tableformat.spark import register

    register(session)
    try:
        yield session
    finally:
        session.stop()
