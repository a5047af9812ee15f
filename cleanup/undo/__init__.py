"""Undo: give back exactly what one maintenance run took (``tablefmt undo TABLE RUN_ID``, docs/undo.md).

1. **Plan** (:mod:`.plan`, nothing written): from the undo window's directory of the run (``.tablefmt/undo/<run
   id>/``: its held files and saved metadata copies) and its audit record (the snapshots it committed), decide what to
   write back: the saved snapshot, tag, changelog and consumer files, and for a run whose commits took files out of
   the table (partition or record expiration, compaction), one commit that puts them back and takes out what the run
   added. Refused, with one line saying why, wherever the result would not be exactly the state before the run.
2. **Execute** (:mod:`.execute`), holding the table like a rollback does (no maintenance run meanwhile): release the
   run's held files (so that no later purge deletes them), write the copies back (snapshots ascending, then the
   EARLIEST hint, then tags), commit the reversal, record the run (state ``restored``), then remove the run's window.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .execute import execute_undo, undo_run
    from .plan import UndoPlan, plan_undo
    from .result import UndoResult
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "execute_undo": ".execute",
            "undo_run": ".execute",
            "UndoPlan": ".plan",
            "plan_undo": ".plan",
            "UndoResult": ".result",
        },
    )

__all__ = ["UndoPlan", "UndoResult", "execute_undo", "plan_undo", "undo_run"]
