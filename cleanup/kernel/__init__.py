"""The shared kernel of every maintenance operation: its shape, one deleter, one result base, and the ledger that
accounts for an operation stopped midway (:mod:`.ledger`). Time comes from the one clock, tableformat/clock.py."""

from .deleter import Deleter, DeletionFile, Progress
from .operation import Cadence, Operation, run_operation
from .parameters import Parameter
from .result import SHOWN, OperationResult, shown_paths

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
