"""Joining the worker processes of a multi-process test within a bound, killing any that hang."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any


def join_all(processes: Sequence[Any], timeout_s: float) -> None:
    """Join every process within ``timeout_s`` in all; kill the ones still running and fail naming them."""
    deadline = time.monotonic() + timeout_s
    for process in processes:
        process.join(timeout=max(1.0, deadline - time.monotonic()))
    hung = [p.name for p in processes if p.is_alive()]
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(timeout=10)
    assert not hung, f"processes still running after {timeout_s} s: {hung}"
