"""What both rewriting operations check before anything is read: the table can be rewritten, the TTL is sound."""

from __future__ import annotations

from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import NotApplicableError
from tableformat.model.manifest import ManifestEntry
from tableformat.model.schema import TableSchema
from tableformat.options import BUCKET, DELETION_VECTORS_ENABLED, TableOptions
from tableformat.scan.record_ttl import RecordTTL, resolve_record_ttl

PRIMARY_KEY_REASON = (
    "the table has a primary key; tablefmt rewrites append tables only (rewriting a primary-key table's files as "
    "if it were an append table can bring back an older version of a key); Paimon's own compaction merges it and "
    "applies record-level.expire-time there"
)


def rewrite_refusal(schema: TableSchema) -> str:
    """Why tablefmt cannot rewrite this table's files ('' when it can): it rewrites bucket-unaware append tables
    only. A primary-key table's files hold versions of keys that only a merge by key and sequence number may drop;
    a fixed-bucket table's files must stay in the bucket of their keys."""
    if schema.primary_keys:
        return PRIMARY_KEY_REASON
    options = TableOptions(schema.options)
    buckets = options.require(BUCKET)
    if buckets != -1:
        return f"the table has bucket={buckets}; tablefmt rewrites bucket-unaware append tables only (bucket=-1)"
    if options.require(DELETION_VECTORS_ENABLED):
        return (
            f"the table has deletion vectors ({DELETION_VECTORS_ENABLED.key}=true); tablefmt does not rewrite files "
            "that deletion vectors mark (rows they delete would come back); Paimon's own compaction applies them"
        )
    return ""


def require_rewritable(ctx: TableContext, what: str) -> None:
    """NotApplicableError, before planning, for a table tablefmt cannot rewrite (see rewrite_refusal)."""
    reason = rewrite_refusal(ctx.schema)
    if reason:
        raise NotApplicableError(what, reason)


def ttl_at(ctx: TableContext, now_ms: int, expire_ms: int | None, time_field: str | None) -> RecordTTL | None:
    """The record TTL at ``now_ms`` (overrides applied); ValidationError for a bad time field."""
    return resolve_record_ttl(ctx.schema, now_ms, expire_time_ms=expire_ms, time_field=time_field)


class FilePaths:
    """Data files' paths relative to the table root (as results report them)."""

    def __init__(self, ctx: TableContext) -> None:
        self._paths = DataPaths(ctx.schema, ctx.partition_codec())

    def relative(self, entry: ManifestEntry) -> str:
        return self._paths.of_entry(entry)
