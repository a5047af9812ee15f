"""A fault at every write and delete of an expiration and of an orphan cleanup (transient before and after the
call takes effect, and a crash: nothing reaches the store afterwards), then a clean re-run: no table file is lost
or leaked, and the ledger is consistent: every record reads, no file is recorded deleted twice or recorded without
being gone, a file gone without a row is covered by a run that says it did not complete (``failed`` or
``crashed``), and a crashed run is noticed by the re-run."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.faults import FaultyFileIO, InjectedFault, faulty_context
from support.tables import DAY_S, FAR_FUTURE_MS, age_files, files_under, id_part_rows

from tableformat.context import TableContext
from tableformat.maintenance import TableMaintenance
from tableformat.table import Table


def remove_orphan_files(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).remove_orphan_files(**kwargs)


def expire_snapshots(ctx: TableContext, **kwargs: Any) -> Any:
    return TableMaintenance(ctx).expire_snapshots(**kwargs)


VARIANTS = [("before", False), ("after", False), ("before", True)]
"""(mode, sticky): a transient fault before or after the call takes effect, and a crash."""


def _expire(ctx: TableContext) -> Any:
    return expire_snapshots(ctx, retain_min=1, time_retained=0, parallelism=1, now_ms=FAR_FUTURE_MS)


def _orphans(ctx: TableContext) -> Any:
    return remove_orphan_files(ctx, older_than=dt.timedelta(days=1), parallelism=1)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six commits (two overwrites: data files to expire), a tag that expires, and uncommitted (orphan) files."""
    root = tmp_path_factory.mktemp("audit-sweep") / "t"
    table = Table.create(str(root), id_part_rows(0, 1).schema, ["part"], {"write-only": "true"})
    for i in range(4):
        table.append(id_part_rows(i * 10, 4, (0, 1)))
    table.overwrite(id_part_rows(100, 2, (0,)), {"part": 0})
    table.overwrite(id_part_rows(200, 2, (1,)), {"part": 1})
    table.create_tag("short", 3, time_retained=dt.timedelta(minutes=1))
    table.write_files(id_part_rows(300, 4, (0, 1)))  # never committed
    age_files(root, 10 * DAY_S)
    return root


def _records(root: Path) -> list[tuple[str, str, list[str]]]:
    """(run id, outcome, deleted paths) of every record, read back through the Table API."""
    table = Table.open(str(root))
    return [
        (s.run.run_id, s.run.outcome, [f.path for f in table.audit_files(s.run.run_id) if f.state == "deleted"])
        for s in table.audit()
    ]


def _sweep(base: Path, scratch: Path, run: Callable[[TableContext], Any]) -> list[str]:
    reference = scratch / "reference"
    shutil.copytree(base, reference)
    before = files_under(base)
    run(Table.open(str(reference)).context)
    expected = files_under(reference)
    counter = FaultyFileIO(Table.open(str(reference)).context.io)
    shutil.rmtree(reference)
    shutil.copytree(base, reference)
    run(faulty_context(Table.open(str(reference)).context, counter))
    assert ("write_if_absent", "audit") in {(op, p.rsplit("/", 2)[-2]) for op, p in counter.calls}
    failures = []
    for point in range(1, len(counter.calls) + 1):
        for mode, sticky in VARIANTS:
            root = scratch / f"case-{point}-{mode}-{sticky}"
            shutil.copytree(base, root)
            label = f"point {point} {counter.calls[point - 1][0]} {counter.calls[point - 1][1].rsplit('/', 1)[-1]} "
            label += f"{mode}{' crash' if sticky else ''}"
            try:
                _check_case(root, run, point, mode, sticky, before, expected)
            except AssertionError as exc:
                failures.append(f"{label}: {exc}")
            finally:
                shutil.rmtree(root, ignore_errors=True)
    return failures


def _check_case(
    root: Path,
    run: Callable[[TableContext], Any],
    point: int,
    mode: str,
    sticky: bool,
    before: set[str],
    expected: set[str],
) -> None:
    ctx = Table.open(str(root)).context
    faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
    try:
        run(faulty_context(ctx, faulty))
    except InjectedFault:
        pass
    except Exception as exc:
        assert any(isinstance(e, InjectedFault) for e in (exc, exc.__cause__, exc.__context__)), repr(exc)
    run(Table.open(str(root)).context)  # the clean re-run
    on_disk = {p for p in files_under(root) if not p.startswith(".tablefmt/claim-")}
    assert on_disk == expected, f"extra {sorted(on_disk - expected)}, missing {sorted(expected - on_disk)}"
    records = _records(root)
    recorded = [path for _, _, paths in records for path in paths]
    gone = before - expected
    assert len(recorded) == len(set(recorded)), "a file recorded deleted twice"
    assert set(recorded) <= gone, f"recorded but not gone: {sorted(set(recorded) - gone)}"
    outcomes = [outcome for _, outcome, _ in records]
    assert set(outcomes) <= {"completed", "failed", "crashed", "unfinished"}
    if set(recorded) != gone:
        says_so = {"failed", "crashed", "unfinished"} & set(outcomes)
        assert says_so, f"unrecorded without saying so: {sorted(gone - set(recorded))}"


@pytest.mark.slow
@pytest.mark.parametrize("run", [_expire, _orphans], ids=["expire", "remove-orphans"])
def test_the_ledger_survives_a_fault_at_every_call(base: Path, tmp_path: Path, run: Callable[..., Any]) -> None:
    failures = _sweep(base, tmp_path, run)
    assert not failures, f"{len(failures)} case(s) failed:\n" + "\n".join(failures[:20])


def test_a_crash_before_recording_is_noticed_by_the_next_run(base: Path, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ctx = Table.open(str(root)).context
    probe = tmp_path / "probe"
    shutil.copytree(base, probe)
    counter = FaultyFileIO(Table.open(str(probe)).context.io)
    _expire(faulty_context(Table.open(str(probe)).context, counter))
    crash_at = next(i for i, (op, path) in enumerate(counter.calls, 1) if op == "delete_files" and "bucket-" in path)
    faulty = FaultyFileIO(ctx.io, crash_at, "before", sticky=True)  # type: ignore[arg-type]
    with pytest.raises(Exception):  # noqa: B017 - the crash, as the run sees it
        _expire(faulty_context(ctx, faulty))
    [(run_id, outcome, paths)] = _records(root)  # no record: its claim, left behind, says it did not finish
    assert outcome == "unfinished" and paths == [] and not list((root / ".tablefmt" / "audit").glob("*"))
    _expire(Table.open(str(root)).context)
    records = _records(root)
    outcomes = {r: outcome for r, outcome, _ in records}
    assert outcomes.pop(run_id) == "crashed" and list(outcomes.values()) == ["completed"]  # both started at one time
    [crashed] = [s for s in Table.open(str(root)).audit() if s.run.run_id == run_id]
    assert crashed.run.operation == "expire" and crashed.crash_noted
    assert crashed.run.finished_ms is None and "noticed at" in crashed.run.detail
