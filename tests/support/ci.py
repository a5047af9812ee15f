"""CI runs (``CI`` set to 1/true/yes): there nothing may skip for want of a dependency, a missing one fails the run."""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def optional(module: str) -> Any:
    """The optional extra ``module`` (pyspark, pandas, polars, duckdb, matplotlib): on CI a missing one fails the
    run with its ImportError; elsewhere the calling test (or module, at import) is skipped, naming the extra to
    install (``pip install -e '.[all]'`` brings every one)."""
    if on_ci():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"{module} is an optional extra: pip install -e '.[all]'")
