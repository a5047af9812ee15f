"""Record TTL tests read at a fixed time: the read path's clock is pinned to records_kit.NOW."""

from __future__ import annotations

import pytest
from records_kit import NOW

import tableformat.scan.record_ttl as record_ttl


@pytest.fixture(autouse=True)
def fixed_read_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_ttl, "system_now_ms", lambda: NOW)
