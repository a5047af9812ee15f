"""gc_pause: the cyclic collector is off inside a pause and back as it was after the last one ends; objects alive
when a maintenance run starts are frozen for the run only."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from tableformat import gc_pause
from tableformat.gc_pause import freeze_for_good, old_objects_frozen, paused_gc


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_a_pause_turns_the_collector_off_and_back_on() -> None:
    gc.enable()
    with paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_end_with_the_outermost() -> None:
    gc.enable()
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_still_ends_the_pause() -> None:
    gc.enable()
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("boom")
    assert gc.isenabled()


def in_overlapping_threads(block: Callable[[], AbstractContextManager[None]], probe: Callable[[], bool]) -> list[bool]:
    """Two threads in ``block``: the second enters while the first is inside, and ``probe`` runs in the second after
    the first has left."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with block():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second() -> None:
        first_in.wait()
        with block():
            second_in.set()
            first_out.wait()
            seen.append(probe())

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seen


def test_overlapping_pauses_of_two_threads_end_with_the_last() -> None:
    gc.enable()
    assert in_overlapping_threads(paused_gc, gc.isenabled) == [False]  # the first pause ended, the second has not
    assert gc.isenabled()


# --- old_objects_frozen ------------------------------------------------------------------------------------------
@pytest.fixture
def nothing_frozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    gc.unfreeze()
    monkeypatch.setattr(gc_pause, "_frozen_for_good", False)
    yield
    gc.unfreeze()


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_objects_alive_at_the_start_are_frozen_for_the_block_only(nothing_frozen: None) -> None:
    gc.enable()
    before = Cycle()
    with old_objects_frozen():
        assert gc.get_freeze_count() > 0
        assert not any(o is before for o in gc.get_objects())  # out of every collection's walk
        made = Cycle()
        assert any(o is made for o in gc.get_objects())  # what the block makes is walked (and collected)
    assert gc.get_freeze_count() == 0
    assert any(o is before for o in gc.get_objects())


def test_cyclic_garbage_made_inside_is_still_collected(nothing_frozen: None) -> None:
    gc.enable()
    with old_objects_frozen():
        garbage = weakref.ref(Cycle())
        gc.collect()
        assert garbage() is None


def test_overlapping_blocks_unfreeze_when_the_last_ends(nothing_frozen: None) -> None:
    assert in_overlapping_threads(old_objects_frozen, lambda: gc.get_freeze_count() > 0) == [True]
    assert gc.get_freeze_count() == 0


def test_a_heap_the_host_froze_stays_frozen(nothing_frozen: None) -> None:
    host_object = Cycle()
    gc.freeze()
    with old_objects_frozen():
        pass
    # Still frozen: out of every collection's walk (an unfreeze would put it back in the oldest generation). Not
    # asked through gc.get_freeze_count(), which drops whenever another thread frees a frozen object.
    assert not any(o is host_object for o in gc.get_objects())


def test_a_heap_frozen_for_good_stays_frozen_and_is_frozen_once(nothing_frozen: None) -> None:
    assert freeze_for_good() is True
    with old_objects_frozen():
        assert freeze_for_good() is False
    assert gc.get_freeze_count() > 0
    assert freeze_for_good() is False


def test_no_freeze_for_good_inside_a_block(nothing_frozen: None) -> None:
    with old_objects_frozen():
        assert freeze_for_good() is False
    assert gc.get_freeze_count() == 0


# Python 3.12+ warns (DeprecationWarning, an error here) on any fork while another thread exists: in a whole-suite run
# s3fs's event-loop thread and Spark's gateway threads always do. The child here only reports and exits.
@pytest.mark.filterwarnings(r"ignore:This process \(pid=\d+\) is multi-threaded, use of fork\(\):DeprecationWarning")
def test_a_child_forked_inside_a_block_gets_its_collector_and_heap_back(nothing_frozen: None) -> None:
    gc.enable()
    read, write = os.pipe()
    with old_objects_frozen(), paused_gc():
        pid = os.fork()
        if pid == 0:  # the child: the blocks' threads are not here
            os.write(write, f"{gc.isenabled()} {gc.get_freeze_count() == 0}".encode())
            os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 100) == b"True True"
    os.close(read)
    os.close(write)
