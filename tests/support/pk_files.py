"""The files a primary-key table's writers attach to snapshots besides data files, planted into a tablefmt table as
Paimon lays them out, for orphan cleanup and check tests: changelog data files (named by the ADD entries of the
manifests of a snapshot's changelog manifest list), their file-index sidecars (extra files), and statistics files
(a snapshot's ``statistics``).

The snapshot file is rewritten with the new field, as the writer that made the snapshot would have written it. File
contents are placeholders of the recorded size: orphan cleanup and check never read data or statistics files.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from support.operations import remove_orphan_files
from tableformat.cleanup.check import check_table
from tableformat.data_paths import DataPaths
from tableformat.errors import MaintenanceError
from tableformat.layout import NameFactory
from tableformat.table import Table

from .manifests import Manifests
from .tables import files_under


def _rewrite_snapshot(table: Table, snapshot_id: int, **fields: Any) -> None:
    ctx = table.context
    snapshot = replace(ctx.store.read_snapshot(snapshot_id), **fields)
    ctx.io.write_bytes(ctx.layout.snapshot_file(snapshot_id), ctx.store.snapshot_bytes(snapshot))


def attach_changelog(
    table: Table,
    snapshot_id: int,
    partition: Sequence[object],
    *,
    bucket: int = 0,
    files: int = 2,
    prefix: str = "changelog-",
    sidecars: bool = False,
) -> set[str]:
    """Give snapshot ``snapshot_id`` a changelog: ``files`` changelog files in the bucket directory of
    ``partition`` (each with a ``.index`` sidecar in its extra files when ``sidecars``), one changelog manifest
    naming them and a changelog manifest list. Returns every file written, relative to the root."""
    ctx = table.context
    manifests = Manifests(table)
    directory = DataPaths(ctx.schema, ctx.partition_codec()).bucket_dir_of_values(list(partition), bucket)
    written: set[str] = set()
    entries = []
    for n in range(files):
        name = f"{prefix}{uuid.uuid4()}-{n}.parquet"
        data = b"changelog rows " * (n + 1)
        extras: tuple[str, ...] = (f"{name}.index",) if sidecars else ()
        for written_name in (name, *extras):
            ctx.io.write_bytes(ctx.layout.join(f"{directory}/{written_name}"), data)
            written.add(f"{directory}/{written_name}")
        entry = manifests.entry(name, partition, bucket=bucket)
        entries.append(replace(entry, file=replace(entry.file, file_size=len(data), extra_files=extras)))
    meta = manifests.write(entries)
    listed = ctx.store.write_manifest_list([meta], NameFactory())
    written |= {ctx.layout.relative(ctx.layout.manifest_file(meta.file_name)), ctx.layout.relative(listed.path)}
    _rewrite_snapshot(
        table,
        snapshot_id,
        changelog_manifest_list=listed.name,
        changelog_manifest_list_size=listed.size,
        changelog_record_count=files,
    )
    return written


def attach_statistics(table: Table, snapshot_id: int) -> str:
    """Give snapshot ``snapshot_id`` a statistics file ``statistics/stat-<uuid>-0``; returns its path."""
    name = f"stat-{uuid.uuid4()}-0"
    document = {"snapshotId": snapshot_id, "schemaId": 0, "mergedRecordCount": 1, "colStats": {}}
    table.context.io.write_bytes(table.context.layout.join("statistics", name), json.dumps(document).encode())
    _rewrite_snapshot(table, snapshot_id, statistics=name)
    return f"statistics/{name}"


def copy_snapshot_to_changelog(table: Table, snapshot_id: int) -> str:
    """What Paimon's expiration does when changelogs outlive snapshots (``changelog.num-retained.*``): the snapshot's
    JSON kept as ``changelog/changelog-<id>``, a root of its own. Returns its path."""
    ctx = table.context
    target = ctx.layout.changelog_file(str(snapshot_id))
    ctx.io.write_bytes(target, ctx.io.read_bytes(ctx.layout.snapshot_file(snapshot_id)))
    return ctx.layout.relative(target)


def assert_unreadable_metadata_stops_cleanup_and_check(table: Table, damaged: str) -> None:
    """With ``damaged`` (a manifest path relative to the root) unreadable, orphan cleanup raises MaintenanceError
    naming it and deletes nothing, and check is not ok, counts no orphans and names it among its errors."""
    root = table.context.layout.root
    name = damaged.split("/")[-1]
    before = files_under(root)
    try:
        remove_orphan_files(table.context)
    except MaintenanceError as exc:
        assert name in str(exc), exc
    else:
        raise AssertionError(f"orphan cleanup ran with {damaged} unreadable")
    checked = check_table(table.context)
    assert files_under(root) == before
    assert not checked.ok and checked.orphan_files is None
    assert any(name in error for error in checked.errors), checked.errors
