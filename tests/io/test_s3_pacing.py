"""Throttling on a real S3 server (SeaweedFS) with SlowDown injected at the botocore call: refused requests and
refused DeleteObjects entries are sent again (no sleeps: zero backoff), the per-prefix limit adapts, and what the
store never lets go is reported exactly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.s3_requests import RequestLog
from support.s3_throttle import SlowDown, every, first_attempt_of_each, keys_always, zero_backoff_pacer

from tableformat.errors import DeleteFailedError
from tableformat.io.factory import open_location
from tableformat.io.pacing import RequestPacer, common_prefix_of, prefix_of
from tableformat.io.s3 import S3FileIO


def throttled_io(
    s3_root: tuple[str, dict[str, Any]], rule: Any, rels: list[str], **pacing: Any
) -> tuple[S3FileIO, str, SlowDown]:
    """An S3FileIO with a zero-backoff pacer, the objects ``rels`` below the root, then SlowDown attached."""
    io, root = open_location(*s3_root)
    assert isinstance(io, S3FileIO)
    io.pacer = zero_backoff_pacer(**pacing)
    planted(io, root, rels)
    return io, root, SlowDown(rule).attach(io)


def planted(io: S3FileIO, root: str, rels: list[str]) -> None:
    io.fs.pipe({f"{root}/{rel}": b"x" for rel in rels})


def keys_of(root: str, rels: list[str]) -> list[str]:
    return [f"{root.split('/', 1)[1]}/{rel}" for rel in rels]


# --- the pacer on its own -------------------------------------------------------------------------------------------


def test_the_limit_halves_once_per_window_and_grows_back_by_half_a_request_per_success() -> None:
    pacer = RequestPacer(ceiling=16, backoff=lambda attempt: 0.0)

    async def run() -> None:
        for _ in range(8):  # eight requests in flight at once, all throttled
            await pacer.acquire("b/t/")
        for _ in range(8):
            pacer.release("b/t/", throttled=True)

    asyncio.run(run())
    assert pacer.limit("b/t/") == 8.0  # one decrease for the window: the other seven were in flight at the old limit
    assert pacer.throttles["b/t/"] == 8

    async def succeed(count: int) -> None:
        for _ in range(count):
            await pacer.acquire("b/t/")
            pacer.release("b/t/", throttled=False)

    asyncio.run(succeed(8))
    assert pacer.limit("b/t/") == 12.0  # + 0.5 each
    asyncio.run(succeed(1000))
    assert pacer.limit("b/t/") == 16.0  # never above the ceiling
    pacer.keys_throttled("b/t/", 300)  # a DeleteObjects with 300 refused keys: one signal
    assert pacer.limit("b/t/") == 8.0 and pacer.throttles["b/t/"] == 308
    assert pacer.limit("b/other/") == 16.0  # per prefix


def test_the_limit_never_falls_below_the_floor() -> None:
    pacer = RequestPacer(ceiling=8, floor=2, backoff=lambda attempt: 0.0)

    async def run() -> None:
        for _ in range(10):  # one after another: each one's throttle is a window of its own
            await pacer.acquire("b/t/")
            pacer.release("b/t/", throttled=True)

    asyncio.run(run())
    assert pacer.limit("b/t/") == 2.0


def test_a_request_waits_for_a_slot_below_its_prefix_limit() -> None:
    pacer = RequestPacer(ceiling=2, backoff=lambda attempt: 0.0)

    async def run() -> list[str]:
        order: list[str] = []
        await pacer.acquire("b/t/")
        await pacer.acquire("b/t/")
        await pacer.acquire("b/u/")  # another prefix is not held up

        async def third() -> None:
            await pacer.acquire("b/t/")
            order.append("third started")

        task = asyncio.create_task(third())
        for _ in range(5):
            await asyncio.sleep(0)  # let it run until it waits
        order.append("before release")
        pacer.release("b/t/", throttled=False)
        await task
        return order

    assert asyncio.run(run()) == ["before release", "third started"]


def test_prefixes_are_directories() -> None:
    assert prefix_of("b", "wh/t/manifest/manifest-1") == "b/wh/t/manifest/"
    assert prefix_of("b", "wh/t/") == "b/wh/t/" and prefix_of("b", "x") == "b/"
    assert common_prefix_of("b", ["wh/t/p=1/bucket-0/data-1", "wh/t/p=2/bucket-0/data-2"]) == "b/wh/t/"
    assert common_prefix_of("b", ["wh/t/m/a-1", "wh/t/m/a-2"]) == "b/wh/t/m/"


# --- on SeaweedFS ---------------------------------------------------------------------------------------------------


@pytest.mark.s3
@pytest.mark.slow
def test_throttled_delete_objects_entries_are_sent_again_until_gone(s3_root: tuple[str, dict[str, Any]]) -> None:
    rels = [f"part=0/bucket-0/data-{i:05d}.parquet" for i in range(2500)]
    io, root, slowdown = throttled_io(s3_root, first_attempt_of_each(("DeleteObjects",)), rels)
    log = RequestLog().attach(io)
    gone = io.delete_listed([f"{root}/{rel}" for rel in rels])
    assert sorted(gone) == [f"{root}/{rel}" for rel in rels]
    assert slowdown.refused_keys == 2500 and slowdown.refused == 0
    assert log.counts() == {"DeleteObjects": 6}  # each batch of 1,000 refused once, then sent again
    assert sum(io.pacer.throttles.values()) == 2500 and io.pacer.retries == 3
    assert list(io.walk_files(root)) == []


@pytest.mark.s3
def test_a_delete_whose_requests_are_answered_slowdown_finishes_with_the_same_result(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    directories = [f"part={p}/bucket-0" for p in range(4)]
    rels = [f"{d}/data-{i:03d}.parquet" for d in directories for i in range(50)] + ["manifest/manifest-a-0"]
    missing = ["part=0/bucket-0/data-gone.parquet", "manifest/manifest-gone-0"]
    io, root, slowdown = throttled_io(s3_root, every(3), rels)
    log = RequestLog().attach(io)
    gone = io.delete_files([f"{root}/{rel}" for rel in rels + missing])
    assert sorted(gone) == sorted(f"{root}/{rel}" for rel in rels)
    calls = len(log.calls)
    assert slowdown.refused == calls // 3 and slowdown.refused > 0  # one request in three answered SlowDown
    assert io.pacer.retries == slowdown.refused  # each sent again by the pacer (neither botocore nor s3fs retries)
    assert list(io.walk_files(root)) == []


@pytest.mark.s3
def test_a_delete_the_store_keeps_refusing_reports_exactly_what_remains(s3_root: tuple[str, dict[str, Any]]) -> None:
    rels = [f"part=0/bucket-0/data-{i:03d}.parquet" for i in range(20)]
    stuck = set(rels[3:6])
    root = open_location(*s3_root)[1]
    io, root, _ = throttled_io(s3_root, keys_always(set(keys_of(root, sorted(stuck)))), rels, max_attempts=4)
    log = RequestLog().attach(io)
    with pytest.raises(DeleteFailedError) as raised:
        io.delete_listed([f"{root}/{rel}" for rel in rels])
    assert sorted(raised.value.deleted) == sorted(f"{root}/{rel}" for rel in rels if rel not in stuck)
    assert sorted(raised.value.failed) == sorted(
        f"{root}/{rel}: SlowDown: Please reduce your request rate." for rel in stuck
    )
    assert log.counts() == {"DeleteObjects": 4}  # the 20 keys, then the 3 refused ones three more times
    # (the log sees each request after the injector took the refused keys out of what reaches the store, except
    # where it refuses every key and answers the request itself)
    assert [call.keys for call in log.of("DeleteObjects")] == [17, 3, 3, 3]
    left = sorted(info.path.split("/", 2)[2] for info in io.walk_files(root))
    assert left == sorted(stuck)


@pytest.mark.s3
def test_a_request_refused_every_time_raises_after_the_last_attempt(s3_root: tuple[str, dict[str, Any]]) -> None:
    rule = lambda call: call.operation == "GetObject"  # noqa: E731
    io, root, slowdown = throttled_io(s3_root, rule, ["snapshot/LATEST"], max_attempts=5)
    log = RequestLog().attach(io)
    with pytest.raises(OSError, match="reduce your request rate"):
        io.read_bytes(f"{root}/snapshot/LATEST")
    assert log.counts() == {"GetObject": 5} and slowdown.refused == 5
    assert io.pacer.limit(prefix_of(*f"{root}/snapshot/LATEST".split("/", 1))) < 64
