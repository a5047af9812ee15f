"""The delete gate of a maintainer pass: a delete waits only for the part of the keep-up count it could disturb."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

from tableformat.cleanup.maintainer.keep_up import CountProgress, DeleteGate
from tableformat.layout import TableLayout
from tableformat.model.maintain import HourStats

LAYOUT = TableLayout("bucket/wh/db.db/t")
MANIFEST = f"{LAYOUT.root}/manifest/manifest-list-0f-1"


def _returns(call: Callable[[], None]) -> bool:
    """Whether ``call`` returns (run in a thread: a gate that waits forever must fail the test, not hang it)."""
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(timeout=30)
    return not thread.is_alive()


def _stats(done: bool) -> Future[HourStats]:
    future: Future[HourStats] = Future()
    if done:
        future.set_result(HourStats(hour_ms=0))
    return future


def test_data_files_never_wait_and_snapshot_files_wait_only_for_the_snapshot_reads() -> None:
    progress = CountProgress()
    gate = DeleteGate(progress, LAYOUT)
    assert _returns(lambda: gate([f"{LAYOUT.root}/part=0/bucket-0/data-1.parquet", f"{LAYOUT.root}/snapshot/LATEST"]))
    blocked = threading.Thread(target=lambda: gate([LAYOUT.snapshot_file(1)]), daemon=True)
    blocked.start()
    progress.started([(5, _stats(False)), (1, _stats(False))])  # snapshot files read, their manifests not yet
    blocked.join(timeout=30)
    assert not blocked.is_alive()


def test_manifests_wait_for_the_snapshots_up_to_the_newest_deleted_or_for_all() -> None:
    progress = CountProgress()
    gate = DeleteGate(progress, LAYOUT)
    newer, older = _stats(False), _stats(True)
    progress.started([(5, newer), (1, older)])
    untouched = DeleteGate(progress, LAYOUT)  # a pass that deleted no snapshot: its manifest deletes wait for all
    everything = threading.Thread(target=lambda: untouched([MANIFEST]), daemon=True)
    everything.start()
    gate([LAYOUT.snapshot_file(1)])
    assert _returns(lambda: gate([MANIFEST]))  # snapshot 1 deleted, counted: snapshot 5's reads do not matter
    assert everything.is_alive()
    newer.set_result(HourStats(hour_ms=0))
    everything.join(timeout=30)
    assert not everything.is_alive()


def test_a_finished_or_failed_count_holds_nothing() -> None:
    progress = CountProgress()
    progress.finish()
    assert _returns(lambda: DeleteGate(progress, LAYOUT)([LAYOUT.snapshot_file(3), MANIFEST]))
