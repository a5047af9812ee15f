"""Manifest entries and manifest-list rows (the Avro metadata), kept close to Paimon's field set.

Binary rows (partition values, statistics, keys) are kept as the exact bytes read or written so a DELETE entry
copies its ADD byte for byte; :mod:`tableformat.codec.binary_row` turns them into Python values.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

EMPTY_ROW = bytes(12)
"""An arity-0 binary row: 4-byte arity prefix + 8-byte null-bit header."""


class FileKind(IntEnum):
    """Manifest entry kind: Paimon stores 0 = ADD, 1 = DELETE."""

    ADD = 0
    DELETE = 1


class FileSource(IntEnum):
    """Where a data file came from."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleStats:
    """Min/max binary rows and per-column null counts."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: tuple[int | None, ...] | None = ()


EMPTY_STATS = SimpleStats()


@dataclass(frozen=True, slots=True, kw_only=True)
class DataFileMeta:
    """One data file as a manifest entry describes it."""

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = EMPTY_STATS
    value_stats: SimpleStats = EMPTY_STATS
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    schema_id: int = 0
    level: int = 0
    extra_files: tuple[str, ...] = ()
    creation_time_ms: int | None = None
    delete_row_count: int | None = 0
    embedded_index: bytes | None = None
    file_source: int | None = FileSource.APPEND
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    """One row of a manifest file: a data file added to or deleted from a partition/bucket."""

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> tuple[object, ...]:
        """Paimon's file identity: (partition, bucket, level, name, extra files, embedded index, external path)."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)

    def as_kind(self, kind: FileKind) -> ManifestEntry:
        """The same file with another kind (a DELETE is a full copy of its ADD)."""
        return ManifestEntry(
            kind=kind, partition=self.partition, bucket=self.bucket, total_buckets=self.total_buckets, file=self.file
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestFileMeta:
    """One row of a manifest list: a manifest file and summary statistics for pruning."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None
