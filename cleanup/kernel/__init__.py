"""The shared kernel of every maintenance operation: its shape, one deleter, one clock, one result base, and the
ledger that accounts for an operation stopped midway (:mod:`.ledger`)."""

from .clock import Clock, system_clock
from .deleter import Deleter, DeletionFile, Progress
from .operation import Cadence, Operation, Parameter, run_operation
from .result import OperationResult

__all__ = [
    "Cadence",
    "Clock",
    "Deleter",
    "DeletionFile",
    "Operation",
    "OperationResult",
    "Parameter",
    "Progress",
    "run_operation",
    "system_clock",
]
