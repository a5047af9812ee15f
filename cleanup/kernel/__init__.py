"""The shared kernel of every maintenance operation: its shape, one deleter, one result base, and the ledger that
accounts for an operation stopped midway (:mod:`.ledger`). Time comes from the one clock, tableformat/clock.py."""

from .deleter import Deleter, DeletionFile, Progress
from .operation import Cadence, Operation, Parameter, run_operation
from .result import OperationResult

__all__ = [
    "Cadence",
    "Deleter",
    "DeletionFile",
    "Operation",
    "OperationResult",
    "Parameter",
    "Progress",
    "run_operation",
]
