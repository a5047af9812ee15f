"""Record-level TTL for append tables: rows whose ``record-level.time-field`` is older than
``record-level.expire-time`` are removed.

``plan`` judges every live file by the time field's statistics (manifest, else Parquet footer): fully expired
files are dropped by one metadata-only snapshot without being read; partly expired ones are rewritten with their
unexpired rows by the shared rewriter (:mod:`..rewrite`), old and new swapped in one guarded snapshot per batch.
Reads never return expired rows whether or not this has run (:mod:`tableformat.scan.record_ttl`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .config import RecordExpireConfig
    from .execute import COMMIT_USER_PREFIX, RecordExpireResult, execute_record_expiration, planned_result
    from .operation import RECORD_EXPIRATION
    from .plan import JudgedFile, RecordExpirePlan, plan_record_expiration
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "RecordExpireConfig": ".config",
            "COMMIT_USER_PREFIX": ".execute",
            "RecordExpireResult": ".execute",
            "execute_record_expiration": ".execute",
            "planned_result": ".execute",
            "RECORD_EXPIRATION": ".operation",
            "JudgedFile": ".plan",
            "RecordExpirePlan": ".plan",
            "plan_record_expiration": ".plan",
        },
    )

__all__ = [
    "COMMIT_USER_PREFIX",
    "RECORD_EXPIRATION",
    "JudgedFile",
    "RecordExpireConfig",
    "RecordExpirePlan",
    "RecordExpireResult",
    "execute_record_expiration",
    "plan_record_expiration",
    "planned_result",
]
