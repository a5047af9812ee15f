"""Table schema: fields with stable ids, partition keys and options (schema/schema-N)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tableformat.model.types import DataType


@dataclass(frozen=True, slots=True, kw_only=True)
class DataField:
    """One column: a stable id (survives renames), a name and a type."""

    id: int
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSchema:
    """The content of one schema/schema-N file."""

    version: int = 3
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0

    def field(self, name: str) -> DataField:
        """The field called ``name``."""
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    @property
    def field_names(self) -> tuple[str, ...]:
        """Column names in order."""
        return tuple(f.name for f in self.fields)

    @property
    def partition_fields(self) -> tuple[DataField, ...]:
        """The partition columns, in partition-key order."""
        return tuple(self.field(name) for name in self.partition_keys)
