"""Option names given to tablefmt at create: typos are refused with a suggestion, Paimon's own names are stored,
``allow_unknown_options`` / ``--allow-unknown-options`` stores anything. Existing tables carrying options tablefmt does
not know (written by pypaimon or Paimon Java) still open, read, write and are maintained."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from tableformat import Table, ValidationError
from tableformat.cli.main import cli
from tableformat.errors import UnknownOptionError
from tableformat.options import REGISTRY, check_option_keys
from tableformat.paimon_option_keys import PAIMON_OPTION_KEYS

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
PY_HINT = "to store options tablefmt does not know, pass allow_unknown_options=True"
CLI_HINT = "to store options tablefmt does not know, pass --allow-unknown-options"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"snapshot.num-retained.mn": "3"},
            f"unknown table option 'snapshot.num-retained.mn' (did you mean 'snapshot.num-retained.min'?); {PY_HINT}",
        ),
        (
            {"snapshot.time-retaned": "1h", "write-only": "true", "xyzzy": "1"},
            "unknown table options 'snapshot.time-retaned' (did you mean 'snapshot.time-retained'?), 'xyzzy'; "
            f"{PY_HINT}",
        ),
        (
            {"Snapshot.Num-Retained.Min": "3"},
            f"unknown table option 'Snapshot.Num-Retained.Min' (did you mean 'snapshot.num-retained.min'?); {PY_HINT}",
        ),
        (
            {"parquet.row-group.rowz": "10"},
            f"unknown table option 'parquet.row-group.rowz' (did you mean 'parquet.row-group.rows'?); {PY_HINT}",
        ),
        (
            {"parquet.enable.dictionry": "false"},
            f"unknown table option 'parquet.enable.dictionry' (did you mean 'parquet.enable.dictionary'?); {PY_HINT}",
        ),
    ],
)
def test_unknown_option_names_are_refused_before_anything_is_created(
    tmp_path: Path, options: dict[str, str], message: str
) -> None:
    with pytest.raises(UnknownOptionError) as raised:
        Table.create(str(tmp_path / "t"), SCHEMA, options=options)
    assert str(raised.value) == message
    assert isinstance(raised.value, ValidationError)
    assert not (tmp_path / "t").exists()


PAIMON_OPTIONS = {
    "changelog-producer": "none",
    "manifest.compression": "zstd",
    "tag.automatic-creation": "process-time",
    "tag.creation-period": "daily",
    "partition.expiration-time": "7 d",
    "partition.timestamp-formatter": "yyyy-MM-dd",
    "consumer.ignore-progress": "true",
    "consumer-id": "c1",
    "data-file.thin-mode": "true",
    "metadata.stats-mode": "truncate(16)",
    "record-level.time-field-type": "seconds-int",  # record-level.expire-time is interpreted (and checked) now
    "sink.parallelism": "4",
    "scan.parallelism": "2",
    "commit.force-compact": "false",
    "target-file-row-num": "1000",
    "snapshot.expire.clean-empty-directories": "true",  # an older (fallback) name
    "log.system": "none",  # removed from Paimon after 0.9, still on old tables
    "fields.price.aggregate-function": "sum",
    "fields.ts.sequence-group": "price",
    "fields.default-aggregate-function": "last_value",
    "file-index.bloom-filter.columns": "id",
    "file-index.bloom-filter.id.fpp": "0.01",
    "parquet.compression.codec.zstd.level": "3",
    "orc.bloom.filter.columns": "id",
    "commit.callback.com.example.Callback.param": "x",
    "blob-descriptor.source-table": "t",
}


def test_paimon_option_names_are_stored_as_given(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA, options=PAIMON_OPTIONS)
    stored = json.loads((tmp_path / "t" / "schema" / "schema-0").read_text())["options"]
    assert stored == {**PAIMON_OPTIONS, "file.format": "parquet"}
    assert table.append(pa.table({"id": [1], "dt": ["a"]}, schema=SCHEMA)) is not None


def test_every_registry_and_paimon_name_is_known() -> None:
    check_option_keys([*REGISTRY, *PAIMON_OPTION_KEYS])
    assert {"bucket", "bucket-key", "file.format", "file.compression", "dynamic-partition-overwrite"} <= set(
        PAIMON_OPTION_KEYS
    )


def test_the_escape_hatch_stores_unknown_names_but_still_checks_known_values(tmp_path: Path) -> None:
    options = {"snapshot.num-retained.mn": "3", "my.company.owner": "team-a"}
    table = Table.create(str(tmp_path / "t"), SCHEMA, options=options, allow_unknown_options=True)
    assert dict(table.options.raw) == {**options, "file.format": "parquet"}
    assert Table.open(table.location).options.raw["my.company.owner"] == "team-a"
    with pytest.raises(ValidationError, match=r"^option snapshot\.num-retained\.min: invalid integer 'zero'$"):
        Table.create(
            str(tmp_path / "u"), SCHEMA, options={"snapshot.num-retained.min": "zero"}, allow_unknown_options=True
        )
    assert not (tmp_path / "u").exists()


def test_tables_written_elsewhere_with_unknown_options_open_read_write_and_are_maintained(tmp_path: Path) -> None:
    """Validation applies to what users give tablefmt, never to options already in a table's schema."""
    root = tmp_path / "t"
    Table.create(str(root), SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    schema_file = root / "schema" / "schema-0"
    document = json.loads(schema_file.read_text())
    document["options"].update({"some.future-option": "x", "snapshot.num-retained.mn": "3", "fields.id.nested": "y"})
    schema_file.write_text(json.dumps(document, indent=2))
    table = Table.open(str(root))
    for i in range(3):
        table.append(pa.table({"id": [i], "dt": ["a"]}, schema=SCHEMA))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2]
    result = table.maintenance.expire_snapshots(retain_min=1, retain_max=1, time_retained=0)
    assert result.expired_snapshot_ids == (1, 2)
    assert table.maintenance.remove_orphan_files(older_than=dt.timedelta(hours=1)).deleted_paths == ()
    assert table.maintenance.check().ok
    runner = CliRunner()
    for argv in (["snapshots", str(root)], ["files", str(root)], ["check", str(root)], ["expire", str(root)]):
        result_cli = runner.invoke(cli, argv)
        assert result_cli.exit_code == 0 and result_cli.stderr == "", (argv, result_cli.output)
    assert json.loads(schema_file.read_text())["options"]["some.future-option"] == "x"


# --- the CLI --------------------------------------------------------------------------------------------------------
@pytest.fixture
def source(tmp_path: Path) -> str:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1], "dt": ["a"]}, schema=SCHEMA), path)
    return str(path)


def create(tmp_path: Path, source: str, *extra: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["create", str(tmp_path / "t"), "--schema-from", source, *extra])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (
            ["--option", "snapshot.num-retained.mn=3"],
            f"error: unknown table option 'snapshot.num-retained.mn' (did you mean 'snapshot.num-retained.min'?); "
            f"{CLI_HINT}",
        ),
        (
            ["--option", "snapshot.num-retained.min=zero", "--allow-unknown-options"],
            "error: Invalid value for '--option': option snapshot.num-retained.min: invalid integer 'zero'",
        ),
        (
            ["--option", "snapshot.num-retained.min=5", "--option", "snapshot.num-retained.max=3"],
            "error: Invalid value for '--option': snapshot.num-retained.max (3) must be >= "
            "snapshot.num-retained.min (5)",
        ),
        (
            ["--option", "write-only=true", "--option", "write-only=false"],
            "error: Invalid value for '--option': write-only is given twice",
        ),
    ],
)
def test_cli_create_refuses_bad_options_with_one_line(
    tmp_path: Path, source: str, extra: list[str], line: str
) -> None:
    code, out, err = create(tmp_path, source, *extra)
    assert (code, out, err) == (2, "", line + "\n")
    assert not (tmp_path / "t").exists()


def test_cli_create_stores_paimon_options_and_unknown_ones_when_allowed(tmp_path: Path, source: str) -> None:
    code, out, err = create(tmp_path, source, "--option", "changelog-producer=none", "--option", "team.owner=a")
    assert (code, out) == (2, "") and err == f"error: unknown table option 'team.owner'; {CLI_HINT}\n"
    assert not (tmp_path / "t").exists()
    code, out, err = create(
        tmp_path, source, "--option", "changelog-producer=none", "--option", "team.owner=a", "--allow-unknown-options"
    )
    assert (code, err) == (0, ""), err
    assert out.startswith(f"created {tmp_path / 't'} with columns ['id', 'dt']")
    assert dict(Table.open(str(tmp_path / "t")).options.raw) == {
        "changelog-producer": "none",
        "team.owner": "a",
        "file.format": "parquet",
    }
    assert sorted(os.listdir(tmp_path / "t")) == ["schema"]
