"""CI runs (``CI`` set to 1/true/yes): there nothing may skip for want of a dependency, a missing one fails the run."""

from __future__ import annotations

import os


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
