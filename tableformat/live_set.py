"""The live files of a snapshot: its manifests (pruned by partition statistics) read and their entries merged.

The one ADD/DELETE merge of the code base: a file's state in a snapshot is its last entry in base-then-delta
manifest order. Commits, scans and maintenance all take live sets from here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple, Protocol, TypeVar

from tableformat.codec.avro_projection import ScanRef
from tableformat.codec.binary_row import decode_row
from tableformat.codec.entry_codec import EntryRecord
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.errors import CorruptMetadataError
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.store import MetadataStore
from tableformat.threads import thread_pool


@dataclass(frozen=True, slots=True)
class PartitionPredicate:
    """An OR of partial partition specs; each spec is an AND of column equalities (typed values, None = null)."""

    specs: tuple[Mapping[str, Any], ...]
    _index: tuple[tuple[str, ...], frozenset[tuple[Any, ...]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """When every spec names the same columns (a drop of many partitions): their values as one hash set, so a
    match costs one lookup instead of one comparison per spec."""

    def __post_init__(self) -> None:
        if len({frozenset(spec) for spec in self.specs}) != 1:
            return
        names = tuple(sorted(self.specs[0]))
        try:
            wanted = frozenset(tuple(spec[k] for k in names) for spec in self.specs)
        except TypeError:  # an unhashable value: compare spec by spec
            return
        object.__setattr__(self, "_index", (names, wanted))

    def matches(self, values: Mapping[str, Any]) -> bool:
        if self._index is not None:
            names, wanted = self._index
            return tuple(values.get(k) for k in names) in wanted
        return any(all(values.get(k) == v for k, v in spec.items()) for spec in self.specs)

    def may_match(self, meta: ManifestFileMeta, codec: PartitionCodec) -> bool:
        """False only if the manifest's partition statistics prove no entry can match."""
        stats = meta.partition_stats
        if not codec.types or len(stats.min_values) <= 12:
            return True
        try:
            mins = dict(zip(codec.keys, decode_row(stats.min_values, codec.types)))
            maxs = dict(zip(codec.keys, decode_row(stats.max_values, codec.types)))
        except CorruptMetadataError:
            return True
        nulls = dict(zip(codec.keys, stats.null_counts or ()))
        for spec in self.specs:
            possible = True
            for key, value in spec.items():
                if value is None:
                    count = nulls.get(key)
                    possible = count is None or count > 0
                else:
                    low, high = mins.get(key), maxs.get(key)
                    if low is None or high is None:
                        possible = low is None and high is None and nulls.get(key) is None
                    else:
                        try:
                            possible = low <= value <= high
                        except TypeError:
                            possible = True
                if not possible:
                    break
            if possible:
                return True
        return False


R = TypeVar("R")


def read_manifests(manifests: Sequence[ManifestFileMeta], read: Callable[[str], R], threads: int = 8) -> list[R]:
    """``read(file name)`` of each manifest, in parallel, returned in manifest order."""
    if len(manifests) <= 1 or threads <= 1:
        return [read(m.file_name) for m in manifests]
    with thread_pool(min(threads, len(manifests)), "tablefmt-manifests") as pool:
        return list(pool.map(lambda m: read(m.file_name), manifests))


def read_entries(
    store: MetadataStore, manifests: Sequence[ManifestFileMeta], threads: int = 8
) -> list[list[ManifestEntry]]:
    """Entries of each manifest, read in parallel, returned in manifest order."""
    return read_manifests(manifests, store.read_manifest, threads)


class Entry(Protocol):
    """Anything merged into a live set: a manifest entry, a projected one, or a (kind, path) pair."""

    @property
    def kind(self) -> FileKind: ...

    def identifier(self) -> Hashable: ...


E = TypeVar("E", bound=Entry)


class PartitionedEntry(Entry, Protocol):
    """An entry that also names its partition row (a manifest entry or a ScanRef)."""

    @property
    def partition(self) -> bytes: ...


P = TypeVar("P", bound=PartitionedEntry)
_KIND = itemgetter(0)
"""EntryRecord.kind, by index."""
_NAME = itemgetter(3)
"""EntryRecord.file_name, by index."""


def merge_entries(entry_lists: Iterable[Iterable[E]]) -> dict[Hashable, E]:
    """Apply entries in order: ADD puts a file, DELETE removes it. Returns live ADD entries by identity.

    A DELETE whose ADD is not in the input is ignored (its ADD lives in manifests outside the input).
    """
    live: dict[Hashable, E] = {}
    add = FileKind.ADD
    for entries in entry_lists:
        for entry in entries:
            key = entry.identifier()
            if entry.kind == add:
                live[key] = entry
            else:
                live.pop(key, None)
    return live


def merge_records(record_lists: Sequence[Sequence[EntryRecord]]) -> list[EntryRecord]:
    """The live records of ``record_lists`` (``merge_entries(...).values()``, in the same order).

    The usual history of an append table only adds files: when no list holds a DELETE and no file name appears twice,
    every record is live and no merge is needed (each record's kind is checked, not the manifests' counts)."""
    total = sum(map(len, record_lists))
    delete = FileKind.DELETE
    if any(delete in map(_KIND, records) for records in record_lists):
        return list(merge_entries(record_lists).values())
    names = {name for records in record_lists for name in map(_NAME, records)}
    if len(names) != total:  # a name twice (another bucket or partition, or the same file): identities decide
        return list(merge_entries(record_lists).values())
    return [record for records in record_lists for record in records]


class PathEntry(NamedTuple):
    """An entry reduced to its kind and its file's path (identity by path, within one table's data files)."""

    kind: FileKind
    path: str

    def identifier(self) -> Hashable:
        return self.path


def _live(
    store: MetadataStore,
    snapshot: Snapshot,
    codec: PartitionCodec,
    predicate: PartitionPredicate | None,
    threads: int,
    read: Callable[[str], Sequence[P]],
) -> list[P]:
    """The live files of a snapshot as ``read`` decodes a manifest's entries, restricted to matching partitions."""
    manifests = store.manifests_of(snapshot)
    if predicate is not None:
        manifests = [m for m in manifests if predicate.may_match(m, codec)]
    entries = list(merge_entries(read_manifests(manifests, read, threads)).values())
    if predicate is not None:
        entries = [e for e in entries if predicate.matches(codec.values(e.partition))]
    return entries


def live_entries(
    store: MetadataStore,
    snapshot: Snapshot,
    codec: PartitionCodec,
    predicate: PartitionPredicate | None = None,
    threads: int = 8,
) -> list[ManifestEntry]:
    """The live files of a snapshot, optionally restricted to matching partitions."""
    return _live(store, snapshot, codec, predicate, threads, store.read_manifest)


def live_scan_refs(
    store: MetadataStore,
    snapshot: Snapshot,
    codec: PartitionCodec,
    predicate: PartitionPredicate | None = None,
    threads: int = 8,
) -> list[ScanRef]:
    """``live_entries(...)`` decoded only as far as reading the files needs (avro_projection.ScanRef: identity, place,
    size, rows, schema id; no statistics, no full entries): the same files, in the same order. A scan without a row
    filter or a record-level TTL never looks at statistics, so it plans with these."""
    return _live(store, snapshot, codec, predicate, threads, store.read_manifest_scan_refs)
