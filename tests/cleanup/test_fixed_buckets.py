"""Fixed-bucket tables (``bucket=3``, as pypaimon and Paimon Java write them): reads, check, expiration and orphan
cleanup find every file in its own ``bucket-N`` directory; tablefmt's own appends are refused with one line.

tablefmt does not create fixed-bucket tables, so the table here is made the way Paimon makes it: schema-0 with
``bucket=3`` and a ``bucket-key``, files written into ``bucket-0..2`` and committed with ``_TOTAL_BUCKETS=3``.
"""

from __future__ import annotations

import io
import re
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import files_under

from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cli.main import cli
from tableformat.codec.arrow_schema import fields_from_arrow
from tableformat.codec.binary_row import encode_row
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import NewDataFile, value_stats
from tableformat.errors import NotApplicableError, UnsupportedFormatError
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.model.manifest import DataFileMeta
from tableformat.model.schema import TableSchema
from tableformat.store import MetadataStore

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
DAY_MS = 86_400_000
BUCKETS = 3


def create_bucketed(root: Path) -> Table:
    fields = fields_from_arrow(SCHEMA)
    schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=len(fields) - 1,
        partition_keys=("part",),
        options={"bucket": str(BUCKETS), "bucket-key": "id", "file.format": "parquet", "write-only": "true"},
    )
    assert MetadataStore(LocalFileIO(), TableLayout(str(root))).write_schema_if_absent(schema)
    return Table.open(str(root))


def bucket_of(row_id: int) -> int:
    return row_id % BUCKETS  # any deterministic spread works: the manifest entry records the bucket


def commit(
    table: Table, ids: list[int], kind: ChangeKind = ChangeKind.APPEND, scope: dict[str, int] | None = None
) -> set[str]:
    """Write one file per (part, bucket) of ``ids`` (part = id // 100) and commit them; their paths."""
    ctx = table.context
    types = [f.type for f in ctx.schema.fields]
    groups: dict[tuple[int, int], list[int]] = {}
    for row_id in ids:
        groups.setdefault((row_id // 100, bucket_of(row_id)), []).append(row_id)
    files = []
    for (part, bucket), members in sorted(groups.items()):
        data = pa.table({"id": members, "part": [part] * len(members)}, schema=SCHEMA)
        buffer = io.BytesIO()
        pq.write_table(data, buffer)
        raw = buffer.getvalue()
        name = f"data-{uuid.uuid4()}-0.parquet"
        rel = f"part={part}/bucket-{bucket}/{name}"
        ctx.io.write_bytes(ctx.layout.join(rel), raw)
        meta = DataFileMeta(
            file_name=name, file_size=len(raw), row_count=len(members), value_stats=value_stats(data, types)
        )
        files.append(
            NewDataFile(
                partition=encode_row([part], [ctx.schema.field("part").type]),
                partition_values=(part,),
                partition_path=f"part={part}",
                bucket=bucket,
                total_buckets=BUCKETS,
                meta=meta,
                path=ctx.layout.join(rel),
            )
        )
    request = CommitRequest(kind=kind, new_files=files, overwrite_scope=None if scope is None else (scope,))
    assert Committer(ctx.store, ctx.schema).commit(request).created
    return {ctx.layout.relative(f.path) for f in files}


@pytest.fixture
def table(tmp_path: Path) -> Table:
    return create_bucketed(tmp_path / "t")


def ids_of(table: Table, **read: int) -> list[int]:
    return sorted(table.to_arrow(**read).column("id").to_pylist())  # type: ignore[arg-type]


def test_check_finds_files_in_every_bucket(table: Table) -> None:
    written = commit(table, [0, 1, 2, 100, 102, 105])
    assert {p.split("/")[1] for p in written} == {"bucket-0", "bucket-1", "bucket-2"}
    result = check_table(table.context)
    assert result.missing_files == () and result.size_mismatches == () and result.errors == ()
    assert result.ok
    assert result.referenced_files == len(written) + 3  # + the manifest lists and the manifest of snapshot 1


def test_reads_every_bucket(table: Table) -> None:
    commit(table, [0, 1, 2, 100, 102, 105])
    assert ids_of(table) == [0, 1, 2, 100, 102, 105]
    assert sorted(f.bucket for f in table.files()) == [0, 0, 1, 1, 2]


def test_expire_deletes_exactly_the_retired_files(table: Table) -> None:
    first = commit(table, [0, 1, 2, 100, 101])
    second = commit(table, [3, 4, 5], ChangeKind.OVERWRITE, {"part": 0})
    third = commit(table, [200, 202])
    retired = {p for p in first if p.startswith("part=0/")}
    assert {p.split("/")[1] for p in retired} == {"bucket-0", "bucket-1", "bucket-2"}
    far = int(time.time() * 1000) + 10 * DAY_MS
    dry = expire_snapshots(table.context, retain_min=1, time_retained=0, dry_run=True, now_ms=far)
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=far)
    assert {p for p in result.deleted_paths if p.startswith("part=")} == retired
    assert result.deleted_paths == dry.deleted_paths
    assert result.deleted_data_files == len(retired)
    root = Path(table.context.layout.root)
    assert all(not (root / p).exists() for p in retired)
    assert all((root / p).is_file() for p in (first - retired) | second | third)
    assert ids_of(table) == [3, 4, 5, 100, 101, 200, 202]
    assert check_table(table.context).ok


def test_remove_orphans_finds_strays_in_every_bucket(table: Table) -> None:
    live = commit(table, [0, 1, 2, 100])
    root = Path(table.context.layout.root)
    strays = {f"part=0/bucket-{b}/data-{uuid.uuid4()}-0.parquet" for b in range(BUCKETS)}
    for rel in strays:
        (root / rel).write_bytes(b"stray")
    future = int(time.time() * 1000) + 2 * DAY_MS
    dry = remove_orphan_files(table.context, dry_run=True, now_ms=future)
    result = remove_orphan_files(table.context, now_ms=future)
    assert set(result.deleted_paths) == strays == set(dry.deleted_paths)
    assert all((root / p).is_file() for p in live)
    assert ids_of(table) == [0, 1, 2, 100]


def test_drop_partition_then_expire(table: Table) -> None:
    first = commit(table, [0, 1, 2, 100])
    snapshot = table.drop_partitions([{"part": 0}])
    assert snapshot is not None and snapshot.delta_record_count == -3
    assert ids_of(table) == [100]
    far = int(time.time() * 1000) + 10 * DAY_MS
    result = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=far)
    assert {p for p in result.deleted_paths if p.startswith("part=")} == {p for p in first if p.startswith("part=0/")}
    assert check_table(table.context).ok


def test_appends_are_refused_in_one_line(table: Table) -> None:
    commit(table, [0, 1])
    root = Path(table.context.layout.root)
    before = files_under(root)
    data = pa.table({"id": [7], "part": [0]}, schema=SCHEMA)
    expected = "table has bucket=3: tablefmt writes bucket-unaware append tables only (bucket=-1)"
    with pytest.raises(UnsupportedFormatError, match=r"^table has bucket=3: tablefmt writes bucket-unaware"):
        table.append(data)
    with pytest.raises(UnsupportedFormatError):
        table.overwrite(data, {"part": 0})
    with pytest.raises(UnsupportedFormatError):
        table.write_files(data)
    source = root.parent / "rows.parquet"
    pq.write_table(data, source)
    result = CliRunner().invoke(cli, ["write", str(root), str(source)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {expected}") and result.stderr.count("\n") == 1
    assert files_under(root) == before
    assert [s.id for s in table.snapshots()] == [1]


def test_rewrites_are_not_applicable_to_fixed_bucket_tables(table: Table) -> None:
    commit(table, [0, 1, 2])
    root = Path(table.context.layout.root)
    before = files_under(root)
    reason = "the table has bucket=3; tablefmt rewrites bucket-unaware append tables only (bucket=-1)"
    with pytest.raises(NotApplicableError, match=re.escape(f"compact: {reason}")):
        table.maintenance.run("compact")
    with pytest.raises(NotApplicableError, match=re.escape(f"expire-records: {reason}")):
        table.maintenance.run("expire-records", expire_time="1d", time_field="id")
    with pytest.raises(NotApplicableError, match=re.escape(f"erase: {reason}")):
        table.maintenance.run("erase", where="id = 1")
    result = CliRunner().invoke(cli, ["compact", str(root)])
    assert result.exit_code == 1 and result.stderr == f"error: compact: {reason}\n"
    assert files_under(root) == before
