"""Immutable metadata models; no I/O and no pyarrow here."""

from tableformat.model.manifest import (
    EMPTY_ROW,
    EMPTY_STATS,
    DataFileMeta,
    FileKind,
    FileSource,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)
from tableformat.model.schema import DataField, TableSchema
from tableformat.model.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Consumer, Snapshot, Tag
from tableformat.model.types import DataType

__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "EMPTY_ROW",
    "EMPTY_STATS",
    "CommitKind",
    "Consumer",
    "DataField",
    "DataFileMeta",
    "DataType",
    "FileKind",
    "FileSource",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "Snapshot",
    "TableSchema",
    "Tag",
]
