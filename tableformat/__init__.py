"""tablefmt: Apache Paimon-compatible append tables with safe retention (expiration, orphan cleanup)."""

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
