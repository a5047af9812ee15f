"""Shared fixtures."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings

try:  # tests/ on sys.path (rootdir conftest without tests/__init__.py) or the repository root
    from support.ci import on_ci
    from support.seaweedfs import DEFAULT_BUCKET, SeaweedFS, WeedNotFoundError
except ImportError:  # pragma: no cover
    from tests.support.ci import on_ci  # type: ignore[no-redef]
    from tests.support.seaweedfs import DEFAULT_BUCKET, SeaweedFS, WeedNotFoundError  # type: ignore[no-redef]


# --- Hypothesis ---------------------------------------------------------------------------------------------------
# No deadline for any property test (tests that set their own settings inherit it): the default 200 ms is wall-clock
# time, which a loaded two-core CI machine can stretch in any example, and a deadline miss that does not repeat on
# replay fails the test as flaky. Without a deadline, Hypothesis's data-generation speed check allows 30 s, not 1 s.
# What a property test checks is its assertions; speed is bench/'s job.
settings.register_profile("tablefmt", deadline=None)
settings.load_profile("tablefmt")


# --- S3 (SeaweedFS) -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server() -> Iterator[SeaweedFS]:
    """One SeaweedFS server for the whole run; skipped without the weed binary unless CI=true (then an error)."""
    try:
        server = SeaweedFS()
    except WeedNotFoundError as exc:
        if on_ci():
            raise
        pytest.skip(f"S3 tests need SeaweedFS: {exc}")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_root(s3_server: SeaweedFS) -> tuple[str, dict[str, Any]]:
    """(``s3://bucket/<unique prefix>``, storage options) for ``open_location(url, storage_options)``."""
    return f"s3://{DEFAULT_BUCKET}/t-{uuid.uuid4().hex[:16]}", s3_server.storage_options()
