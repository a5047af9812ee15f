"""An erasure whose old copies are not gone yet (``.tablefmt/erasures/``, docs/erase.md): ``tablefmt maintain``
completes its purge once its deadline (``erase.deadline``) has come, and reports it past due while a tag, branch or
consumer still holds erased rows. Bytes in :mod:`tableformat.codec.erasure_codec`; the store alone reads and writes
it. It never holds the erasure's filter (the filter names the people erased)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PendingErasure:
    snapshot_id: int
    """The erasure's (last) snapshot: every older snapshot must go."""
    deadline_ms: int
    files: tuple[str, ...]
    """The files that held the erased rows (replaced by the erasure), relative to the table root: the erasure is
    complete once no root names them and they are deleted."""
