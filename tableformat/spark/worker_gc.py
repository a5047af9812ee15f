"""Keep pyspark's after-task garbage collection from walking tablefmt's (and pyarrow's) imports in every task.

A reused Python worker (``spark.python.worker.reuse``, the default) returns to pyspark's daemon loop after each task,
which runs a full ``gc.collect()`` before taking the next one. Once a worker has imported pyarrow, pandas and
tableformat, that collection walks about 90,000 long-lived objects: measured in the bench's read tasks, 100 ms of CPU
per task cycle in the worker, 60 ms with those objects frozen (``gc.freeze()``), against about 45 ms for a Python
data source that reads nothing. On two cores that CPU is taken from the JVM threads turning the batches into rows.

:func:`freeze_worker_heap` collects once, then freezes what is alive: the modules, classes and functions the worker
will keep anyway. Later collections walk only the objects made since. It acts once per process and only in a reused
Spark worker (pyspark sets ``SPARK_REUSE_WORKER`` there, never in the user's driver process), so nothing changes for
a program that calls the reader itself. Frozen objects are still freed by reference counting; only a reference cycle
among them, made garbage later, stays (the worker's lifetime).

"Once per process" is a flag (``tableformat.gc_pause``, shared with the maintenance runs' freeze), not
``gc.get_freeze_count()``: CPython counts the frozen objects by walking their list, one cache miss per object in a
worker whose caches other processes have emptied: 4.7 ms of CPU (5-65 ms wall on two busy cores) per call with
tableformat imported, four calls per read of the bench table (the schema and planning workers on the critical path
before any task starts, and each task).
"""

from __future__ import annotations

import os

from tableformat.gc_pause import freeze_for_good

REUSE_ENV = "SPARK_REUSE_WORKER"
"""Set by Spark in the environment of the Python workers it reuses across tasks."""


def freeze_worker_heap() -> bool:
    """In a reused pyspark worker whose heap is not frozen yet: collect, then freeze. Returns whether it froze."""
    if not os.environ.get(REUSE_ENV):
        return False
    return freeze_for_good()
