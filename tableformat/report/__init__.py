"""Retention reports: storage over time, bytes and rows by partition, what each rule would free now and when it is
next due, and whether retention keeps up with ingest, for one table (``table.report()``) or a warehouse
(``tablefmt report TARGET... --html FILE``).

- :mod:`.model`: the figures as data (exact bytes and rows).
- :mod:`.history`: storage over time from the snapshot history (each manifest read once).
- :mod:`.figures`: one table's figures, from the maintenance operations' dry runs, ``inspect.partitions()`` and
  the maintainer's keep-up functions.
- :mod:`.warehouse`: many tables, discovered as ``tablefmt maintain`` discovers them.
- :mod:`.charts` and :mod:`.page`: the self-contained HTML page (matplotlib, the optional extra ``report``).
"""

from .figures import since_cutoff, table_report
from .model import (
    KeepUpFigures,
    PartitionFigures,
    RuleFigures,
    StorageHistory,
    StoragePoint,
    TableRetentionReport,
    WarehouseReport,
)
from .page import render_html, write_html
from .warehouse import warehouse_report

__all__ = [
    "KeepUpFigures",
    "PartitionFigures",
    "RuleFigures",
    "StorageHistory",
    "StoragePoint",
    "TableRetentionReport",
    "WarehouseReport",
    "render_html",
    "since_cutoff",
    "table_report",
    "warehouse_report",
    "write_html",
]
