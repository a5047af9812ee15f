"""What a new snapshot carries over from the latest one besides its data files: the index manifest, the
statistics file, the watermark and the next row id (Paimon's ``FileStoreCommitImpl.tryCommitOnce``).

* **Index manifest** (deletion vectors, hash indexes). A commit that adds no index files names the latest
  snapshot's index manifest again. An OVERWRITE (and a partition drop, which is one) removes the index files of the
  partitions it overwrites (Paimon's ``OverwriteChangesProvider``): a new index manifest without their entries is
  written, or none when nothing is left. Dropping a table's deletion vectors instead would bring deleted rows back,
  and without its hash index the next Paimon write to a dynamic-bucket primary-key table fails or places a key in a
  second bucket.
* **Statistics** (``ANALYZE``). Inherited while the statistics were computed on the commit's schema; after a
  schema change they are dropped, as Paimon does. Statistics that cannot be read are dropped too (they steer query
  planning only; no row depends on them) and the reason is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from tableformat.errors import TableFormatError
from tableformat.layout import NameFactory
from tableformat.model.snapshot import Snapshot
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)


def carried_fields(
    store: MetadataStore,
    latest: Snapshot | None,
    schema_id: int,
    overwritten_partitions: Collection[bytes],
    names: NameFactory,
    written: list[str],
    *,
    level: int | None = None,
) -> dict[str, Any]:
    """The new snapshot's fields taken from ``latest``: index manifest, statistics, watermark, next row id."""
    if latest is None:
        return {}
    return {
        "index_manifest": carried_index_manifest(store, latest, overwritten_partitions, names, written, level=level),
        "statistics": carried_statistics(store, latest, schema_id),
        "watermark": latest.watermark,
        "next_row_id": latest.next_row_id,
    }


def carried_index_manifest(
    store: MetadataStore,
    latest: Snapshot | None,
    overwritten_partitions: Collection[bytes],
    names: NameFactory,
    written: list[str],
    *,
    level: int | None = None,
) -> str | None:
    """The new snapshot's ``indexManifest``: the latest one's, less the entries of ``overwritten_partitions``."""
    if latest is None or not latest.index_manifest:
        return None
    if not overwritten_partitions:
        return latest.index_manifest
    entries = store.read_index_manifest(latest.index_manifest)
    kept = [e for e in entries if e.partition not in overwritten_partitions]
    if len(kept) == len(entries):
        return latest.index_manifest
    if not kept:
        return None
    name = store.write_index_manifest(kept, names, level=level)
    written.append(store.layout.index_manifest_file(name))
    return name


def carried_statistics(store: MetadataStore, latest: Snapshot | None, schema_id: int) -> str | None:
    """The new snapshot's ``statistics``: the latest one's while they were computed on ``schema_id``."""
    if latest is None or not latest.statistics:
        return None
    try:
        statistics = store.read_statistics(latest.statistics)
    except (TableFormatError, OSError) as exc:
        log.warning("statistics %s of snapshot %d not carried over: %s", latest.statistics, latest.id, exc)
        return None
    if statistics.schema_id != schema_id:
        log.info("statistics %s were computed on schema %d: not carried over", latest.statistics, statistics.schema_id)
        return None
    return latest.statistics
