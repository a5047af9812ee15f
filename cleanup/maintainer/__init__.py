"""``tablefmt maintain``: every table's retention over a table or a whole warehouse, from cron or as a daemon.

- :mod:`.targets`: which tables a target names (a table, a ``<db>.db``, or a Paimon filesystem warehouse).
- :mod:`.config`: the settings and the TOML file that sets them.
- :mod:`.lease`: one maintainer per table at a time, across processes and hosts.
- :mod:`.table_pass`: one pass over one table (probe, lease, run what is due, write the state).
- :mod:`.keep_up`: ingest against retention, and whether it keeps up.
- :mod:`.scheduler`: ``run_once`` for cron, ``watch`` with a min-heap of due times.
- :mod:`.metrics`: the Prometheus textfile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .config import CONFIG_ENV, MaintainSettings, load_settings, settings_from_mapping
    from .keep_up import KeepUp
    from .lease import TableLease
    from .metrics import render_metrics
    from .scheduler import DueQueue, Maintainer
    from .table_pass import TableReport, maintain_table
    from .targets import TableTarget, discover, discover_all
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "CONFIG_ENV": ".config",
            "MaintainSettings": ".config",
            "load_settings": ".config",
            "settings_from_mapping": ".config",
            "KeepUp": ".keep_up",
            "TableLease": ".lease",
            "render_metrics": ".metrics",
            "DueQueue": ".scheduler",
            "Maintainer": ".scheduler",
            "TableReport": ".table_pass",
            "maintain_table": ".table_pass",
            "TableTarget": ".targets",
            "discover": ".targets",
            "discover_all": ".targets",
        },
    )

__all__ = [
    "CONFIG_ENV",
    "DueQueue",
    "KeepUp",
    "MaintainSettings",
    "Maintainer",
    "TableLease",
    "TableReport",
    "TableTarget",
    "discover",
    "discover_all",
    "load_settings",
    "maintain_table",
    "render_metrics",
    "settings_from_mapping",
]
