"""gc_pause: the cyclic collector is off inside a pause and back as it was after the last one ends."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from tableformat.gc_pause import paused_gc


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


def test_overlapping_pauses_of_two_threads_end_with_the_last() -> None:
    gc.enable()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with paused_gc():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second() -> None:
        first_in.wait()
        with paused_gc():
            second_in.set()
            first_out.wait()
            seen.append(gc.isenabled())  # the first thread's pause ended, this one's has not

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == [False]
    assert gc.isenabled()
