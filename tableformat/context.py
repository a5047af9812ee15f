"""Everything an operation needs to work on one table: its FileIO, root layout, metadata store and schema."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tableformat.codec.partition_codec import PartitionCodec
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.model.schema import TableSchema
from tableformat.options import TableOptions
from tableformat.store import MetadataStore


@dataclass(slots=True)
class TableContext:
    """One table's storage and metadata (the schema is the latest when the context was made)."""

    location: str
    io: FileIO
    layout: TableLayout
    store: MetadataStore
    schema: TableSchema
    _schemas: dict[int, TableSchema] = field(default_factory=dict)

    @classmethod
    def load(cls, location: str, storage_options: dict[str, object] | None = None) -> TableContext:
        file_io, root = open_location(location, dict(storage_options or {}))
        return cls.of(location, file_io, TableLayout(root))

    @classmethod
    def of(
        cls, location: str, file_io: FileIO, layout: TableLayout, schema: TableSchema | None = None
    ) -> TableContext:
        """The table at ``layout``'s root through ``file_io``, with its latest schema (read unless given)."""
        store = MetadataStore(file_io, layout)
        return cls(
            location=location, io=file_io, layout=layout, store=store, schema=schema or store.latest_schema()
        )

    def with_io(self, file_io: FileIO) -> TableContext:
        """The same table (schema and schema cache included) through another FileIO, e.g. a guarded one."""
        return replace(self, io=file_io, store=self.store.through(file_io))

    def with_store(self, store: MetadataStore) -> TableContext:
        """The same table read through another store over the same FileIO (e.g. one that caches what it reads)."""
        return replace(self, store=store)

    def with_options(self, overrides: Mapping[str, str]) -> TableContext:
        """The same table with option overrides applied in memory (nothing is written), e.g. a maintainer's
        per-table settings."""
        if not overrides:
            return self
        return replace(self, schema=replace(self.schema, options={**self.schema.options, **overrides}), _schemas={})

    @property
    def options(self) -> TableOptions:
        return TableOptions(self.schema.options)

    def schema_by_id(self, schema_id: int) -> TableSchema:
        if schema_id == self.schema.id:
            return self.schema
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self.store.read_schema(schema_id)
        return self._schemas[schema_id]

    def partition_codec(self) -> PartitionCodec:
        return self.store.partition_codec(self.schema)

    def url(self, path: str | None = None) -> str:
        return self.io.url(path if path is not None else self.layout.root)
