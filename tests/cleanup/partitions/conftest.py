"""Fixtures for the partition expiration tests: a fixed local time zone (UTC)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def utc_local_time() -> Iterator[None]:
    """Partition times are local wall-clock times (as in Paimon): pin the local zone so fixed clocks are exact."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()
