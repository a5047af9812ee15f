"""Partition values of one table: BinaryRow bytes decoded to typed values, cached by the row bytes."""

from __future__ import annotations

from typing import Any

from tableformat.codec.binary_row import decode_row
from tableformat.model.schema import TableSchema

CACHE_LIMIT = 1 << 16
"""Decoded rows kept per codec; beyond, the cache starts again (a table with more partitions decodes some twice)."""


class PartitionCodec:
    """Decodes partition rows of one table, caching by the row bytes."""

    def __init__(self, schema: TableSchema) -> None:
        self.keys = schema.partition_keys
        self.types = [f.type for f in schema.partition_fields]
        self._cache: dict[bytes, dict[str, Any]] = {}

    def values(self, partition: bytes, *, source: str = "<partition>") -> dict[str, Any]:
        cached = self._cache.get(partition)
        if cached is None:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache = {}
            cached = dict(zip(self.keys, decode_row(partition, self.types, source=source)))
            self._cache[partition] = cached
        return cached

    def row(self, partition: bytes, *, source: str = "<partition>") -> list[Any]:
        """The row's values in column order (``decode_row``), from the same cache."""
        return list(self.values(partition, source=source).values())
