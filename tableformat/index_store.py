"""The store's reads and writes of index manifests, index files (deletion vectors, hash indexes) and statistics files.

A mixin of :class:`tableformat.store.MetadataStore` (kept apart for the store's size): through it the store stays
the only reader and writer of metadata files. Formats: :mod:`tableformat.codec.index_manifest_codec`,
:mod:`tableformat.codec.deletion_vector_codec`, the statistics JSON in :mod:`tableformat.codec.json_codec`.

Index files named with an external path (``_EXTERNAL_PATH``: ``global-index.external-path``, or data-file external
paths with ``index-file-in-data-file-dir``) are refused with UnsupportedFormatError, as data files with one are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tableformat.codec import deletion_vector_codec, index_manifest_codec, json_codec
from tableformat.errors import MissingMetadataError, StorageError, UnsupportedFormatError
from tableformat.io.fileio import FileIO
from tableformat.layout import INDEX_FILE_PREFIX, INDEX_MANIFEST_PREFIX, STATISTICS_PREFIX, NameFactory, TableLayout
from tableformat.model.index import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
    Statistics,
    live_index_entries,
)


class IndexFileStore:
    """Index manifests, index files and statistics files of one table (``io`` and ``layout`` are the store's)."""

    io: FileIO
    layout: TableLayout

    def _read_index_path(self, path: str, what: str, byte_range: tuple[int, int] | None = None) -> bytes:
        try:
            if byte_range is None:
                return self.io.read_bytes(path)
            return self.io.read_range(path, *byte_range)
        except FileNotFoundError:
            raise MissingMetadataError(self.io.url(path), f"{what} is missing") from None
        except OSError as exc:
            raise StorageError(f"cannot read {self.io.url(path)}: {exc}") from exc

    # --- index manifests ---------------------------------------------------------------------------------------
    def read_index_manifest_entries(self, name: str) -> list[IndexManifestEntry]:
        """Every entry of ``manifest/<name>`` as stored."""
        path = self.layout.index_manifest_file(name)
        data = self._read_index_path(path, "index manifest")
        return index_manifest_codec.read_index_manifest(data, self.io.url(path))

    def read_index_manifest(self, name: str) -> list[IndexManifestEntry]:
        """The live index files of the snapshot whose ``indexManifest`` is ``name``: its ADD entries (Paimon writes
        the full set, ADD entries only; a DELETE entry would remove the file it names)."""
        return live_index_entries(self.read_index_manifest_entries(name))

    def write_index_manifest(
        self, entries: Iterable[IndexManifestEntry], names: NameFactory, *, level: int | None = None
    ) -> str:
        """Write ``manifest/index-manifest-<uuid>-<n>`` and return its name (what a snapshot's ``indexManifest``
        holds). ``level``: the zstd level (None: fastavro's)."""
        name = names.next(INDEX_MANIFEST_PREFIX)
        self.io.write_bytes(
            self.layout.index_manifest_file(name), index_manifest_codec.write_index_manifest(entries, level=level)
        )
        return name

    # --- index files -----------------------------------------------------------------------------------------
    def index_file_path(self, index_file: IndexFileMeta, bucket_dir: str | None = None) -> str:
        """Where ``index_file`` lives (see :meth:`TableLayout.index_file` for ``bucket_dir``)."""
        if index_file.external_path:
            raise UnsupportedFormatError(
                f"index file {index_file.file_name} has an external path ({index_file.external_path}); tablefmt reads "
                "index files inside the table root"
            )
        return self.layout.index_file(index_file.file_name, bucket_dir)

    def read_deletion_vectors(self, index_file: IndexFileMeta, bucket_dir: str | None = None) -> dict[str, Any]:
        """Data file name -> its deleted row positions (ascending numpy int64) of every vector in a
        deletion-vector index file (one read of the whole file)."""
        path = self.index_file_path(index_file, bucket_dir)
        data = self._read_index_path(path, "deletion vector file")
        return deletion_vector_codec.deletion_vectors_from_file_bytes(
            data, index_file.dv_ranges or (), self.io.url(path)
        )

    def read_deletion_vector(
        self, index_file: IndexFileMeta, data_file_name: str, bucket_dir: str | None = None
    ) -> Any | None:
        """The deleted row positions (ascending numpy int64) of ``data_file_name`` in ``index_file`` (one ranged
        read of its vector), or None when the file holds no vector for it."""
        dv_range = index_file.dv_range(data_file_name)
        if dv_range is None:
            return None
        path = self.index_file_path(index_file, bucket_dir)
        end = dv_range.offset + deletion_vector_codec.deletion_vector_span(dv_range.length)
        data = self._read_index_path(path, "deletion vector file", (dv_range.offset, end))
        return deletion_vector_codec.deletion_vector_from_bytes(data, dv_range.length, self.io.url(path))

    def write_deletion_vector_file(
        self,
        vectors: Mapping[str, Iterable[int] | Any],
        names: NameFactory,
        *,
        bitmap64: bool = False,
        bucket_dir: str | None = None,
    ) -> IndexFileMeta:
        """Write a deletion-vector index file of ``vectors`` (data file name -> deleted positions, in the mapping's
        order) and return its meta, as ``DeletionFileWriter.result`` makes it (row count = number of vectors)."""
        data, ranges = deletion_vector_codec.deletion_vector_file_to_bytes(vectors, bitmap64=bitmap64)
        name = names.next(INDEX_FILE_PREFIX)
        self.io.write_bytes(self.layout.index_file(name, bucket_dir), data)
        return IndexFileMeta(
            index_type=DELETION_VECTORS_INDEX,
            file_name=name,
            file_size=len(data),
            row_count=len(ranges),
            dv_ranges=ranges,
        )

    def read_hash_index(self, index_file: IndexFileMeta, bucket_dir: str | None = None) -> list[int]:
        """The key hashes of a hash index file."""
        path = self.index_file_path(index_file, bucket_dir)
        return deletion_vector_codec.hash_index_from_bytes(self._read_index_path(path, "hash index"), self.io.url(path))

    def write_hash_index(
        self, hashes: Iterable[int], names: NameFactory, *, bucket_dir: str | None = None
    ) -> IndexFileMeta:
        """Write a hash index file and return its meta, as ``HashIndexFile.write`` makes it."""
        values = list(hashes)
        data = deletion_vector_codec.hash_index_to_bytes(values)
        name = names.next(INDEX_FILE_PREFIX)
        self.io.write_bytes(self.layout.index_file(name, bucket_dir), data)
        return IndexFileMeta(index_type=HASH_INDEX, file_name=name, file_size=len(data), row_count=len(values))

    # --- statistics ------------------------------------------------------------------------------------------
    def read_statistics(self, name: str) -> Statistics:
        """``statistics/<name>`` (a snapshot's ``statistics``)."""
        path = self.layout.statistics_file(name)
        return json_codec.statistics_from_json(self._read_index_path(path, "statistics file"), self.io.url(path))

    def write_statistics(self, statistics: Statistics, names: NameFactory) -> str:
        """Write ``statistics/stat-<uuid>-<n>`` and return its name."""
        name = names.next(STATISTICS_PREFIX)
        self.io.write_bytes(self.layout.statistics_file(name), json_codec.statistics_to_json(statistics))
        return name
