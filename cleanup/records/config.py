"""Record expiration settings: the table's ``record-level.*`` options with per-call overrides, checked first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.context import TableContext
from tableformat.errors import ValidationError
from tableformat.options import (
    COMPACTION_COMMIT_MAX_FILES,
    RECORD_LEVEL_EXPIRE_MAX_FILES,
    RECORD_LEVEL_EXPIRE_MAX_REWRITE_SIZE,
    RECORD_LEVEL_EXPIRE_TIME,
    TARGET_FILE_SIZE,
)

from ..rewrite import require_rewritable, ttl_at


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordExpireConfig:
    """What one record expiration run may do."""

    expire_ms: int
    """Rows older than now minus this expire (``record-level.expire-time``)."""
    time_field: str
    """The column judged (``record-level.time-field``)."""
    max_files: int
    """Files dropped or rewritten per run, at most (``record-level.expire.max-files``)."""
    max_rewrite_bytes: int
    """Bytes of partly expired files rewritten per run, at most (``record-level.expire.max-rewrite-size``)."""
    commit_max_files: int
    """Files one rewrite commit replaces, at most (``compaction.commit.max-files``)."""
    target_size: int
    """New files roll at about this size (``target-file-size``)."""

    @classmethod
    def resolve(cls, ctx: TableContext, overrides: Mapping[str, Any]) -> RecordExpireConfig:
        given = overrides  # checked and typed by the kernel from the operation's parameters
        require_rewritable(ctx, "expire-records")
        options = ctx.options
        expire_ms = options.get_or(RECORD_LEVEL_EXPIRE_TIME, given.get("expire_time"))
        if expire_ms is None:
            raise ValidationError(
                "no record expire time: set the table option record-level.expire-time or pass one "
                "(--expire-time 30d, expire_time=...)"
            )
        time_field = given.get("time_field")
        ttl = ttl_at(ctx, 0, expire_ms, None if time_field is None else str(time_field))
        assert ttl is not None
        max_files = options.require_or(RECORD_LEVEL_EXPIRE_MAX_FILES, given.get("max_files"))
        rewrite = options.require_or(RECORD_LEVEL_EXPIRE_MAX_REWRITE_SIZE, given.get("max_rewrite_size"))
        return cls(
            expire_ms=expire_ms,
            time_field=ttl.field_name,
            max_files=max_files,
            max_rewrite_bytes=rewrite,
            commit_max_files=options.require(COMPACTION_COMMIT_MAX_FILES),
            target_size=options.require(TARGET_FILE_SIZE),
        )
