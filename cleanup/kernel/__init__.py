"""The shared kernel of every maintenance operation: its shape, one deleter, one result base, and the ledger that
accounts for an operation stopped midway (:mod:`.ledger`). Time comes from the one clock, tableformat/clock.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .deleter import Deleter, DeletionFile, Progress
    from .operation import Cadence, Operation, run_operation
    from .parameters import Parameter
    from .result import SHOWN, OperationResult, shown_paths
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "Deleter": ".deleter",
            "DeletionFile": ".deleter",
            "Progress": ".deleter",
            "Cadence": ".operation",
            "Operation": ".operation",
            "run_operation": ".operation",
            "Parameter": ".parameters",
            "SHOWN": ".result",
            "OperationResult": ".result",
            "shown_paths": ".result",
        },
    )

__all__ = [
    "SHOWN",
    "Cadence",
    "Deleter",
    "DeletionFile",
    "Operation",
    "OperationResult",
    "Parameter",
    "Progress",
    "run_operation",
    "shown_paths",
]
