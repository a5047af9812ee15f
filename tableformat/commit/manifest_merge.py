"""Manifest merging with Paimon's defaults, so a snapshot's base list does not grow by one manifest per commit.

Minor merge: walk manifests in order, grouping until the target size, merge each full group; merge the trailing
group only when it has at least ``merge-min-count`` manifests. Full compaction: once the manifests that need a
change (they hold DELETE entries or are small) reach the full-compaction threshold, rewrite them so the base holds
no DELETE entries at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tableformat.codec.partition_codec import PartitionCodec
from tableformat.layout import NameFactory
from tableformat.live_set import PartitionPredicate, merge_entries, read_entries
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta
from tableformat.model.types import DataType
from tableformat.store import MetadataStore


@dataclass(frozen=True, slots=True)
class MergePolicy:
    target_size: int
    merge_min_count: int
    full_compaction_size: int
    zstd_level: int | None = None
    """The zstd level merged manifests are written at (None: fastavro's default)."""


class ManifestMerger:
    """Merges a base manifest list; remembers the manifests it wrote (to remove them if the commit fails)."""

    def __init__(
        self,
        store: MetadataStore,
        names: NameFactory,
        schema_id: int,
        partition_types: Sequence[DataType],
        codec: PartitionCodec,
        policy: MergePolicy,
    ) -> None:
        self.store = store
        self.names = names
        self.schema_id = schema_id
        self.partition_types = list(partition_types)
        self.codec = codec
        self.policy = policy
        self.written: list[str] = []

    def merge(self, manifests: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta]:
        """The merged manifest list (unchanged manifests are reused as they are)."""
        must_change = [m for m in manifests if m.num_deleted_files > 0 or m.file_size < self.policy.target_size]
        if sum(m.file_size for m in must_change) >= self.policy.full_compaction_size:
            return self._full(manifests)
        return self._minor(manifests)

    def _minor(self, manifests: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta]:
        result: list[ManifestFileMeta] = []
        group: list[ManifestFileMeta] = []
        size = 0
        for meta in manifests:
            group.append(meta)
            size += meta.file_size
            if size >= self.policy.target_size:
                result.extend(self._merge_group(group, drop_deletes=False))
                group, size = [], 0
        if len(group) >= self.policy.merge_min_count:
            result.extend(self._merge_group(group, drop_deletes=False))
        else:
            result.extend(group)
        return result

    def _full(self, manifests: Sequence[ManifestFileMeta]) -> list[ManifestFileMeta]:
        with_deletes = [m for m in manifests if m.num_deleted_files > 0]
        deleted_partitions = {
            e.partition
            for entries in read_entries(self.store, with_deletes)
            for e in entries
            if e.kind == FileKind.DELETE
        }
        specs = tuple(self.codec.values(p) for p in deleted_partitions)
        predicate = PartitionPredicate(specs) if specs else None
        keep: list[ManifestFileMeta] = []
        rewrite: list[ManifestFileMeta] = []
        for meta in manifests:
            untouched = meta.num_deleted_files == 0 and meta.file_size >= self.policy.target_size
            if untouched and (predicate is None or not predicate.may_match(meta, self.codec)):
                keep.append(meta)
            else:
                rewrite.append(meta)
        return keep + self._merge_group(rewrite, drop_deletes=True)

    def _merge_group(self, group: Sequence[ManifestFileMeta], *, drop_deletes: bool) -> list[ManifestFileMeta]:
        if len(group) <= 1 and not drop_deletes:
            return list(group)
        entry_lists = read_entries(self.store, group)
        total_entries = sum(len(entries) for entries in entry_lists)
        if drop_deletes:
            merged = list(merge_entries(entry_lists).values())
        else:
            merged = _merge_keeping_unmatched_deletes(entry_lists)
        if not merged:
            return []
        bytes_per_entry = max(1, sum(m.file_size for m in group) // max(1, total_entries))
        per_file = max(1, self.policy.target_size // bytes_per_entry)
        result = []
        for start in range(0, len(merged), per_file):
            meta = self.store.write_manifest(
                merged[start : start + per_file],
                self.names,
                self.schema_id,
                self.partition_types,
                written=self.written,
                level=self.policy.zstd_level,
            )
            result.append(meta)
        return result


def _merge_keeping_unmatched_deletes(entry_lists: Sequence[Sequence[ManifestEntry]]) -> list[ManifestEntry]:
    """ADD+DELETE pairs cancel; a DELETE whose ADD is in an earlier manifest outside the group is kept."""
    merged: dict[tuple[object, ...], ManifestEntry] = {}
    for entries in entry_lists:
        for entry in entries:
            key = entry.identifier()
            previous = merged.get(key)
            if entry.kind == FileKind.DELETE and previous is not None and previous.kind == FileKind.ADD:
                del merged[key]
            else:
                merged[key] = entry
    return list(merged.values())
