"""Immutable metadata models; no I/O and no pyarrow here."""

from tableformat.model.index import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorMeta,
    GlobalIndexMeta,
    IndexFileMeta,
    IndexManifestEntry,
    Statistics,
    live_index_entries,
)
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
    "DELETION_VECTORS_INDEX",
    "EMPTY_ROW",
    "EMPTY_STATS",
    "HASH_INDEX",
    "CommitKind",
    "Consumer",
    "DataField",
    "DataFileMeta",
    "DataType",
    "DeletionVectorMeta",
    "FileKind",
    "FileSource",
    "GlobalIndexMeta",
    "IndexFileMeta",
    "IndexManifestEntry",
    "ManifestEntry",
    "ManifestFileMeta",
    "SimpleStats",
    "Snapshot",
    "Statistics",
    "TableSchema",
    "Tag",
    "live_index_entries",
]
