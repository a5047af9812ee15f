"""Interop fixtures: pypaimon 2.1.0 (the independent oracle) next to tablefmt on the same tables.

These tests run in their own environment (``tox -e interop``) because pypaimon 2.1.0 pins pyarrow<20 and
fsspec<2026. Where pypaimon is not installed every test here skips with that reason, unless TABLEFMT_INTEROP=1
is set (the interop env sets it): then a missing pypaimon is an error, so the interop env can never pass by
skipping. Any pypaimon other than 2.1.0 is always an error: another version proves nothing.

Every table lives in a per-test filesystem-catalog warehouse under ``tmp_path``: ``<wh>/db.db/<name>``. tablefmt
tables are created at that path so pypaimon's catalog finds them, and pypaimon tables are opened by tablefmt
from the same path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from interop.helpers import Paimon

PYPAIMON_VERSION = "2.1.0"
REQUIRED = os.environ.get("TABLEFMT_INTEROP", "").lower() in ("1", "true", "yes")
SKIP_REASON = "interop tests need pypaimon 2.1.0: run them with `tox -e interop` (pyarrow<20, fsspec<2026)"


def _pypaimon_version() -> str | None:
    try:
        from pypaimon._version import VERSION
    except ImportError:
        if REQUIRED:
            raise
        return None
    return str(VERSION)


_FOUND = _pypaimon_version()


@pytest.fixture(scope="session")
def pypaimon_version() -> str:
    """Skips (pypaimon missing) or fails (another version) every test that needs pypaimon; every fixture that
    drives pypaimon depends on it, so higher-scoped fixtures skip cleanly too."""
    if _FOUND is None:
        pytest.skip(SKIP_REASON)
    if _FOUND != PYPAIMON_VERSION:
        pytest.fail(f"interop tests need pypaimon=={PYPAIMON_VERSION}, found {_FOUND}")
    return _FOUND


@pytest.fixture
def pp(pypaimon_version: str, tmp_path: Path) -> Paimon:
    """A pypaimon 2.1.0 filesystem catalog on a fresh warehouse under tmp_path (database ``db``)."""
    return Paimon(tmp_path / "wh")
