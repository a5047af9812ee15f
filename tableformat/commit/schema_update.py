"""Column changes as Paimon makes them (``ALTER TABLE ... ADD / RENAME / DROP / ALTER COLUMN``, Java
``SchemaManager.generateTableSchema``, pypaimon 2.1.0's ``SchemaManager``): a list of changes applied in order to
the latest schema and written as one new ``schema-(N+1)`` through :func:`~tableformat.commit.schema_change.
evolve_schema` (atomic create; after a lost race the same changes are applied again to the newer schema, and a
change that no longer fits is refused then).

Field ids are kept: a renamed or retyped column keeps its id (readers map older files by id), a dropped id is never
reused, and each added column takes the next id after ``highestFieldId``, which the new schema records, as Paimon
writes it. The rules, each refusal a :class:`~tableformat.errors.SchemaChangeError` in one line:

* only widening type changes (:func:`tableformat.model.sql_types.widening_refusal`), and NOT NULL to nullable
  only (Paimon's ``alter-column-null-to-not-null.disabled``, default true);
* an added column is nullable (Paimon refuses ``NOT NULL`` on ADD COLUMN, empty table or not) and goes last,
  after ``after``, or before the first partition column with ``add-column-before-partition``;
* partition keys cannot be renamed, dropped or retyped; primary keys cannot be renamed, dropped, retyped or made
  nullable; the record-TTL column (option ``record-level.time-field``) cannot be renamed, dropped or retyped;
  a column named by ``bucket-key`` or ``sequence.field`` cannot be dropped (a rename renames it there, as Paimon
  does);
* names are compared exactly, as Paimon's filesystem catalog does (case-sensitive): ``id`` and ``ID`` are two
  columns; the last column cannot be dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Union

from tableformat.codec.arrow_schema import paimon_type_of
from tableformat.commit.schema_change import SchemaChangeResult, evolve_schema
from tableformat.errors import SchemaChangeError, ValidationError
from tableformat.lazy_module import lazy_module
from tableformat.model.schema import DataField, TableSchema
from tableformat.model.sql_types import parse_sql_type, widening_refusal
from tableformat.model.types import DataType
from tableformat.options import (
    ADD_COLUMN_BEFORE_PARTITION,
    BUCKET_KEY,
    RECORD_LEVEL_TIME_FIELD,
    SEQUENCE_FIELD,
    TableOptions,
)
from tableformat.store import MetadataStore

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy_module("pyarrow")

TypeSpec = Union[str, DataType, "pa.DataType"]
"""A column type: Paimon's SQL spelling (``"DECIMAL(10, 2)"``), a :class:`DataType`, or a pyarrow type."""


@dataclass(frozen=True, slots=True)
class AddColumn:
    """Paimon's ``AddColumn``: a new nullable column, last or right after ``after``."""

    name: str
    type: DataType
    after: str | None = None
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """Paimon's ``RenameColumn``: the column keeps its field id."""

    name: str
    new_name: str


@dataclass(frozen=True, slots=True)
class DropColumn:
    """Paimon's ``DropColumn``: the field id is retired."""

    name: str


@dataclass(frozen=True, slots=True)
class UpdateColumn:
    """Paimon's ``UpdateColumnType`` / ``UpdateColumnNullability`` / ``UpdateColumnComment`` in one."""

    name: str
    type: DataType | None = None
    nullable: bool | None = None
    comment: str | None = None


ColumnChange = AddColumn | RenameColumn | DropColumn | UpdateColumn


def column_type(spec: TypeSpec) -> DataType:
    """The :class:`DataType` a type argument names (SchemaChangeError for an unknown or unsupported one)."""
    if isinstance(spec, DataType):
        return spec
    if isinstance(spec, str):
        return parse_sql_type(spec)
    if isinstance(spec, pa.DataType):
        try:
            return paimon_type_of(spec)
        except ValidationError as exc:
            raise SchemaChangeError(str(exc)) from None
    raise SchemaChangeError(f"a column type must be a type name like 'BIGINT' or a pyarrow type, got {spec!r}")


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SchemaChangeError(f"{what} must be a non-empty string, got {value!r}")
    return value


# --- applying changes --------------------------------------------------------------------------------------------
class _Draft:
    """The fields, options and highest field id of the schema being built, change by change."""

    def __init__(self, schema: TableSchema) -> None:
        self.base = schema
        self.fields = list(schema.fields)
        self.options = dict(schema.options)
        self.highest = schema.highest_field_id
        self.time_field = TableOptions(schema.options).get(RECORD_LEVEL_TIME_FIELD)

    def index(self, name: str) -> int:
        for position, field in enumerate(self.fields):
            if field.name == name:
                return position
        raise SchemaChangeError(f"column {name!r} does not exist; columns: {[f.name for f in self.fields]}")

    def absent(self, name: str) -> None:
        if any(f.name == name for f in self.fields):
            raise SchemaChangeError(f"column {name!r} already exists")

    def protect(self, name: str, action: str, *, primary: bool = True, ttl: bool = True) -> None:
        if name in self.base.partition_keys:
            raise SchemaChangeError(f"cannot {action} partition column {name!r}")
        if primary and name in self.base.primary_keys:
            raise SchemaChangeError(f"cannot {action} primary key column {name!r}")
        if ttl and name == self.time_field:
            raise SchemaChangeError(
                f"cannot {action} column {name!r}: the option record-level.time-field names it for record TTL"
            )

    def option_columns(self, key: str) -> list[str]:
        text = self.options.get(key) or ""
        return [c.strip() for c in text.split(",") if c.strip()]

    def apply(self, change: ColumnChange) -> None:
        if isinstance(change, AddColumn):
            self._add(change)
        elif isinstance(change, RenameColumn):
            self._rename(change)
        elif isinstance(change, DropColumn):
            self._drop(change)
        else:
            self._update(change)

    def _add(self, change: AddColumn) -> None:
        if not change.type.nullable:
            raise SchemaChangeError(
                f"column {change.name!r} cannot be added as {change.type}: an added column must be nullable (Paimon "
                "refuses NOT NULL in ADD COLUMN)"
            )
        self.absent(change.name)
        self.highest += 1
        field = DataField(id=self.highest, name=change.name, type=change.type, description=change.comment)
        if change.after is not None:
            self.fields.insert(self.index(change.after) + 1, field)
            return
        before_partition = TableOptions(self.options).require(ADD_COLUMN_BEFORE_PARTITION)
        keys = self.base.partition_keys
        first_key = next((i for i, f in enumerate(self.fields) if f.name in keys), None) if before_partition else None
        self.fields.insert(len(self.fields) if first_key is None else first_key, field)

    def _rename(self, change: RenameColumn) -> None:
        position = self.index(change.name)
        self.protect(change.name, "rename")
        self.absent(change.new_name)
        self.fields[position] = replace(self.fields[position], name=change.new_name)
        for key in (BUCKET_KEY.key, SEQUENCE_FIELD.key):
            columns = self.option_columns(key)
            if change.name in columns:
                self.options[key] = ",".join(change.new_name if c == change.name else c for c in columns)

    def _drop(self, change: DropColumn) -> None:
        position = self.index(change.name)
        self.protect(change.name, "drop")
        for key in (BUCKET_KEY.key, SEQUENCE_FIELD.key):
            if change.name in self.option_columns(key):
                raise SchemaChangeError(f"cannot drop column {change.name!r}: the option {key} names it")
        if len(self.fields) == 1:
            raise SchemaChangeError(f"cannot drop column {change.name!r}: it is the table's last column")
        del self.fields[position]

    def _update(self, change: UpdateColumn) -> None:
        position = self.index(change.name)
        field = self.fields[position]
        dtype = field.type
        if change.type is not None:
            self.protect(change.name, "change the type of")
            refusal = widening_refusal(change.name, dtype, change.type)
            if refusal is not None:
                raise SchemaChangeError(refusal)
            # A type spelled NOT NULL asks for NOT NULL; any other keeps the column's nullability.
            nullable = dtype.nullable and change.type.nullable
            if dtype.nullable and not nullable:
                raise _not_null_refusal(change.name)
            dtype = DataType(change.type.root, change.type.params, nullable)
        if change.nullable is not None and change.nullable != dtype.nullable:
            if not change.nullable:
                raise _not_null_refusal(change.name)
            if change.name in self.base.primary_keys:
                raise SchemaChangeError(f"cannot make primary key column {change.name!r} nullable")
            dtype = DataType(dtype.root, dtype.params, True)
        description = change.comment if change.comment is not None else field.description
        self.fields[position] = replace(field, type=dtype, description=description)

    def schema(self) -> TableSchema | None:
        fields = tuple(self.fields)
        if fields == self.base.fields and self.options == dict(self.base.options):
            return None
        return replace(self.base, fields=fields, options=self.options, highest_field_id=self.highest)


def _not_null_refusal(name: str) -> SchemaChangeError:
    return SchemaChangeError(
        f"column {name!r} cannot be changed from nullable to NOT NULL (as in Paimon, where "
        "alter-column-null-to-not-null.disabled is true by default): only NOT NULL to nullable"
    )


def apply_changes(schema: TableSchema, changes: Sequence[ColumnChange]) -> TableSchema | None:
    """``schema`` with ``changes`` applied in order (id and time unchanged), or None when they change nothing."""
    draft = _Draft(schema)
    for change in changes:
        draft.apply(change)
    return draft.schema()


def commit_changes(
    store: MetadataStore, changes: Sequence[ColumnChange], *, now_ms: int | None = None
) -> SchemaChangeResult:
    """Write ``changes`` as one new schema version (nothing when they change nothing)."""
    return evolve_schema(store, lambda latest: apply_changes(latest, changes), now_ms=now_ms)


# --- the builder -------------------------------------------------------------------------------------------------
class SchemaUpdate:
    """Changes collected in a ``with table.update_schema() as update:`` block, committed as one new schema version
    when the block ends without an exception (nothing is written when it raises). Each call is checked against the
    latest schema at once, so a bad change raises where it is made; ``commit()`` commits without a ``with``."""

    def __init__(self, store: MetadataStore, on_commit: Callable[[SchemaChangeResult], None] | None = None) -> None:
        self._store = store
        self._on_commit = on_commit
        self._changes: list[ColumnChange] = []
        self.result: SchemaChangeResult | None = None
        """What ``commit()`` wrote (None before)."""

    @property
    def changes(self) -> tuple[ColumnChange, ...]:
        return tuple(self._changes)

    def _add(self, change: ColumnChange) -> SchemaUpdate:
        if self.result is not None:
            raise SchemaChangeError("this schema update was already committed; start a new one")
        apply_changes(self._store.latest_schema(), [*self._changes, change])  # refuse it here, not at commit
        self._changes.append(change)
        return self

    def add_column(
        self, name: str, type: TypeSpec, *, after: str | None = None, comment: str | None = None
    ) -> SchemaUpdate:
        """Add a nullable column (last, or right after column ``after``); older files read it as null."""
        after = _name(after, "after") if after is not None else None
        return self._add(AddColumn(_name(name, "a column name"), column_type(type), after, comment))

    def rename_column(self, old: str, new: str) -> SchemaUpdate:
        """Rename a column; it keeps its field id, so older files read their values under the new name."""
        return self._add(RenameColumn(_name(old, "the column to rename"), _name(new, "the new column name")))

    def drop_column(self, name: str) -> SchemaUpdate:
        """Drop a column (its field id is never reused; a column added later under that name reads null from older
        files)."""
        return self._add(DropColumn(_name(name, "the column to drop")))

    def update_column(
        self, name: str, *, type: TypeSpec | None = None, nullable: bool | None = None, comment: str | None = None
    ) -> SchemaUpdate:
        """Widen a column's type, make a NOT NULL column nullable, or set its comment."""
        if type is None and nullable is None and comment is None:
            raise SchemaChangeError(f"update_column({name!r}) needs a type, nullable or comment to change")
        dtype = column_type(type) if type is not None else None
        return self._add(UpdateColumn(_name(name, "the column to update"), dtype, nullable, comment))

    def commit(self) -> SchemaChangeResult:
        """Write the changes as one new schema version (applied again on a newer schema after a lost race)."""
        if self.result is not None:
            return self.result
        self.result = commit_changes(self._store, self._changes)
        if self._on_commit is not None:
            self._on_commit(self.result)
        return self.result

    def __enter__(self) -> SchemaUpdate:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if kind is None:
            self.commit()
        return False


# --- schema merging for writes -----------------------------------------------------------------------------------
def merge_changes(schema: TableSchema, incoming: pa.Schema) -> list[ColumnChange]:
    """The changes that let data of Arrow schema ``incoming`` be written: each column the table lacks added as a
    nullable column (in the data's order), and each column whose data type is wider than the table's widened when
    Paimon's rules allow it (others are left to the write, which casts or refuses them)."""
    changes: list[ColumnChange] = []
    names = set(schema.field_names)
    time_field = TableOptions(schema.options).get(RECORD_LEVEL_TIME_FIELD)
    protected = {*schema.partition_keys, *schema.primary_keys, *([time_field] if time_field else [])}
    for arrow_field in incoming:
        try:
            data_type = paimon_type_of(arrow_field.type)
        except ValidationError as exc:
            raise SchemaChangeError(f"column {arrow_field.name!r}: {exc}") from None
        if arrow_field.name not in names:
            changes.append(AddColumn(arrow_field.name, data_type))
            continue
        field = schema.field(arrow_field.name)
        if (field.type.root, field.type.params) == (data_type.root, data_type.params):
            continue
        if data_type.root in ("STRING", "BYTES") or field.name in protected:  # Arrow strings carry no length
            continue
        if widening_refusal(field.name, field.type, data_type) is None:
            changes.append(UpdateColumn(field.name, data_type))
    return changes


def merge_schema(store: MetadataStore, incoming: pa.Schema) -> SchemaChangeResult:
    """Evolve the table so data of schema ``incoming`` fits (see :func:`merge_changes`), computed against the
    latest schema on every attempt: a writer that lost the race to another adding the same column adds nothing."""
    return evolve_schema(store, lambda latest: apply_changes(latest, merge_changes(latest, incoming)))
