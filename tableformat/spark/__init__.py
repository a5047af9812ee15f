"""PySpark integration: the ``tablefmt`` data source, maintenance with executors and a fast read path.

* :func:`register` makes ``spark.read/write.format("tablefmt")`` available (options: :mod:`.config`);
* :func:`read_native` reads a snapshot through Spark's own Parquet reader when the files allow it;
* :func:`maintain` runs a table's maintenance on demand; :func:`maintain_warehouse` runs the ``tablefmt maintain``
  pass over a warehouse with tables spread over executors; :func:`remove_orphan_files` cleans orphans with
  listing and deletion on Spark's executors, by the local cleaner's rules.

Needs the ``spark`` extra (pyspark 4.3) and the tablefmt package installed where Spark's Python workers run.
The names below load on first use, so Spark's workers, which import only the data source modules, never import
the maintenance code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tableformat.spark.datasource import TablefmtDataSource
    from tableformat.spark.fast_read import read_native
    from tableformat.spark.maintenance import MaintenanceReport, maintain, remove_orphan_files
    from tableformat.spark.registration import register
    from tableformat.spark.warehouse import maintain_warehouse

_EXPORTS = {
    "MaintenanceReport": "tableformat.spark.maintenance",
    "TablefmtDataSource": "tableformat.spark.datasource",
    "maintain": "tableformat.spark.maintenance",
    "maintain_warehouse": "tableformat.spark.warehouse",
    "read_native": "tableformat.spark.fast_read",
    "register": "tableformat.spark.registration",
    "remove_orphan_files": "tableformat.spark.maintenance",
}

__all__ = [
    "MaintenanceReport",
    "TablefmtDataSource",
    "maintain",
    "maintain_warehouse",
    "read_native",
    "register",
    "remove_orphan_files",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
