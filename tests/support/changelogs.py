"""What a primary-key table with ``changelog-producer=input`` and statistics adds to a snapshot, attached by hand to
the snapshots of a table tablefmt wrote (tablefmt writes neither): per snapshot, one changelog file in the bucket
directory of each partition, a changelog manifest ADDing them and a changelog manifest list naming it, written
through the metadata store exactly as a commit writes manifests; and ``statistics/stat-<uuid>-0`` files.

The changelog files hold a few bytes (nothing reads them); the snapshot file is rewritten with the new names, as
Paimon writes them into the snapshot it commits.

Also the oracle of what these add to a table's needs (:func:`attached_needs`), read through the store only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tableformat.codec.binary_row import encode_row
from tableformat.layout import NameFactory
from tableformat.model.manifest import DataFileMeta, FileKind, ManifestEntry
from tableformat.model.snapshot import Snapshot
from tableformat.table import Table


@dataclass(frozen=True)
class Changelog:
    """What :func:`attach_changelog` wrote for one snapshot (paths relative to the table root)."""

    files: frozenset[str]
    manifest: str
    manifest_list: str

    @property
    def paths(self) -> frozenset[str]:
        return self.files | {self.manifest, self.manifest_list}


def _rewrite(table: Table, snapshot: Snapshot) -> None:
    ctx = table.context
    ctx.io.write_bytes(ctx.layout.snapshot_file(snapshot.id), ctx.store.snapshot_bytes(snapshot))


def attach_changelog(table: Table, snapshot_id: int, partitions: Sequence[Sequence[Any]] = ((0,), (1,))) -> Changelog:
    """Give snapshot ``snapshot_id`` a changelog: one file per partition (bucket 0), its manifest and list."""
    ctx = table.context
    store, layout = ctx.store, ctx.layout
    types = [f.type for f in ctx.schema.partition_fields]
    names = NameFactory()
    entries, files = [], set()
    for values in partitions:
        name = f"changelog-{uuid.uuid4()}-0.parquet"
        partition = encode_row(list(values), types)
        entry = ManifestEntry(
            kind=FileKind.ADD,
            partition=partition,
            bucket=0,
            total_buckets=-1,
            file=DataFileMeta(file_name=name, file_size=7, row_count=1),
        )
        relative = "/".join([*(f"{f.name}={v}" for f, v in zip(ctx.schema.partition_fields, values)), "bucket-0", name])
        ctx.io.write_bytes(layout.join(relative), b"changes")
        entries.append(entry)
        files.add(relative)
    meta = store.write_manifest(entries, names, ctx.schema.id, types)
    written = store.write_manifest_list([meta], names)
    snapshot = store.read_snapshot(snapshot_id)
    _rewrite(table, replace(snapshot, changelog_manifest_list=written.name, changelog_manifest_list_size=written.size))
    return Changelog(frozenset(files), f"manifest/{meta.file_name}", f"manifest/{written.name}")


def attach_statistics(table: Table, snapshot_ids: Iterable[int]) -> str:
    """Write one statistics file and name it in each of these snapshots; returns its relative path."""
    ctx = table.context
    name = f"stat-{uuid.uuid4()}-0"
    ctx.io.write_bytes(ctx.layout.join("statistics", name), b'{"snapshotId": 1, "mergedRecordCount": 1}')
    for snapshot_id in snapshot_ids:
        _rewrite(table, replace(ctx.store.read_snapshot(snapshot_id), statistics=name))
    return f"statistics/{name}"


def attached_needs(table: Table, roots: Iterable[Snapshot]) -> set[str]:
    """The changelog manifests, changelog files and statistics files these roots name (relative paths)."""
    ctx = table.context
    store = ctx.store
    codec = ctx.partition_codec()
    fields = [f.name for f in ctx.schema.partition_fields]
    needs: set[str] = set()
    for root in roots:
        if root.statistics:
            needs.add(f"statistics/{root.statistics}")
        if not root.changelog_manifest_list:
            continue
        for meta in store.read_manifest_list(root.changelog_manifest_list):
            needs.add(f"manifest/{meta.file_name}")
            for entry in store.read_manifest(meta.file_name):
                values = dict(codec.values(entry.partition))
                parts = [f"{name}={values[name]}" for name in fields]
                needs.add("/".join([*parts, f"bucket-{entry.bucket}", entry.file.file_name]))
    return needs
