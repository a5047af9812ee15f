"""The one registry of maintenance operations. The CLI, the Table API (``table.maintenance``), the after-commit
hook, ``tableformat.spark.maintain`` and the scheduler all read it; an operation is registered by one line here (and
its generic CLI command by one entry in cli/main.py ``COMMANDS``, which tests/cli/test_lazy_commands.py checks).

Order matters: it is the order in which a table's own maintenance runs (Paimon's: tag and partition expiration,
record TTL, consumer expiration, snapshot expiration last); orphan cleanup runs on its own cadence.
"""

from __future__ import annotations

from typing import Any

from tableformat.errors import ValidationError

from .compaction import COMPACTION
from .erase import ERASURE
from .kernel import Operation
from .orphans import ORPHAN_CLEANUP
from .partitions import PARTITION_EXPIRATION
from .records import RECORD_EXPIRATION
from .snapshots import SNAPSHOT_EXPIRATION

OPERATIONS: tuple[Operation[Any, Any, Any], ...] = (
    PARTITION_EXPIRATION,
    RECORD_EXPIRATION,  # record TTL after partition expiry, before snapshot expiry (Paimon's order)
    COMPACTION,  # not after commits; before snapshot expiration when a schedule runs everything in order
    ERASURE,  # on demand only (never wanted by the scheduler): it needs a filter
    SNAPSHOT_EXPIRATION,
    ORPHAN_CLEANUP,
)


def operation(name: str) -> Operation[Any, Any, Any]:
    """The registered operation called ``name``; ValidationError listing the names for anything else."""
    for op in OPERATIONS:
        if op.name == name:
            return op
    raise ValidationError(f"no maintenance operation {name!r}; registered: {', '.join(o.name for o in OPERATIONS)}")


def after_commit_operations() -> tuple[Operation[Any, Any, Any], ...]:
    """The operations the after-commit hook runs (and ``spark.maintain`` runs as a table's own maintenance)."""
    return tuple(op for op in OPERATIONS if op.after_commit)
