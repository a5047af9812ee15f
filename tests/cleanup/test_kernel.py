"""The maintenance kernel: one deleter, the operation shape, the registry and everything that reads it."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from tableformat.cleanup import after_commit, registry
from tableformat.cleanup.kernel import Deleter, Operation, OperationResult, Parameter, Progress, run_operation
from tableformat.cleanup.kernel.deleter import ORDERED_BATCH
from tableformat.cleanup.kernel.ledger import recording
from tableformat.cli.main import COMMANDS
from tableformat.cli.operation_commands import operation_command
from tableformat.context import TableContext
from tableformat.errors import DeleteFailedError, LeaseLostError, ValidationError
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64())])
TTL_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("ms"))])
TTL_OPTIONS = {"record-level.expire-time": "1d", "record-level.time-field": "ts"}


class CountingIO(LocalFileIO):
    def __init__(self, refuse: str = "") -> None:
        self.calls: list[list[str]] = []
        self.refuse = refuse

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self.calls.append(list(paths))
        ok = [p for p in paths if not (self.refuse and p.endswith(self.refuse))]
        deleted = super().delete_files(ok)
        if len(ok) != len(paths):
            raise DeleteFailedError("busy", deleted, [f"{self.refuse}: busy"])
        return deleted


def planted(root: Path, count: int) -> list[tuple[str, int]]:
    files = []
    for i in range(count):
        path = root / "part=0" / "bucket-0" / f"data-{i:04d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * (i + 1))
        files.append((f"part=0/bucket-0/data-{i:04d}.parquet", i + 1))
    return files


def test_deleter_batches_reports_only_what_went_and_removes_empty_dirs_non_recursively(tmp_path: Path) -> None:
    files = planted(tmp_path, 250)
    (tmp_path / "part=0" / "bucket-0" / "data-0003.parquet").unlink()  # already gone: never reported
    io = CountingIO()
    progress: list[tuple[int, int]] = []
    deleter = Deleter(io, TableLayout(str(tmp_path)), 2, progress=lambda d, t: progress.append((d, t)), total=250)
    gone = deleter.delete(files)
    assert sorted(len(c) for c in io.calls) == [125, 125]  # spread over two threads, at least 100 a batch
    assert set(gone) == {p for p, _ in files} - {"part=0/bucket-0/data-0003.parquet"}
    assert deleter.deleted_bytes == sum(size for _, size in files) - 4
    assert progress[-1] == (250, 250) and deleter.failures == []  # the one already gone counts as done
    assert deleter.absent == ["part=0/bucket-0/data-0003.parquet"]
    (tmp_path / "part=1" / "bucket-0").mkdir(parents=True)
    (tmp_path / "part=1" / "bucket-0" / "keep").write_bytes(b"k")
    removed = deleter.remove_empty_dirs(["part=0/bucket-0", "part=0", "part=1/bucket-0", "part=1"])
    assert removed == ["part=0/bucket-0", "part=0"]
    assert (tmp_path / "part=1" / "bucket-0" / "keep").exists()


def test_deleter_ordered_batches_and_recorded_failures(tmp_path: Path) -> None:
    files = planted(tmp_path, 70)
    io = CountingIO(refuse="data-0066.parquet")
    deleter = Deleter(io, TableLayout(str(tmp_path)), 4)
    deleter.delete(files, ordered=True)
    assert [len(c) for c in io.calls] == [ORDERED_BATCH, 70 - ORDERED_BATCH]
    assert [c[0].rsplit("/", 1)[-1] for c in io.calls] == ["data-0000.parquet", "data-0064.parquet"]
    assert deleter.failures == ["data-0066.parquet: busy"]
    assert isinstance(deleter.first_error, DeleteFailedError)
    assert len(deleter.deleted) == 69 and (tmp_path / "part=0" / "bucket-0" / "data-0066.parquet").exists()


class GuardRefusingIO(LocalFileIO):
    """Raises (not OSError: as the maintainer's lease guard does) for the batch holding ``refuse``."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        if any(p.endswith(self.refuse) for p in paths):
            raise LeaseLostError("the maintenance lease expired")
        return super().delete_files(paths)


def test_parallel_batches_that_went_through_are_recorded_when_another_raises(tmp_path: Path) -> None:
    files = planted(tmp_path, 300)
    deleter = Deleter(GuardRefusingIO(refuse="data-0000.parquet"), TableLayout(str(tmp_path)), 3)
    with recording() as ledger, pytest.raises(LeaseLostError):
        deleter.delete(files)  # three batches of 100 on three threads; the first is refused
    went = files[100:]
    assert deleter.deleted == [p for p, _ in went] and deleter.deleted_bytes == sum(s for _, s in went)
    assert ledger.deleted == went  # the ledger is what a stopped operation reports
    assert ledger.stopped("lease lost").to_json() == {
        "dry_run": False,
        "deleted_files": len(went),
        "deleted_paths": [p for p, _ in went],
        "deleted_bytes": sum(s for _, s in went),
        "removed_dirs": [],
        "notes": [],
        "backlog": 0,
        "run_id": None,
        "deferred_files": 0,
        "deferred_bytes": 0,
        "undo_until": None,
        "undo_until_ms": None,
        "requests": {},  # a run that raised reports no costs
        "counted_requests": {},
        "estimated_cost_usd": 0.0,
        "freed_storage_usd_per_month": 0.0,
        "stopped": "lease lost",
        "snapshot_ids": [],
    }
    assert sorted(p.name for p in (tmp_path / "part=0" / "bucket-0").iterdir()) == [
        f"data-{i:04d}.parquet" for i in range(100)
    ]


class RefusingIO(LocalFileIO):
    """Fails one file as stores do: ``'<store path>: <reason>'``, the reason itself containing ``': '``."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse

    def _failure(self, path: str) -> str:
        return f"{path}: [Errno 13] Permission denied: '{path}'"

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        refused = [p for p in paths if p.endswith(self.refuse)]
        deleted = super().delete_files([p for p in paths if p not in refused])
        if refused:
            raise DeleteFailedError("denied", deleted, [self._failure(p) for p in refused])
        return deleted

    def existing_files(self, paths: Sequence[str]) -> tuple[list[str], list[str]]:
        present, _ = super().existing_files([p for p in paths if not p.endswith(self.refuse)])
        return present, [self._failure(p) for p in paths if p.endswith(self.refuse)]


def test_a_failure_is_matched_to_its_file_when_the_root_and_the_reason_contain_colons(tmp_path: Path) -> None:
    root = tmp_path / "events: 2026"
    files = planted(root, 5)
    (root / "part=0" / "bucket-0" / "data-0001.parquet").unlink()
    io = RefusingIO("data-0003.parquet")
    deleter = Deleter(io, TableLayout(str(root)), 1)
    gone = deleter.delete(files)
    refused = "part=0/bucket-0/data-0003.parquet"
    assert sorted(gone) == [p for p, _ in files if p not in (refused, "part=0/bucket-0/data-0001.parquet")]
    assert deleter.absent == ["part=0/bucket-0/data-0001.parquet"]  # the refused file is a failure, not absent
    assert len(deleter.failures) == 1 and deleter.failures[0].startswith(f"{root}/{refused}: [Errno 13]")
    existence = Deleter(io, TableLayout(str(root)), 1).ask_existence(files)
    assert list(existence.unanswered) == [refused]
    assert existence.present == frozenset()  # every other file was deleted above


@dataclass(frozen=True, slots=True)
class SweepPlan:
    files: tuple[tuple[str, int], ...]


class SweepLeftovers(Operation[int, SweepPlan, OperationResult]):
    """A new operation as a contributor would add one: delete ``*.leftover`` files at the table root."""

    name = "sweep-leftovers"
    summary = "delete leftover files"
    after_commit = True
    parameters = (Parameter("max_files", "int", "at most N files", minimum=1),)

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> int:
        value = overrides.get("max_files") or 100
        if value < 1:
            raise ValidationError("max_files must be >= 1")
        return int(value)

    def plan(self, ctx: TableContext, config: int, now_ms: int) -> SweepPlan:
        infos = [i for i in ctx.io.list_dir(ctx.layout.root) if i.name.endswith(".leftover")]
        return SweepPlan(tuple(sorted((i.name, i.size) for i in infos))[:config])

    def preview(self, ctx: TableContext, plan: SweepPlan) -> OperationResult:
        return OperationResult(
            dry_run=True, deleted_paths=tuple(p for p, _ in plan.files), deleted_bytes=sum(s for _, s in plan.files)
        )

    def execute(self, ctx: TableContext, plan: SweepPlan, config: int, progress: Progress | None) -> OperationResult:
        deleter = Deleter(ctx.io, ctx.layout, 1, progress=progress)
        deleter.delete(plan.files)
        return OperationResult(deleted_paths=tuple(deleter.deleted), deleted_bytes=deleter.deleted_bytes)


@pytest.fixture
def swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Table:
    """A table with three leftovers and the new operation registered (one registry line)."""
    monkeypatch.setattr(registry, "OPERATIONS", (*registry.OPERATIONS, SweepLeftovers()))
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    for i in range(3):
        (tmp_path / "t" / f"x{i}.leftover").write_bytes(b"L" * (i + 1))
    return table


def test_every_registered_operation_has_a_cli_command_and_an_api_name() -> None:
    names = [op.name for op in registry.OPERATIONS]
    assert names == ["expire-partitions", "expire-records", "compact", "erase", "expire", "remove-orphans"]
    assert set(names) <= set(COMMANDS)
    expected = tuple(registry.operation(n) for n in ("expire-partitions", "expire-records", "expire"))
    assert registry.after_commit_operations() == expected
    with pytest.raises(
        ValidationError, match="^no maintenance operation 'vacuum'; registered: expire-partitions, expire-records, "
    ):
        registry.operation("vacuum")


def test_a_new_operation_is_one_registry_line_for_the_api_cli_and_after_commit(swept: Table) -> None:
    root = Path(swept.context.layout.root)
    assert swept.maintenance.names[-1] == "sweep-leftovers"
    dry = swept.maintenance.run("sweep-leftovers", dry_run=True, max_files=2)
    assert dry.deleted_paths == ("x0.leftover", "x1.leftover") and dry.deleted_bytes == 3
    assert sorted(p.name for p in root.glob("*.leftover")) == ["x0.leftover", "x1.leftover", "x2.leftover"]

    command = operation_command(registry.operation("sweep-leftovers"))
    out = CliRunner().invoke(command, [str(root), "--max-files", "1", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["deleted_paths"] == ["x0.leftover"]
    bad = CliRunner().invoke(command, [str(root), "--max-files", "0"])
    assert bad.exit_code == 2 and bad.output.strip().startswith("error: Invalid value for '--max-files'")

    results = after_commit.run_after_commit(swept.context)  # write-only is false: expire, then the new one
    assert [type(r).__name__ for r in results] == ["ExpireResult", "OperationResult"]
    assert results[1].deleted_paths == ("x1.leftover", "x2.leftover")
    assert list(root.glob("*.leftover")) == []


def test_run_operation_validates_before_reading(swept: Table) -> None:
    with pytest.raises(ValidationError, match="max_files must be >= 1"):
        run_operation(SweepLeftovers(), swept.context, {"max_files": -1})
    assert len(list(Path(swept.context.layout.root).glob("*.leftover"))) == 3


@pytest.mark.parametrize("name", ["expire-partitions", "expire-records", "compact", "expire", "remove-orphans"])
def test_every_operation_refuses_an_unknown_override_in_one_style(tmp_path: Path, name: str) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    declared = ", ".join(p.name for p in registry.operation(name).parameters)
    with pytest.raises(ValidationError) as refused:
        table.maintenance.run(name, bogus=1)
    assert str(refused.value) == f"{name} takes no bogus; it takes {declared}"


@pytest.mark.parametrize(
    ("name", "overrides", "message"),
    [
        ("expire", {"retain_min": 0}, "retain_min (snapshot.num-retained.min) must be >= 1 and <= 2147483647, got 0"),
        ("expire", {"retain_min": "3"}, "retain_min (snapshot.num-retained.min) must be an integer, got '3'"),
        ("expire", {"time_retained": "soon"}, "invalid duration"),
        ("expire", {"parallelism": 0}, "parallelism (file-operation.thread-num) must be >= 1"),
        ("remove-orphans", {"force": "yes"}, "remove-orphans: force must be True or False, got 'yes'"),
        ("remove-orphans", {"older_than": -1}, "older_than (orphan-files.older-than) must be >= 0 ms"),
        ("compact", {"target_file_size": "huge"}, "target-file-size"),
        ("expire-records", {"max_rewrite_size": -1}, "max_rewrite_size (record-level.expire.max-rewrite-size)"),
    ],
)
def test_overrides_are_typed_and_range_checked_as_their_option(
    tmp_path: Path, name: str, overrides: dict[str, Any], message: str
) -> None:
    table = Table.create(str(tmp_path / "t"), TTL_SCHEMA, options=TTL_OPTIONS)
    table.append(pa.table({"id": [1], "ts": [0]}, schema=TTL_SCHEMA))
    before = sorted(p for p in (tmp_path / "t").rglob("*"))
    with pytest.raises(ValidationError, match=re.escape(message)):
        table.maintenance.run(name, **overrides)
    assert sorted(p for p in (tmp_path / "t").rglob("*")) == before


def test_one_duration_and_size_spelling_for_every_front_door(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    table.append(pa.table({"id": [2]}, schema=SCHEMA))
    for spelling in ("0 ms", 0, dt.timedelta(0)):
        dry = table.maintenance.expire_snapshots(retain_min=1, time_retained=spelling, dry_run=True)
        assert dry.expired_snapshot_ids == (1,), spelling
    for size in ("1 kb", 1024):
        assert table.maintenance.compact(target_file_size=size, dry_run=True).dry_run


def test_the_table_shortcuts_are_deprecated_aliases_of_the_front_door(tmp_path: Path) -> None:
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    table.append(pa.table({"id": [1]}, schema=SCHEMA))
    with pytest.warns(DeprecationWarning, match=re.escape("use table.maintenance.expire_snapshots()")):
        result = table.expire_snapshots(dry_run=True)
    assert result == table.maintenance.expire_snapshots(dry_run=True)
    for name in ("expire_partitions", "expire_records", "compact", "remove_orphan_files", "check"):
        assert getattr(Table, name).__doc__ == f"Deprecated: use ``table.maintenance.{name}(...)``."


def test_wanted_is_the_one_answer_for_the_hook_the_scheduler_and_the_report(tmp_path: Path) -> None:
    plain = Table.create(str(tmp_path / "plain"), SCHEMA)
    ttl = Table.create(str(tmp_path / "ttl"), TTL_SCHEMA, options=TTL_OPTIONS)
    wanted = {t: [op.name for op in registry.OPERATIONS if op.wanted(t.context)] for t in (plain, ttl)}
    assert wanted[plain] == ["expire", "remove-orphans"]
    assert wanted[ttl] == ["expire-records", "expire", "remove-orphans"]
    selected = after_commit.own_operations(ttl.context, 0, after_commit=True)
    assert [op.name for op in selected] == ["expire-records", "expire"]


class BrokenSweep(SweepLeftovers):
    """An after-commit operation whose configuration is wrong on this table."""

    name = "broken-sweep"

    def configure(self, ctx: TableContext, overrides: Mapping[str, Any]) -> int:
        raise ValidationError("broken-sweep is misconfigured")


def test_a_failing_after_commit_operation_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "OPERATIONS", (BrokenSweep(), *registry.OPERATIONS, SweepLeftovers()))
    table = Table.create(str(tmp_path / "t"), SCHEMA)
    (tmp_path / "t" / "x.leftover").write_bytes(b"L")
    with pytest.raises(ValidationError, match="broken-sweep is misconfigured"):
        after_commit.run_after_commit(table.context)
    assert list((tmp_path / "t").glob("*.leftover")) == []  # the operation after the failing one still ran
    table.append(pa.table({"id": [1]}, schema=SCHEMA))  # the commit succeeds; the hook's failure is only logged
    assert table.to_arrow().num_rows == 1
