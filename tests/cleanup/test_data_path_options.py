"""Paimon's data-path options in every command: ``data-file.path-directory`` (data under ``<root>/data/...``, as
pypaimon 2.1.0 and Paimon Java put it), ``data-file.prefix`` and ``partition.default-name``; and the refusal of tables
whose options put files outside the table root (``data-file.external-paths`` and friends).
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import context_with_io, files_under, paths_under

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cleanup.orphans import plan_orphan_removal
from tableformat.cleanup.snapshots.journal import list_journals
from tableformat.cli.main import cli
from tableformat.codec.arrow_schema import fields_from_arrow
from tableformat.codec.binary_row import encode_row
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import NewDataFile
from tableformat.errors import UnsupportedFormatError, ValidationError
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.model.manifest import DataFileMeta
from tableformat.model.schema import TableSchema
from tableformat.store import MetadataStore

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
DAY_MS = 86_400_000
OPTIONS = {
    "write-only": "true",
    "data-file.path-directory": "data",
    "data-file.prefix": "part-",
    "partition.default-name": "NULLP",
}


def rows(ids: list[int], dts: list[str | None]) -> pa.Table:
    return pa.table({"id": ids, "dt": dts}, schema=SCHEMA)


def read(table: Table, **how: Any) -> list[tuple[int, str | None]]:
    data = table.to_arrow(**how)
    return sorted(zip(data.column("id").to_pylist(), data.column("dt").to_pylist()), key=lambda r: r[0])


def data_files(root: Path) -> set[str]:
    """Parquet files of the table (not the audit ledger's records: docs/audit.md)."""
    return {rel for rel in files_under(root) if rel.endswith(".parquet")}


def far_future() -> int:
    return int(time.time() * 1000) + 10 * DAY_MS


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"], options=OPTIONS)


def root_of(table: Table) -> Path:
    return Path(table.context.layout.root)


# --- reads and writes ------------------------------------------------------------------------------------------------
def test_appends_put_files_where_paimon_does(table: Table) -> None:
    table.append(rows([1, 2, 3, 4], ["a", None, "b", ""]))
    root = root_of(table)
    files = data_files(root)
    directories = {"data/dt=a/bucket-0", "data/dt=NULLP/bucket-0", "data/dt=b/bucket-0"}
    assert {f.rsplit("/", 1)[0] for f in files} == directories
    assert all(f.rsplit("/", 1)[1].startswith("part-") for f in files)
    assert {Path(f.path).relative_to(root).as_posix() for f in table.files()} == files
    assert read(table) == [(1, "a"), (2, None), (3, "b"), (4, "")]
    assert read(table, partition_filter={"dt": None}) == [(2, None)]  # "" shares the directory, not the value


def test_check_is_ok(table: Table) -> None:
    table.append(rows([1, 2, 3], ["a", None, "b"]))
    table.append(rows([4], ["a"]))
    result = check_table(table.context)
    assert result.missing_files == () and result.errors == () and result.ok
    assert result.referenced_files == 4 + 4 + 2  # data files, manifest lists of two snapshots, two manifests
    code, out, err = run("check", str(root_of(table)))
    assert (code, err) == (0, "") and out.startswith("ok: 2 snapshot(s)")


# --- expiration ------------------------------------------------------------------------------------------------------
def test_expire_deletes_exactly_the_retired_files(table: Table) -> None:
    root = root_of(table)
    table.append(rows([1, 2, 3], ["a", None, "b"]))
    before = data_files(root)
    table.overwrite(rows([4], ["a"]), {"dt": "a"})
    table.append(rows([5], [None]))
    retired = {f for f in before if f.startswith("data/dt=a/")}
    assert len(retired) == 1
    dry = expire_snapshots(table.context, retain_min=1, time_retained=0, dry_run=True, now_ms=far_future())
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=far_future())
    assert result.deleted_data_files == 1
    assert {p for p in result.deleted_paths if p.startswith("data/")} == retired
    assert result.deleted_paths == dry.deleted_paths
    assert data_files(root) == (before - retired) | {f for f in data_files(root) if f not in before}
    assert not (root / next(iter(retired))).exists()
    assert read(table) == [(2, None), (3, "b"), (4, "a"), (5, None)]
    assert check_table(table.context).ok


def test_expire_removes_emptied_partitions_but_not_the_data_directory(tmp_path: Path) -> None:
    options = {**OPTIONS, "snapshot.clean-empty-directories": "true"}
    table = Table.create(str(tmp_path / "t"), SCHEMA, partition_keys=["dt"], options=options)
    table.append(rows([1, 2], ["a", "b"]))
    table.drop_partitions([{"dt": "a"}])
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=far_future())
    assert result.deleted_data_files == 1
    assert result.removed_dirs == ("data/dt=a/bucket-0", "data/dt=a")
    root = root_of(table)
    assert (root / "data").is_dir() and not (root / "data" / "dt=a").exists()
    assert read(table) == [(2, "b")]


def test_interrupted_expiration_is_completed_by_the_next_run(kit: Any, table: Table) -> None:
    root = root_of(table)
    table.append(rows([1, 2], ["a", "b"]))
    table.overwrite(rows([3], ["a"]), {"dt": "a"})
    table.append(rows([4], ["b"]))
    retired = {f for f in data_files(root) if f.startswith("data/dt=a/")} - {
        Path(f.path).relative_to(root).as_posix() for f in table.files()
    }
    crashing = context_with_io(root, kit.CrashingIO(crash_at_delete=1))
    with pytest.raises(kit.Crash):
        expire_snapshots(crashing, retain_min=1, time_retained=0, now_ms=far_future())
    assert len(list_journals(table.context)) == 1
    result = expire_snapshots(Table.open(str(root)).context, retain_min=1, time_retained=0, now_ms=far_future())
    assert result.completed_journals and {p for p in result.deleted_paths if p.startswith("data/")} == retired
    assert list_journals(table.context) == []
    assert read(Table.open(str(root))) == [(2, "b"), (3, "a"), (4, "b")]


# --- orphan cleanup --------------------------------------------------------------------------------------------------
def test_remove_orphans_lists_the_data_directory(table: Table) -> None:
    root = root_of(table)
    table.append(rows([1, 2, 3], ["a", None, "b"]))
    live = data_files(root)
    uncommitted = {
        Path(f.path).relative_to(root).as_posix() for f in table.write_files(rows([9], ["c"]))
    }
    stray = f"data/dt=a/bucket-0/part-{uuid.uuid4()}-0.parquet"
    (root / stray).write_bytes(b"stray")
    (root / "data/dt=a/bucket-0/notes.txt").write_text("keep me")
    outside = root / "dt=a" / "bucket-0" / f"part-{uuid.uuid4()}-0.parquet"  # not where this table puts data
    outside.parent.mkdir(parents=True)
    outside.write_bytes(b"not ours")
    future = int(time.time() * 1000) + 2 * DAY_MS
    dry = remove_orphan_files(table.context, dry_run=True, now_ms=future)
    result = remove_orphan_files(table.context, now_ms=future)
    assert set(result.deleted_paths) == {stray} | uncommitted == set(dry.deleted_paths)
    assert result.skipped_unknown == ("data/dt=a/bucket-0/notes.txt",)
    assert result.removed_dirs == ("data/dt=c/bucket-0", "data/dt=c")
    assert data_files(root) == live | {str(outside.relative_to(root))}
    assert (root / "data/dt=a/bucket-0/notes.txt").is_file()
    assert read(table) == [(1, "a"), (2, None), (3, "b")]
    assert check_table(table.context).ok


@pytest.mark.s3
def test_remove_orphans_lists_the_data_directory_on_s3(s3_root: tuple[str, dict[str, Any]]) -> None:
    location, storage = s3_root
    table = Table.create(location, SCHEMA, partition_keys=["dt"], options=OPTIONS, storage_options=storage)
    table.append(rows([1, 2], ["a", None]))
    ctx = table.context
    live = {f.path.split(f"{location}/", 1)[1] for f in table.files()}
    assert {p.rsplit("/", 1)[0] for p in live} == {"data/dt=a/bucket-0", "data/dt=NULLP/bucket-0"}
    stray = f"data/dt=NULLP/bucket-0/part-{uuid.uuid4()}-0.parquet"
    ctx.io.write_bytes(ctx.layout.join(stray), b"stray")
    future = int(time.time() * 1000) + 2 * DAY_MS
    dry = remove_orphan_files(ctx, dry_run=True, now_ms=future)
    result = remove_orphan_files(ctx, now_ms=future)
    assert result.deleted_paths == dry.deleted_paths == (stray,)
    assert not ctx.io.exists(ctx.layout.join(stray))
    assert all(ctx.io.exists(ctx.layout.join(p)) for p in live)
    assert read(Table.open(location, storage)) == [(1, "a"), (2, None)]
    assert check_table(ctx).ok


# --- data outside the table root: refused ----------------------------------------------------------------------------
def raw_table(root: Path, options: dict[str, str]) -> Table:
    """A table whose schema-0 has exactly these options (as another engine may write them)."""
    fields = fields_from_arrow(SCHEMA)
    schema = TableSchema(
        id=0, fields=fields, highest_field_id=1, partition_keys=("dt",), options={"write-only": "true", **options}
    )
    assert MetadataStore(LocalFileIO(), TableLayout(str(root))).write_schema_if_absent(schema)
    return Table.open(str(root))


EXTERNAL = [
    ({"data-file.external-paths": "file:///elsewhere/a,file:///elsewhere/b"}, "data-file.external-paths="),
    ({"data-file.external-paths.strategy": "round-robin"}, "data-file.external-paths.strategy="),
    ({"global-index.external-path": "s3://other/index"}, "global-index.external-path="),
    ({"data-file.path-directory": "/elsewhere/data"}, "data-file.path-directory="),
    ({"data-file.path-directory": "s3://other/data"}, "data-file.path-directory="),
    ({"data-file.path-directory": "data/../../up"}, "data-file.path-directory="),
]


def add_external_file(table: Table) -> None:
    """Commit one data file that records an external path (as Paimon's external-path writers do)."""
    ctx = table.context
    meta = DataFileMeta(file_name=f"data-{uuid.uuid4()}-0.parquet", file_size=10, row_count=1,
                        external_path="file:///elsewhere/a/dt=x/bucket-0/f.parquet")
    part = encode_row(["x"], [ctx.schema.field("dt").type])
    new = NewDataFile(partition=part, partition_values=("x",), partition_path="dt=x", bucket=0, total_buckets=-1,
                      meta=meta, path="")
    assert Committer(ctx.store, ctx.schema).commit(CommitRequest(kind=ChangeKind.APPEND, new_files=[new])).created


@pytest.mark.parametrize(("options", "named"), EXTERNAL)
def test_tables_with_files_outside_the_root_are_refused(tmp_path: Path, options: dict[str, str], named: str) -> None:
    root = tmp_path / "t"
    table = raw_table(root, options)
    before = paths_under(tmp_path)
    data = rows([1], ["a"])
    calls = {
        "append": lambda: table.append(data),
        "overwrite": lambda: table.overwrite(data, {"dt": "a"}),
        "write_files": lambda: table.write_files(data),
        "drop": lambda: table.drop_partitions([{"dt": "a"}]),
        "expire": lambda: expire_snapshots(table.context, now_ms=far_future()),
        "expire dry run": lambda: expire_snapshots(table.context, dry_run=True, now_ms=far_future()),
        "orphans": lambda: remove_orphan_files(table.context, now_ms=far_future()),
        "orphans dry run": lambda: remove_orphan_files(table.context, dry_run=True, now_ms=far_future()),
        "orphan plan": lambda: plan_orphan_removal(table.context, now_ms=far_future()),
    }
    for what, call in calls.items():
        with pytest.raises(UnsupportedFormatError) as caught:
            call()
        message = str(caught.value)
        assert named in message and "outside the table root" in message and "\n" not in message, what
    source = tmp_path / "rows.parquet"
    pq.write_table(data, source)
    for args in (
        ["write", str(root), str(source)],
        ["drop-partition", str(root), "dt=a"],
        ["expire", str(root)],
        ["remove-orphans", str(root)],
    ):
        code, out, err = run(*args)
        assert code == 1 and out == "" and err.startswith("error: ") and err.count("\n") == 1, args
        assert named in err, args
    assert paths_under(tmp_path) - {source.name} == before


def test_reads_and_check_of_a_table_with_external_path_options(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = Table.create(str(root), SCHEMA, partition_keys=["dt"], options={"write-only": "true"})
    table.append(rows([1, 2], ["a", "b"]))
    add_external_file(table)
    schema = table.context.schema
    evolved = TableSchema(
        id=1,
        fields=schema.fields,
        highest_field_id=schema.highest_field_id,
        partition_keys=schema.partition_keys,
        options={**schema.options, "data-file.external-paths": "file:///elsewhere/a"},
    )
    assert table.context.store.write_schema_if_absent(evolved)
    table = Table.open(str(root))
    assert read(table, partition_filter={"dt": "a"}) == [(1, "a")]  # files inside the root read as usual
    with pytest.raises(UnsupportedFormatError, match="has an external path; tablefmt reads files inside the table"):
        table.to_arrow()
    result = check_table(table.context)
    assert result.ok and result.missing_files == () and result.errors == ()
    assert result.external_files_skipped == 1 and result.orphan_files is None
    assert "data-file.external-paths" in result.reclaimable_note
    code, out, _ = run("check", str(root), "--json")
    assert code == 0 and json.loads(out)["orphan_files"] is None


@pytest.mark.parametrize(
    "directory", ["/abs/data", "s3://b/data", "../up", "data/../..", "", "manifest", "snapshot/x", "dt=x", ".hidden"]
)
def test_create_refuses_data_directories_that_are_not_plain_directories_inside_the_root(
    tmp_path: Path, directory: str
) -> None:
    with pytest.raises(ValidationError, match="data-file.path-directory"):
        Table.create(str(tmp_path / "t"), SCHEMA, ["dt"], {"data-file.path-directory": directory})
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("options", [e[0] for e in EXTERNAL[:3]])
def test_create_refuses_external_paths(tmp_path: Path, options: dict[str, str]) -> None:
    with pytest.raises(ValidationError, match="outside the table root"):
        Table.create(str(tmp_path / "t"), SCHEMA, ["dt"], options)


@pytest.mark.parametrize(("directory", "resolved"), [("data", "data"), ("./data/", "data"), ("a/b", "a/b"), (".", "")])
def test_data_directory_is_normalised_as_paimon_resolves_it(tmp_path: Path, directory: str, resolved: str) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA, ["dt"], {"data-file.path-directory": directory})
    table.append(rows([1], ["a"]))
    prefix = f"{resolved}/" if resolved else ""
    assert data_files(tmp_path / "t") == {
        f"{prefix}dt=a/bucket-0/{Path(table.files()[0].path).name}"
    }
    assert read(table) == [(1, "a")]
