"""Partition values of one table: BinaryRow bytes decoded to typed values, cached by the row bytes."""

from __future__ import annotations

from typing import Any

from tableformat.codec.binary_row import decode_row
from tableformat.model.schema import TableSchema


class PartitionCodec:
    """Decodes partition rows of one table, caching by the row bytes."""

    def __init__(self, schema: TableSchema) -> None:
        self.keys = schema.partition_keys
        self.types = [f.type for f in schema.partition_fields]
        self._cache: dict[bytes, dict[str, Any]] = {}

    def values(self, partition: bytes, *, source: str = "<partition>") -> dict[str, Any]:
        cached = self._cache.get(partition)
        if cached is None:
            cached = dict(zip(self.keys, decode_row(partition, self.types, source=source)))
            self._cache[partition] = cached
        return cached
