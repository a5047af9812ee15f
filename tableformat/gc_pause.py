"""Keep Python's cyclic garbage collector from walking the whole heap during a maintenance run.

Decoding a manifest allocates an object or two per entry; every 700 allocations the collector walks the young
objects, and now and then the whole heap (tens of milliseconds in a process holding pyarrow and pandas), looking for
cycles these objects never form: reference counting frees them. :func:`paused_gc` turns the collector off for the
duration and back on afterwards, if it was on. Nested and concurrent pauses (threads of one process) share one
count: the collector comes back when the last pause ends.

Operations whose runs make cyclic garbage as they go (on object stores every botocore request leaves a few
objects in a cycle) keep the collector on and use :func:`old_objects_frozen` instead: the objects alive when the run
starts are frozen (``gc.freeze()``) until it ends, so a full collection in the middle of the run walks only what the
run made. Measured on S3 expiration in a process holding pyarrow and botocore (about 200,000 objects): a full
collection took 110 ms, with every request of the run waiting behind it.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False
"""Whether the collector was on when the outermost pause began (then the last pause ends by enabling it)."""
_freeze_depth = 0
_unfreeze = False
"""Whether the outermost :func:`old_objects_frozen` froze the heap (then the last one to end unfreezes it)."""
_frozen_for_good = False
"""Whether :func:`freeze_for_good` froze this process's heap (a forked child inherits the flag with the heap)."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off (garbage with cycles made meanwhile is collected later)."""
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _resume:
                gc.enable()


@contextmanager
def old_objects_frozen() -> Iterator[None]:
    """Run the block with the objects alive at its start frozen: collections inside it walk only the objects made
    since, and cyclic garbage the block makes is still collected. Everything frozen goes back to the oldest
    generation when the last overlapping block (threads of one process share a count) ends.

    Nothing is done when the heap is frozen already, for good (:func:`freeze_for_good`) or by the host program
    (``gc.get_freeze_count()``, which costs nothing when nothing is frozen): unfreezing would undo its freeze. The
    young generations are collected first, so that young cyclic garbage is not kept frozen while blocks overlap.
    What a host freezes while a block runs is unfrozen when the last block ends (CPython has one frozen set).
    """
    global _freeze_depth, _unfreeze
    with _lock:
        if _freeze_depth == 0:
            _unfreeze = not _frozen_for_good and gc.get_freeze_count() == 0
            if _unfreeze:
                gc.collect(1)
                gc.freeze()
        _freeze_depth += 1
    try:
        yield
    finally:
        with _lock:
            _freeze_depth -= 1
            if _freeze_depth == 0 and _unfreeze:
                gc.unfreeze()
                _unfreeze = False


def freeze_for_good() -> bool:
    """Collect, then freeze every object alive, for the rest of the process (a worker that keeps its imports for
    its lifetime). Returns whether it froze: once per process, and not inside :func:`old_objects_frozen`."""
    global _frozen_for_good
    with _lock:
        if _frozen_for_good or _freeze_depth:
            return False
    gc.collect()  # not under the lock: a finaliser it runs may enter a pause
    with _lock:
        if _frozen_for_good or _freeze_depth:
            return False
        gc.freeze()
        _frozen_for_good = True
        return True


def _reset_in_child() -> None:
    """A child forked while a thread of the parent was inside a pause or a freeze: that thread does not exist here,
    so the collector is turned back on and the heap unfrozen as its block would have done (a freeze for good stays)."""
    global _lock, _depth, _resume, _freeze_depth, _unfreeze
    _lock = threading.Lock()
    if _depth and _resume:
        gc.enable()
    if _freeze_depth and _unfreeze:
        gc.unfreeze()
    _depth, _resume, _freeze_depth, _unfreeze = 0, False, 0, False


os.register_at_fork(after_in_child=_reset_in_child)
