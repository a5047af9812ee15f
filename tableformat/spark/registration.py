"""Making ``format("tablefmt")`` known to a SparkSession."""

from __future__ import annotations

import threading
import weakref

from pyspark.sql import SparkSession

from tableformat.spark.datasource import TablefmtDataSource

_registered: weakref.WeakSet[SparkSession] = weakref.WeakSet()
_lock = threading.Lock()


def register(spark: SparkSession) -> None:
    """Register the ``tablefmt`` data source with a session (workers import it from the installed package)."""
    with _lock:
        spark.dataSource.register(TablefmtDataSource)
        _registered.add(spark)


def ensure_registered(spark: SparkSession) -> None:
    """register() unless this process already registered the source with ``spark``."""
    if spark not in _registered:
        register(spark)
