"""freeze_worker_heap: once, and only in a reused pyspark worker (SPARK_REUSE_WORKER set by Spark), the objects
alive are frozen out of the collector's walks; in any other process nothing changes."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tableformat import gc_pause
from tableformat.spark.worker_gc import REUSE_ENV, freeze_worker_heap


@pytest.fixture(autouse=True)
def unfrozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    gc.unfreeze()
    monkeypatch.setattr(gc_pause, "_frozen_for_good", False)  # as in a fresh worker process
    yield
    gc.unfreeze()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_outside_a_reused_worker_nothing_is_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REUSE_ENV, raising=False)
    assert freeze_worker_heap() is False
    assert gc.get_freeze_count() == 0


def test_a_reused_worker_freezes_once_after_collecting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REUSE_ENV, "1")
    gc.collect()  # no Cycle left over as garbage from an earlier run of this test (repeated runs, one process)
    gc.disable()  # no automatic collection (other threads of the suite allocate too) before the call's own
    try:
        Cycle()  # garbage in a cycle: collected before the freeze, not kept for the worker's lifetime
        garbage_before = sum(isinstance(o, Cycle) for o in gc.get_objects())
        assert garbage_before == 1
        kept = Cycle()
        assert freeze_worker_heap() is True
    finally:
        gc.enable()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    assert sum(isinstance(o, Cycle) for o in gc.get_objects()) == 0  # the walkable heap no longer holds them
    assert kept.me is kept
    assert freeze_worker_heap() is False  # once per process
    # nothing frozen again (a frozen object freed meanwhile, e.g. by another thread of the suite, may lower it)
    assert gc.get_freeze_count() <= frozen
    gc.disable()  # no automatic collection while checking that a later call does not collect
    try:
        Cycle()  # garbage made after the freeze: a later call neither collects nor freezes it
        assert freeze_worker_heap() is False
        assert sum(isinstance(o, Cycle) for o in gc.get_objects()) == 1
        assert gc.get_freeze_count() <= frozen
    finally:
        gc.enable()
    gc.collect()
    gc.unfreeze()
    assert sum(isinstance(o, Cycle) for o in gc.get_objects()) == 1  # only the live one was frozen
