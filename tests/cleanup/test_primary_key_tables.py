"""Primary-key tables (Paimon's ``primaryKeys``): tablefmt never rewrites their files nor writes to them.

Record expiration and compaction rewrite files as if every row were final; on a primary-key table a file holds
versions of keys that only a merge by key and sequence number may drop, so a rewrite could bring back an older
version of a key. Both are refused with one line (NotApplicableError, CLI exit 1: the command line is fine, the
table is of a kind the command does not apply to), and ``tablefmt maintain``, the after-commit hook and Spark's
``maintain`` skip them as not applicable, never as a failure. Paimon applies ``record-level.expire-time`` to a
primary-key table itself, in the merge of its compaction. Appends and overwrites stay refused with one line.

The tables here have no data: every refusal happens before anything is read (pypaimon-written primary-key tables
are in tests/interop/test_pk_maintenance_interop.py).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.ci import optional
from support.tables import files_under
from support.warehouses import FakeClock

from tableformat import Table
from tableformat.cleanup.after_commit import run_after_commit
from tableformat.cleanup.maintainer import Maintainer, MaintainSettings
from tableformat.cleanup.snapshots import ExpireResult
from tableformat.cli.main import cli
from tableformat.codec.arrow_schema import fields_from_arrow
from tableformat.errors import NotApplicableError, UnsupportedFormatError
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.model.schema import TableSchema
from tableformat.report import table_report
from tableformat.store import MetadataStore

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        pa.field("ts", pa.timestamp("ms")),
    ]
)
PK_OPTIONS = {
    "bucket": "3",
    "changelog-producer": "input",
    "record-level.expire-time": "1 d",
    "record-level.time-field": "ts",
    "compaction.max.file-num": "5",
}
PK_REASON = "the table has a primary key; tablefmt rewrites append tables only"


def create_pk_table(root: Path, options: dict[str, str] | None = None) -> Table:
    """The schema-0 Paimon writes for ``primary_keys=[id, dt]`` partitioned by ``dt``."""
    fields = fields_from_arrow(SCHEMA)
    schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=len(fields) - 1,
        partition_keys=("dt",),
        primary_keys=("id", "dt"),
        options={**PK_OPTIONS, **(options or {})},
    )
    assert MetadataStore(LocalFileIO(), TableLayout(str(root))).write_schema_if_absent(schema)
    return Table.open(str(root))


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return create_pk_table(tmp_path / "wh" / "db.db" / "pk")


@pytest.mark.parametrize("name", ["compact", "expire-records", "erase"])
def test_rewrites_are_refused_in_one_line_before_anything_is_read(table: Table, name: str) -> None:
    root = Path(table.context.layout.root)
    before = files_under(root)
    with pytest.raises(NotApplicableError, match=rf"^{name}: {PK_REASON}") as caught:
        table.maintenance.run(name)
    assert (caught.value.operation, caught.value.reason.startswith(PK_REASON)) == (name, True)
    with pytest.raises(NotApplicableError):
        table.maintenance.run(name, dry_run=True)
    result = CliRunner().invoke(cli, [name, str(root)])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"error: {name}: {PK_REASON}") and result.stderr.count("\n") == 1
    as_json = CliRunner().invoke(cli, [name, str(root), "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["kind"] == "NotApplicableError"
    assert files_under(root) == before


def test_the_refusal_comes_before_bad_overrides_are_judged(table: Table) -> None:
    with pytest.raises(NotApplicableError, match="^expire-records: the table has a primary key"):
        table.maintenance.run("expire-records", time_field="no_such_column")


def test_appends_and_overwrites_are_refused_in_one_line(table: Table) -> None:
    root = Path(table.context.layout.root)
    before = files_under(root)
    data = pa.table({"id": [1], "dt": ["2024-01-01"], "ts": [None]}, schema=SCHEMA)
    expected = "table has a primary key (id, dt): tablefmt writes append tables only; write primary-key tables with"
    for write in (
        lambda: table.append(data),
        lambda: table.overwrite(data, {"dt": "2024-01-01"}),
        lambda: table.write_files(data),
    ):
        with pytest.raises(UnsupportedFormatError, match="^" + re.escape(expected)):
            write()
    source = root.parent / "rows.parquet"
    pq.write_table(data, source)
    result = CliRunner().invoke(cli, ["write", str(root), str(source)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {expected}") and result.stderr.count("\n") == 1
    assert files_under(root) == before


def test_spark_writes_are_refused_on_the_driver(table: Table) -> None:
    optional("pyspark")
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    from tableformat.spark.config import WriteConfig
    from tableformat.spark.datasource import plan_write

    frame = StructType(
        [StructField("id", LongType()), StructField("dt", StringType()), StructField("ts", TimestampType())]
    )
    config = WriteConfig.parse({"path": table.location}, overwrite=False)
    with pytest.raises(UnsupportedFormatError, match=r"^table has a primary key \(id, dt\)"):
        plan_write(table, config, frame, False)


def test_after_commit_skips_record_expiration_on_a_primary_key_table(
    table: Table, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="tableformat.cleanup.after_commit"):
        results = run_after_commit(table.context)  # raised the refusal before: a failure after every commit
    assert [type(r) for r in results] == [ExpireResult]  # snapshot expiration still runs
    (record,) = caplog.records
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith(f"expire-records after commit skipped, not applicable: {PK_REASON}")


def test_maintain_skips_rewrites_as_not_applicable_and_the_pass_is_ok(tmp_path: Path) -> None:
    create_pk_table(tmp_path / "wh" / "db.db" / "pk")
    clock = FakeClock()
    maintainer = Maintainer([str(tmp_path / "wh")], MaintainSettings(), clock=clock)
    (report,) = maintainer.run_once()
    assert report.ok and report.errors == ()
    assert [name for name, _ in report.operations] == ["expire", "remove-orphans"]
    assert [name for name, _ in report.not_applicable] == ["expire-records", "compact"]
    assert all(reason.startswith(PK_REASON) for _, reason in report.not_applicable)
    document = report.to_json()
    assert document["ok"] is True and sorted(document["not_applicable"]) == ["compact", "expire-records"]

    (again,) = maintainer.run_once()  # not due again until the schema changes, as an unconfigured operation
    assert again.ok and again.not_applicable == ()
    assert not {"expire-records", "compact"} & {name for name, _ in again.operations}

    other = tmp_path / "wh2" / "db.db" / "pk"
    create_pk_table(other)
    result = CliRunner().invoke(cli, ["maintain", str(other)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"{other}: ok - expire: expired 0 snapshot(s); deleted 0 file(s), 0 B; remove-orphans: 0 orphan file(s)"
    )
    assert [line.split(" (")[0] for line in lines[1:3]] == [
        "  expire-records: skipped, not applicable",
        "  compact: skipped, not applicable",
    ]
    assert lines[1].startswith(f"  expire-records: skipped, not applicable ({PK_REASON}")


def test_the_retention_report_shows_rewrites_as_not_applicable_not_as_errors(table: Table) -> None:
    report = table_report(table.context)
    rules = {rule.operation: rule for rule in report.rules}
    for name in ("expire-records", "compact"):
        rule = rules[name]
        assert (rule.configured, rule.error, rule.result) == (True, "", None)
        assert rule.not_applicable.startswith(PK_REASON)
        assert rule.outcome().startswith(f"not applicable: {PK_REASON}")
        assert rule.to_json()["not_applicable"] == rule.not_applicable
    assert not [e for e in report.errors if e.startswith(("expire-records", "compact"))], report.errors
