"""Fixed buckets and data paths against pypaimon 2.1.0's own tables: fixed buckets (``bucket=3``), Paimon's data-path
options (``data-file.path-directory``, ``data-file.prefix``, ``partition.default-name``) and external paths.

tablefmt reads, checks, expires and cleans what pypaimon wrote, and pypaimon reads what tablefmt leaves (and writes,
where tablefmt writes). Exact paths deleted, exact rows read, exact check results.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import files_under, rows_of

from interop.helpers import Paimon
from tableformat import Table
from tableformat.cleanup.check import check_table
from tableformat.cli.main import cli
from tableformat.errors import UnsupportedFormatError

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("dt", pa.string())])
DAY_MS = 86_400_000


def rows(ids: list[int], dts: list[str | None]) -> pa.Table:
    return pa.table({"id": ids, "dt": dts}, schema=SCHEMA)


def data_files(root: Path) -> set[str]:
    return {f for f in files_under(root) if f.endswith(".parquet")}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def in_days(days: int) -> int:
    return int(time.time() * 1000) + days * DAY_MS


def test_fixed_bucket_table(pp: Paimon) -> None:
    options = {"bucket": "3", "bucket-key": "id", "dynamic-partition-overwrite": "false"}
    pp.create_table("bk", SCHEMA, ["dt"], options)
    root = Path(pp.path("bk"))
    pp.append("bk", rows(list(range(12)), ["a"] * 6 + ["b"] * 6))
    pp.append("bk", rows(list(range(12, 18)), ["a", "b"] * 3))
    first = data_files(root)
    buckets = {f.split("/")[1] for f in first}
    assert buckets == {"bucket-0", "bucket-1", "bucket-2"}
    pp.overwrite("bk", rows([100, 101, 102], ["a", "a", "a"]), {"dt": "a"})
    expected = rows_of(rows([100, 101, 102, *range(6, 12), 13, 15, 17], ["a"] * 3 + ["b"] * 9))

    table = Table.open(str(root))
    assert rows_of(table.to_arrow()) == expected == rows_of(pp.read("bk"))
    result = check_table(table.context)
    assert result.ok and result.missing_files == () and result.errors == ()
    code, out, _ = run("check", str(root))
    assert code == 0 and out.startswith("ok: 3 snapshot(s)")

    retired = {f for f in first if f.startswith("dt=a/")}
    dry = expire_snapshots(table.context, retain_min=1, time_retained=0, dry_run=True, now_ms=in_days(10))
    done = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=in_days(10))
    assert {p for p in done.deleted_paths if p.startswith("dt=")} == retired and len(retired) >= 3
    assert done.deleted_paths == dry.deleted_paths
    assert not data_files(root) & retired and data_files(root) >= first - retired
    assert rows_of(pp.read("bk")) == expected == rows_of(Table.open(str(root)).to_arrow())

    stray = f"dt=b/bucket-2/data-{uuid.uuid4()}-0.parquet"
    (root / stray).write_bytes(b"stray")
    before = files_under(root)
    cleaned = remove_orphan_files(table.context, now_ms=in_days(2))
    assert cleaned.deleted_paths == (stray,)
    assert files_under(root) == before - {stray}
    assert check_table(Table.open(str(root)).context).ok

    source = root.parent / "more.parquet"
    pq.write_table(rows([500], ["a"]), source)
    before = files_under(root)
    code, out, err = run("write", str(root), str(source))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("error: table has bucket=3: tablefmt writes bucket-unaware append tables only")
    assert files_under(root) == before
    assert rows_of(pp.read("bk")) == expected


def test_path_directory_prefix_and_default_name(pp: Paimon) -> None:
    options = {
        "data-file.path-directory": "data",
        "data-file.prefix": "part-",
        "partition.default-name": "NULLP",
        "dynamic-partition-overwrite": "false",
    }
    pp.create_table("pd", SCHEMA, ["dt"], options)
    root = Path(pp.path("pd"))
    pp.append("pd", rows([1, 2, 3], ["a", None, "b"]))
    first = data_files(root)
    directories = {"data/dt=a/bucket-0", "data/dt=NULLP/bucket-0", "data/dt=b/bucket-0"}
    assert {f.rsplit("/", 1)[0] for f in first} == directories
    assert all(f.rsplit("/", 1)[1].startswith("part-") for f in first)
    pp.overwrite("pd", rows([4], ["a"]), {"dt": "a"})

    table = Table.open(str(root))
    assert rows_of(table.to_arrow()) == rows_of(rows([2, 3, 4], [None, "b", "a"]))
    result = check_table(table.context)
    assert result.ok and result.missing_files == () and result.referenced_files == 4 + 4 + 2

    # tablefmt's own append goes where pypaimon puts files, and pypaimon reads it
    before = data_files(root)
    table.append(rows([5, 6], [None, "c"]))
    ours = data_files(root) - before
    assert {f.rsplit("/", 1)[0] for f in ours} == {"data/dt=NULLP/bucket-0", "data/dt=c/bucket-0"}
    assert all(f.rsplit("/", 1)[1].startswith("part-") for f in ours)
    expected = rows_of(rows([2, 3, 4, 5, 6], [None, "b", "a", None, "c"]))
    assert rows_of(pp.read("pd")) == expected == rows_of(Table.open(str(root)).to_arrow())

    retired = {f for f in first if f.startswith("data/dt=a/")}
    dry = expire_snapshots(table.context, retain_min=1, time_retained=0, dry_run=True, now_ms=in_days(10))
    done = expire_snapshots(table.context, retain_min=1, time_retained=0, now_ms=in_days(10))
    assert done.deleted_data_files == 1 and {p for p in done.deleted_paths if p.startswith("data/")} == retired
    assert done.deleted_paths == dry.deleted_paths
    assert data_files(root) == (first | ours | {f for f in before if f not in first}) - retired
    assert rows_of(pp.read("pd")) == expected

    stray = f"data/dt=b/bucket-0/part-{uuid.uuid4()}-0.parquet"
    (root / stray).write_bytes(b"stray")
    (root / "data/dt=b/bucket-0/README").write_text("not ours")
    before = files_under(root)
    dry_orphans = remove_orphan_files(table.context, dry_run=True, now_ms=in_days(2))
    cleaned = remove_orphan_files(table.context, now_ms=in_days(2))
    assert cleaned.deleted_paths == dry_orphans.deleted_paths == (stray,)
    assert cleaned.skipped_unknown == ("data/dt=b/bucket-0/README",)
    assert files_under(root) == before - {stray}
    assert check_table(Table.open(str(root)).context).ok
    assert rows_of(pp.read("pd")) == expected


def test_external_paths_are_refused_for_writes_and_maintenance(pp: Paimon, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    options = {"data-file.external-paths": f"file://{elsewhere}", "data-file.external-paths.strategy": "round-robin"}
    pp.create_table("ex", SCHEMA, ["dt"], options)
    root = Path(pp.path("ex"))
    pp.append("ex", rows([1, 2], ["a", "b"]))
    pp.append("ex", rows([3], ["a"]))
    assert data_files(root) == set() and len(data_files(elsewhere)) == 3

    table = Table.open(str(root))
    with pytest.raises(UnsupportedFormatError, match="has an external path; tablefmt reads files inside the table"):
        table.to_arrow()
    result = check_table(table.context)
    assert result.ok and result.orphan_files is None
    assert result.external_files_skipped == 2 + 3  # live external files of snapshot 1 and of snapshot 2

    source = tmp_path / "more.parquet"
    pq.write_table(rows([9], ["a"]), source)
    before = files_under(root) | {f"../elsewhere/{f}" for f in files_under(elsewhere)}
    for args in (
        ["write", str(root), str(source)],
        ["drop-partition", str(root), "dt=a"],
        ["expire", str(root), "--retain-min", "1", "--time-retained", "0s"],
        ["remove-orphans", str(root), "--older-than", "0s", "--force"],
    ):
        code, out, err = run(*args)
        assert code == 1 and out == "" and err.count("\n") == 1, args
        assert "data-file.external-paths=" in err and "outside the table root" in err, args
    assert files_under(root) | {f"../elsewhere/{f}" for f in files_under(elsewhere)} == before
    assert rows_of(pp.read("ex")) == rows_of(rows([1, 2, 3], ["a", "b", "a"]))
