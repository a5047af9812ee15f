"""The ``tablefmt`` data source for pyspark's Python Data Source API (pyspark 4.3).

Usage (after ``tableformat.spark.register(spark)``)::

    df.write.format("tablefmt").mode("append").option("partitionBy", "dt").save(path)
    df.write.format("tablefmt").mode("overwrite").option("partition", "dt=2024-01-01").save(path)
    df.write.format("tablefmt").mode("overwrite").option("dynamic-partition-overwrite", "true").save(path)
    spark.read.format("tablefmt").option("scan.snapshot-id", "3").load(path)

Only ``append`` and ``overwrite`` modes exist (Spark refuses the others for Python data sources). A write to a
path without a table creates it from the DataFrame's schema (Spark TimestampType becomes TIMESTAMP_LTZ, its
TimestampNTZType TIMESTAMP), partitioned by ``partitionBy`` / ``partition-keys`` and with any table options given;
if that first job then fails, the table stays, empty (a schema and no snapshot). With ``mergeSchema=true`` the
DataFrame's columns the table lacks are added (nullable) and wider types widen the table's, in one schema version
the driver commits before the tasks write (docs/schema.md); it stays if the job then fails. Spark's own
``.partitionBy()`` is refused by Spark for Python data sources: use the option. See :mod:`tableformat.spark.config`
for every option.

A ``load()`` pins the snapshot (latest, or the one the scan options name) when Spark asks for the schema; every
action on that DataFrame reads the pinned snapshot.

Reads and writes freeze the heap of Spark's reused Python workers once per worker
(:mod:`tableformat.spark.worker_gc`): pyspark runs a full garbage collection after every task, which otherwise walks
all of pyarrow's and tableformat's imports.
"""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from tableformat.commit.data_writer import require_writable
from tableformat.errors import TableAlreadyExistsError, TableNotFoundError, ValidationError
from tableformat.model.partition import normalize_spec
from tableformat.options import PARTITION_DEFAULT_NAME, REGISTRY, ROW_GROUP_ROWS, TARGET_FILE_SIZE
from tableformat.spark.config import ReadConfig, WriteConfig
from tableformat.spark.reader import TablefmtReader, select_snapshot
from tableformat.spark.schema import arrow_schema_for_new_table, resolve_columns, spark_schema_of
from tableformat.spark.worker_gc import freeze_worker_heap
from tableformat.spark.writer import TablefmtWriter, WritePlan
from tableformat.table import Table

log = logging.getLogger(__name__)

FORMAT_NAME = "tablefmt"
MAX_DEFAULT_BUFFER_BYTES = 256 * 1024**2


class TablefmtDataSource(DataSource):
    """``format("tablefmt")``: batch reads and writes of tablefmt (Paimon append) tables."""

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self.pinned = False
        self.pinned_snapshot_id: int | None = None

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> StructType:
        freeze_worker_heap()  # the planner worker that loads data sources, reused across queries
        config = ReadConfig.parse(self.options)
        table = Table.open(config.path, config.storage_options)
        snapshot = select_snapshot(
            table, snapshot_id=config.snapshot_id, tag=config.tag, timestamp_ms=config.timestamp_ms
        )
        self.pinned = True
        self.pinned_snapshot_id = None if snapshot is None else snapshot.id
        return spark_schema_of(list(table.schema.fields))

    def reader(self, schema: StructType) -> DataSourceReader:
        config = ReadConfig.parse(self.options)
        return TablefmtReader(config, self.pinned_snapshot_id, self.pinned, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        config = WriteConfig.parse(self.options, overwrite=overwrite)
        table = open_or_create(config, schema)
        if config.merge_schema:
            merge_dataframe_schema(table, schema)
        return TablefmtWriter(plan_write(table, config, schema, overwrite))


def merge_dataframe_schema(table: Table, schema: StructType) -> None:
    """``mergeSchema``: add the DataFrame's columns the table lacks and widen the ones it holds wider, in one
    schema version committed on the driver before any task writes (a column matching a table column but for case
    is that column, as Spark resolves names)."""
    arrow = arrow_schema_for_new_table(schema)
    table_names = list(table.schema.field_names)
    named = []
    for arrow_field in arrow:
        try:
            (name,) = resolve_columns([arrow_field.name], table_names)
        except ValidationError:
            name = arrow_field.name  # not in the table: a new column under the DataFrame's name
        named.append(arrow_field.with_name(name))
    table.merge_schema_for(pa.schema(named))


def open_or_create(config: WriteConfig, schema: StructType) -> Table:
    """The table at the write's path, created from the DataFrame schema if there is none yet."""
    try:
        table = Table.open(config.path, config.storage_options)
    except TableNotFoundError:
        try:
            table = Table.create(
                config.path,
                arrow_schema_for_new_table(schema),
                partition_keys=config.partition_keys or (),
                options=config.table_options,
                storage_options=config.storage_options,
            )
        except TableAlreadyExistsError:  # a concurrent first write won: use its table
            table = Table.open(config.path, config.storage_options)
        else:
            log.info("tablefmt: created table %s partitioned by %s", table.location, list(table.partition_keys))
            return table
    check_existing(table, config)
    return table


def check_existing(table: Table, config: WriteConfig) -> None:
    """Creation-time options given to a write on an existing table must agree with the table."""
    if config.partition_keys is not None and tuple(config.partition_keys) != tuple(table.partition_keys):
        raise ValidationError(
            f"table {table.location} is partitioned by {list(table.partition_keys)}; the write asks for "
            f"{list(config.partition_keys)} (partitionBy / partition-keys only apply when a write creates the table)"
        )
    for key, text in config.table_options.items():
        option = REGISTRY[key]
        if option.parse(text) != table.options.get(option):
            raise ValidationError(
                f"table option {key} of {table.location} is {table.options.raw.get(key, option.render_default())!r}, "
                f"the write gives {text!r}; table options on a write only apply when it creates the table"
            )


def plan_write(table: Table, config: WriteConfig, schema: StructType, overwrite: bool) -> WritePlan:
    """Check the DataFrame against the table and fix everything the tasks and the commit need; a table tablefmt does
    not write (primary key, fixed buckets) is refused here, on the driver, before any task runs."""
    require_writable(table.schema)
    table_names = list(table.schema.field_names)
    df_names = schema.fieldNames()
    resolved = resolve_columns(df_names, table_names)
    duplicates = sorted({n for n in resolved if resolved.count(n) > 1})
    if duplicates:
        raise ValidationError(f"several DataFrame columns map to table column(s) {duplicates}")
    renames = {src: dst for src, dst in zip(df_names, resolved) if src != dst}

    static_values: dict[str, Any] | None = None
    fill: dict[str, tuple[Any, Any]] = {}
    if config.static_partition is not None:
        static_values = normalize_spec(
            config.static_partition,
            table.schema.partition_fields,
            default_name=table.options.require(PARTITION_DEFAULT_NAME),
            allow_partial=True,
        )
        arrow_schema = table.arrow_schema
        fill = {
            key: (value, arrow_schema.field(key).type) for key, value in static_values.items() if key not in resolved
        }
    present = set(resolved) | set(fill)
    missing = [f.name for f in table.schema.fields if f.name not in present]
    if missing:  # as Table.append: never a silent null column, nor rows in the default partition
        raise ValidationError(
            f"the DataFrame lacks column(s) {missing} of table {table.location}; select every table column "
            "(lit(None) for one to leave null; a static 'partition' option supplies partition columns)"
        )

    buffer_bytes = config.buffer_bytes or min(table.options.require(TARGET_FILE_SIZE), MAX_DEFAULT_BUFFER_BYTES)
    return WritePlan(
        location=config.path,
        storage_options=config.storage_options,
        overwrite=overwrite,
        static_partition=config.static_partition,
        static_values=static_values,
        dynamic=config.dynamic,
        renames=renames,
        fill=fill,
        buffer_bytes=buffer_bytes,
        buffer_rows=table.options.require(ROW_GROUP_ROWS),
    )


DefaultSource = TablefmtDataSource
"""The name Spark's automatic discovery of ``pyspark_*`` modules looks for."""
