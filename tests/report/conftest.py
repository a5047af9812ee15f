"""Fixtures of the report tests: a dated events table with something for every rule, and Debian's Chromium."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.browser import BrowserUnavailable, chromium
from support.ci import on_ci
from support.events import build_events

from tableformat.table import Table


@pytest.fixture
def events(tmp_path: Path) -> Table:
    return build_events(tmp_path / "events")


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    """Debian's Chromium, installed by the test setup when missing (CI, or root); under CI a failed install fails."""
    started = time.monotonic()
    try:
        found = chromium()
    except BrowserUnavailable as exc:
        if on_ci():
            pytest.fail(f"the browser tests need Chromium: {exc}")
        pytest.skip(f"the browser tests need Chromium: {exc}")
    if time.monotonic() - started > 5:
        print(f"installed {found} in {time.monotonic() - started:.0f} s")
    return found
