"""Index manifests, index files and statistics files: the metadata a snapshot names in ``indexManifest`` and
``statistics`` (Paimon's ``IndexManifestEntry``, ``IndexFileMeta``, ``DeletionVectorMeta``, ``GlobalIndexMeta``,
``Statistics``).

A snapshot's index manifest (``manifest/index-manifest-<uuid>-<n>``) holds the **full** set of the snapshot's index
files: Paimon's ``IndexManifestFileHandler`` reads the previous one, combines it with the commit's changes and
writes only ADD entries. Deletion-vector files and hash-index files live in ``index/`` unless the entry gives an
external path (or the table sets ``index-file-in-data-file-dir``, see :mod:`tableformat.layout`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tableformat.model.manifest import FileKind

DELETION_VECTORS_INDEX = "DELETION_VECTORS"
"""``DeletionVectorsIndexFile.DELETION_VECTORS_INDEX``: one file holds the deletion vectors of many data files."""
HASH_INDEX = "HASH"
"""``HashIndexFile.HASH_INDEX``: the key hashes of one bucket of a dynamic-bucket table (big-endian int32s)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector sits in a deletion-vector index file.

    ``offset`` is the position of the vector's 4-byte length prefix. ``length`` is what Paimon records: for a 32-bit
    vector (``BitmapDeletionVector``) the magic number plus the bitmap (the length prefix and the CRC excluded); for a
    64-bit one (``Bitmap64DeletionVector``) the whole serialization, prefix and CRC included. ``cardinality`` (the
    number of deleted rows) is absent in files written before Paimon 0.9.
    """

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalIndexMeta:
    """The row range and fields a global index file covers (``_GLOBAL_INDEX``; only global indexes have one)."""

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None = None
    index_meta: bytes | None = None
    source_meta: bytes | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFileMeta:
    """One index file: its type (``DELETION_VECTORS``, ``HASH`` or a global index type), name, size and row count
    (the number of vectors for a deletion-vector file, of ints for a hash file)."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    """In file order (Paimon's LinkedHashMap); None where Paimon writes null (hash and global index files)."""
    external_path: str | None = None
    """The file's full path when it lies outside ``index/`` (Paimon's ``_EXTERNAL_PATH``)."""
    global_index: GlobalIndexMeta | None = None

    def dv_range(self, data_file_name: str) -> DeletionVectorMeta | None:
        """The deletion vector of ``data_file_name`` in this file, or None."""
        return next((r for r in self.dv_ranges or () if r.data_file_name == data_file_name), None)

    def dv_data_files(self) -> tuple[str, ...]:
        """The data files this deletion-vector file holds vectors for, in file order."""
        return tuple(r.data_file_name for r in self.dv_ranges or ())


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexManifestEntry:
    """One row of an index manifest: an index file of a partition (BinaryRow bytes) and bucket."""

    kind: FileKind
    partition: bytes
    bucket: int
    index_file: IndexFileMeta


def live_index_entries(entries: Iterable[IndexManifestEntry]) -> list[IndexManifestEntry]:
    """The ADD entries not cancelled by a DELETE of the same file name, in order. Paimon writes index manifests of
    ADD entries only (``IndexManifestFileHandler`` checks that when it reads one), so this is the identity on its
    files; a DELETE entry, should one be found, removes the file it names."""
    entries = list(entries)
    deleted = {e.index_file.file_name for e in entries if e.kind is FileKind.DELETE}
    return [e for e in entries if e.kind is FileKind.ADD and e.index_file.file_name not in deleted]


@dataclass(frozen=True, slots=True, kw_only=True)
class Statistics:
    """``statistics/stat-<uuid>-<n>`` (Paimon's ``Statistics`` JSON, written by ANALYZE): table-level statistics of
    one snapshot. The file references no other file; ``col_stats`` is kept as read (column name -> its ``ColStats``
    JSON object) so that it writes back unchanged."""

    snapshot_id: int
    schema_id: int
    merged_record_count: int | None = None
    merged_record_size: int | None = None
    col_stats: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
