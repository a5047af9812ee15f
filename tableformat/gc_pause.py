"""Pause Python's cyclic garbage collector while building many small acyclic objects (decoded manifest entries).

Decoding a manifest allocates an object or two per entry; every 700 allocations the collector walks the young
objects, and now and then the whole heap (tens of milliseconds in a process holding pyarrow and pandas), looking for
cycles these objects never form: reference counting frees them. :func:`paused_gc` turns the collector off for the
duration and back on afterwards, if it was on. Nested and concurrent pauses (threads of one process) share one
count: the collector comes back when the last pause ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_resume = False
"""Whether the collector was on when the outermost pause began (then the last pause ends by enabling it)."""


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
