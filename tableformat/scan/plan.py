"""The live files of a snapshot as a read plans them: the same merge as :func:`tableformat.live_set.live_entries`,
over entries decoded only as far as reading their files needs (avro_projection.ScanRef: identity, place, size, rows,
schema id; no statistics, no full entries). A scan without a row filter or a record-level TTL never looks at
statistics, so it plans with these; one that prunes by statistics plans with full entries."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from tableformat.codec.avro_projection import ScanRef
from tableformat.codec.partition_codec import PartitionCodec
from tableformat.live_set import PartitionPredicate, merge_entries
from tableformat.model.manifest import ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.store import MetadataStore


def _read_refs(store: MetadataStore, manifests: Sequence[ManifestFileMeta], threads: int) -> list[list[ScanRef]]:
    """ScanRefs of each manifest, read in parallel, returned in manifest order."""
    if len(manifests) <= 1 or threads <= 1:
        return [store.read_manifest_scan_refs(m.file_name) for m in manifests]
    with ThreadPoolExecutor(max_workers=min(threads, len(manifests))) as pool:
        return list(pool.map(lambda m: store.read_manifest_scan_refs(m.file_name), manifests))


def live_scan_refs(
    store: MetadataStore,
    snapshot: Snapshot,
    codec: PartitionCodec,
    predicate: PartitionPredicate | None = None,
    threads: int = 8,
) -> list[ScanRef]:
    """``live_entries(...)`` as ScanRefs: the same files, in the same order."""
    manifests = store.manifests_of(snapshot)
    if predicate is not None:
        manifests = [m for m in manifests if predicate.may_match(m, codec)]
    refs = list(merge_entries(_read_refs(store, manifests, threads)).values())
    if predicate is not None:
        refs = [r for r in refs if predicate.matches(codec.values(r.partition))]
    return refs
