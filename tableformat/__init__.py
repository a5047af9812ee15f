"""tablefmt: Apache Paimon-compatible append tables with safe retention (expiration, orphan cleanup).

``Table``, ``DataFileInfo`` and the models are imported at first use (module ``__getattr__``), so ``import
tableformat`` and the ``tablefmt`` command start without loading the table API they may not need (cron starts one
process per table: docs/benchmarks.md, "Start-up").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tableformat.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    CorruptMetadataError,
    MaintenanceError,
    SchemaChangeError,
    SnapshotExpiredWhileReadingError,
    SnapshotNotFoundError,
    StorageError,
    TableAlreadyExistsError,
    TableFormatError,
    TableNotFoundError,
    TagError,
    UnknownOptionError,
    UnsafePathError,
    UnsupportedFormatError,
    ValidationError,
)

if TYPE_CHECKING:
    from tableformat.model import CommitKind, Snapshot, Tag
    from tableformat.table import DataFileInfo, Table

__version__ = "0.1.0"

__all__ = [
    "CommitConflictError",
    "CommitError",
    "CommitKind",
    "CommitStateUnknownError",
    "CorruptMetadataError",
    "DataFileInfo",
    "MaintenanceError",
    "SchemaChangeError",
    "Snapshot",
    "SnapshotExpiredWhileReadingError",
    "SnapshotNotFoundError",
    "StorageError",
    "Table",
    "TableAlreadyExistsError",
    "TableFormatError",
    "TableNotFoundError",
    "Tag",
    "TagError",
    "UnknownOptionError",
    "UnsafePathError",
    "UnsupportedFormatError",
    "ValidationError",
]

_IMPORTED_AT_FIRST_USE = {
    "CommitKind": "tableformat.model",
    "Snapshot": "tableformat.model",
    "Tag": "tableformat.model",
    "DataFileInfo": "tableformat.table",
    "Table": "tableformat.table",
}
"""Public names and the module each comes from, imported when first read."""


def __getattr__(name: str) -> Any:
    module = _IMPORTED_AT_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'tableformat' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads are plain attribute lookups
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_IMPORTED_AT_FIRST_USE})
