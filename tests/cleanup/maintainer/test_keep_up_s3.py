"""The maintainer's keep-up count on S3 (SeaweedFS): every snapshot, delta manifest list and manifest of the
history it counts is read once, several at a time, and the figures are those of a count one object at a time."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from support.s3_requests import RequestLog
from support.s3_tables import appended

from tableformat.cleanup.maintainer.keep_up import count_ingest
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.store import MetadataStore

pytestmark = pytest.mark.s3

DAY_MS = 86_400_000


class ReadingThreads(ForwardingFileIO):
    """Notes the threads that read metadata (to tell a parallel count from one in the caller's thread)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.threads: set[str] = set()

    def read_bytes(self, path: str) -> bytes:
        self.threads.add(threading.current_thread().name)
        return self.inner.read_bytes(path)


def test_the_keep_up_count_reads_every_object_once_in_parallel(s3_root: tuple[str, dict[str, Any]]) -> None:
    table = appended(s3_root, 24, drop_after=12)  # 25 snapshots: 24 appends of 8 rows, a drop of partition 0
    ctx = table.context
    latest = ctx.store.latest_snapshot_id()
    assert latest == 25
    now = ctx.store.read_snapshot(latest).time_millis + 1000
    reading = ReadingThreads(ctx.io)
    log = RequestLog().attach(ctx.io)
    found, counted = count_ingest(MetadataStore(reading, ctx.layout), 0, latest, now, DAY_MS, workers=8)
    assert counted == 25 and len(found) == 25
    # each snapshot, its delta manifest list and the one manifest that list names: 75 objects, each read once
    assert log.counts() == {"GetObject": 75} and log.read_twice() == []
    names = sorted(call.key.rsplit("/", 2)[-2] for call in log.of("GetObject"))
    assert names.count("snapshot") == 25 and names.count("manifest") == 50
    assert len(reading.threads) > 1 and all(name.startswith("tablefmt-keep-up") for name in reading.threads)
    assert sum(h.ingest_rows for h in found) == 24 * 8 and sum(h.dropped_rows for h in found) == 12 * 4
    one_at_a_time, _ = count_ingest(ctx.store, 0, latest, now, DAY_MS)
    assert found == one_at_a_time
