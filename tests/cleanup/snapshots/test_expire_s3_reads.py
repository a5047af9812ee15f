"""Expiration planning on S3 reads the range ahead (RangeReader): whichever read fails, wherever it was queued (the
range read while the end is looked for, the walk, a manifest read ahead for the candidates or for the protection
check), the run stops with the object named and nothing deleted."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from support.operations import expire_snapshots
from support.s3_tables import appended

from tableformat import Table
from tableformat.cleanup.snapshots.metadata import DataPaths, MetadataCache
from tableformat.errors import CorruptMetadataError, MaintenanceError
from tableformat.parallel import Workers

pytestmark = pytest.mark.s3

SETTINGS: dict[str, Any] = {"retain_min": 4, "retain_max": 4, "time_retained": 0, "limit": 100, "parallelism": 4}


def objects(table: Table) -> dict[str, bytes]:
    fs = table.context.io.fsspec_filesystem()
    return {path: fs.cat_file(path) for path in sorted(fs.find(table.context.layout.root))}


def raised_within(seconds: float, call: Callable[[], object]) -> BaseException | None:
    """What ``call`` raised (None: it returned), run in a thread that must end within ``seconds`` (a hang fails)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome[0]


def end_base_manifest(table: Table) -> str:
    """A manifest of the end snapshot (22) holding partition 0: one the protection check reads."""
    store = table.context.store
    end = store.read_snapshot(22)
    return store.read_manifest_list(end.base_manifest_list)[-1].file_name


def drop_manifest(table: Table) -> str:
    store = table.context.store
    return store.read_manifest_list(store.read_snapshot(13).delta_manifest_list)[0].file_name


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda t: t.context.layout.snapshot_file(3), id="snapshot-read-while-walking"),
        pytest.param(lambda t: t.context.layout.snapshot_file(22), id="end-snapshot-the-walk-reads"),
        pytest.param(lambda t: t.context.layout.manifest_file(drop_manifest(t)), id="delete-manifest-read-ahead"),
        pytest.param(lambda t: t.context.layout.manifest_file(end_base_manifest(t)), id="protection-manifest"),
    ],
)
def test_an_unreadable_object_read_ahead_stops_the_run_and_deletes_nothing(
    s3_root: tuple[str, dict[str, Any]], broken: Any
) -> None:
    table = appended(s3_root, 24, drop_after=12)  # snapshot 13 drops partition 0
    path = broken(table)
    table.context.io.write_bytes(path, b"\x00garbage")
    before = objects(table)
    with pytest.raises(MaintenanceError, match=path.rsplit("/", 1)[-1]):
        expire_snapshots(table.context, **SETTINGS)
    assert objects(table) == before


def test_the_same_table_unbroken_expires_what_a_local_plan_would(s3_root: tuple[str, dict[str, Any]]) -> None:
    """The control for the test above: on that table, the run deletes the 21 snapshots, the 12 dropped files."""
    table = appended(s3_root, 24, drop_after=12)
    result = expire_snapshots(table.context, **SETTINGS)
    assert result.expired_snapshot_ids == tuple(range(1, 22)) and result.deleted_data_files == 12
    assert table.to_arrow().num_rows == 24 * 8 - 12 * 4


def test_reads_failing_on_every_thread_while_the_walk_waits_stop_the_run(s3_root: tuple[str, dict[str, Any]]) -> None:
    """Every manifest list unreadable, two threads: the first reads queued (the tag's lists, then the range's) fail
    on both threads while the walk waits for the snapshot it asked for. The run must stop with the error, not wait for
    a read no thread is left to make."""
    table = appended(s3_root, 12)
    table.create_tag("keep", 2)
    io, layout = table.context.io, table.context.layout
    lists = [p for p in io.fsspec_filesystem().find(f"{layout.root}/manifest") if "/manifest-list-" in p]
    io.fsspec_filesystem().rm(lists)
    before = objects(table)
    error = raised_within(
        120, lambda: expire_snapshots(table.context, retain_min=1, retain_max=6, time_retained="1 d", parallelism=2)
    )
    assert isinstance(error, MaintenanceError) and "manifest-list-" in str(error)
    assert objects(table) == before


def test_delete_entries_read_before_the_end_is_known_still_name_the_protection_reads(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """The drop's DELETE manifest is read while the walk looks for the end (one thread: inline, before ``finish``
    names the end); its partition is remembered, so the end's manifests holding it are read ahead once it is."""
    table = appended(s3_root, 24, drop_after=12)  # snapshot 13 drops partition 0
    ctx = table.context
    with Workers(1) as workers:
        cache = MetadataCache(ctx, workers)
        reader = cache.range_reader(lambda sid, exists: True, DataPaths(ctx))
        assert reader is not None
        reader.start([13])
        assert drop_manifest(table) in cache._prefetched
        end = ctx.store.read_snapshot(22)
        reader.finish([], [], [end], protected=[end])
    assert {m.file_name for m in ctx.store.manifests_of(end)} <= cache._prefetched.keys()  # every one holds part 0


def test_a_walk_read_asked_for_after_the_reads_stopped_raises_at_once(s3_root: tuple[str, dict[str, Any]]) -> None:
    """Snapshot 3 unreadable, one thread: ``start`` fails on it and the reads stop; the walk then asks for a snapshot
    nobody will read. It gets the first error at once instead of waiting for good."""
    table = appended(s3_root, 8)
    ctx = table.context
    ctx.io.write_bytes(ctx.layout.snapshot_file(3), b"\x00garbage")
    with Workers(1) as workers:
        reader = MetadataCache(ctx, workers).range_reader(lambda sid, exists: True, DataPaths(ctx))
        assert reader is not None
        reader.start([3])
        error = raised_within(60, lambda: reader.read_now([6]))
    assert isinstance(error, CorruptMetadataError) and "snapshot-3" in str(error)
