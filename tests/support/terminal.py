"""A fixed terminal for tests that compare the CLI's text: UTC times and 80 columns."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def utc_80_columns(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """TZ=UTC and COLUMNS=80 for the test, restored after it (a module imports this fixture to apply it)."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("COLUMNS", "80")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
