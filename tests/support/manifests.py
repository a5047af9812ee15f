"""Hand-made manifest entries and real manifest files, for tests of the live-set merge and the manifest merger.

``Manifests(table)`` writes manifests into a real table's ``manifest/`` directory through its MetadataStore, so
their sizes, partition statistics and Avro encoding are exactly what commits produce; the data files they name
need not exist (these tests never read data).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tableformat.codec.binary_row import encode_row
from tableformat.layout import NameFactory
from tableformat.live_set import merge_entries
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry, ManifestFileMeta
from tableformat.table import Table


class Manifests:
    """Entries and manifests of one table (its partition types, its store)."""

    def __init__(self, table: Table) -> None:
        self.ctx = table.context
        self.store = table.context.store
        self.codec = table.context.partition_codec()
        self.types = [f.type for f in table.context.schema.partition_fields]
        self.names = NameFactory()

    def entry(
        self, name: str, partition: Sequence[Any] = (), *, kind: FileKind = FileKind.ADD, rows: int = 1, bucket: int = 0
    ) -> ManifestEntry:
        """An entry for data file ``name`` in the partition with these values (in partition-key order)."""
        return ManifestEntry(
            kind=kind,
            partition=encode_row(list(partition), self.types),
            bucket=bucket,
            total_buckets=-1,
            file=DataFileMeta(file_name=name, file_size=100 * rows, row_count=rows),
        )

    def write(self, entries: Iterable[ManifestEntry]) -> ManifestFileMeta:
        """One manifest file holding ``entries`` (in order), as a commit writes it."""
        return self.store.write_manifest(list(entries), self.names, self.ctx.schema.id, self.types)

    def entries_of(self, metas: Sequence[ManifestFileMeta]) -> list[ManifestEntry]:
        """Every entry of the manifests, in order (read back from the files)."""
        return [e for meta in metas for e in self.store.read_manifest(meta.file_name)]

    def live(self, metas: Sequence[ManifestFileMeta]) -> dict[Any, ManifestEntry]:
        """The live ADD entries the manifests describe, by file identity (read back and merged in order)."""
        return merge_entries(self.store.read_manifest(m.file_name) for m in metas)


def kinds(entries: Iterable[ManifestEntry]) -> list[tuple[str, str]]:
    """(kind, file name) per entry: a readable picture of a manifest's content."""
    return [(e.kind.name, e.file.file_name) for e in entries]
