"""What both rewriting operations check before anything is read: the table can be rewritten, the TTL is sound."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.errors import ValidationError
from tableformat.model.manifest import ManifestEntry
from tableformat.options import BUCKET, TableOptions
from tableformat.scan.record_ttl import RecordTTL, resolve_record_ttl


def require_rewritable(ctx: TableContext, what: str) -> None:
    """tablefmt writes bucket-unaware append tables only: refuse the others before planning."""
    options = TableOptions(ctx.schema.options)
    if ctx.schema.primary_keys:
        raise ValidationError(f"{what}: the table has a primary key; tablefmt rewrites append tables only")
    if options.require(BUCKET) != -1:
        raise ValidationError(
            f"{what}: the table has bucket={options.require(BUCKET)}; tablefmt rewrites bucket-unaware append "
            "tables only (bucket=-1)"
        )


def check_overrides(what: str, overrides: Mapping[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    """The non-None overrides; ValidationError naming any the operation does not take."""
    unknown = sorted(set(overrides) - set(allowed))
    if unknown:
        raise ValidationError(f"{what} takes no {', '.join(unknown)}; it takes {', '.join(allowed)}")
    return {key: value for key, value in overrides.items() if value is not None}


def ttl_at(ctx: TableContext, now_ms: int, expire_ms: int | None, time_field: str | None) -> RecordTTL | None:
    """The record TTL at ``now_ms`` (overrides applied); ValidationError for a bad time field."""
    return resolve_record_ttl(ctx.schema, now_ms, expire_time_ms=expire_ms, time_field=time_field)


class FilePaths:
    """Data files' paths relative to the table root (as results report them)."""

    def __init__(self, ctx: TableContext) -> None:
        self._paths = DataPaths(ctx.schema, ctx.partition_codec())

    def relative(self, entry: ManifestEntry) -> str:
        return self._paths.of_entry(entry)
