"""``tablefmt maintain --once`` on a table whose rewrites lose their snapshot to expiration while they read it:
another process replaces the files expire-records (or compact) is about to read and expires every snapshot but
the latest. The rewrite re-plans and the pass succeeds (exit 0); when every re-plan loses too, the operation is
reported as a lost race, due again soon, never as a failed table. The interference runs at the first data file
the pass opens, through the FileIO every location opens with (the CLI runs in this process). Times are 2020
(expired) and 2099 (kept), so the maintainer's real clock judges them as the pinned read clock does."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from support.faults import InterferingFileIO
from support.ttl_tables import TIME_TYPES, ttl_table

from tableformat.cleanup.maintainer.keep_up import count_ingest
from tableformat.cli.main import cli
from tableformat.io import factory
from tableformat.io.local import LocalFileIO
from tableformat.layout import TableLayout
from tableformat.store import MetadataStore
from tableformat.table import Table

KIND = TIME_TYPES[4]  # TIMESTAMP(6)
OLD = dt.datetime(2020, 1, 1)
NEW = dt.datetime(2099, 1, 1)
REPLANS = 4


def _append(table: Table, ids: list[int], times: list[dt.datetime]) -> None:
    table.append(pa.table({"id": ids, "ts": times, "p": [0] * len(ids)}, schema=table.arrow_schema))


def _live(location: str) -> set[str]:
    table = Table.open(location)
    return {e.file.file_name for e in table.plan_files(table.latest_snapshot())}


def _names(paths: list[str]) -> set[str]:
    return {p.rsplit("/", 1)[-1] for p in paths}


def _maintain(location: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(cli, ["maintain", "--once", "--json", location])
    lines = result.stdout.splitlines()
    return result.exit_code, json.loads(lines[0]) if lines else {}, result.stderr


def _interfere(monkeypatch: pytest.MonkeyPatch, action: object, times: int) -> InterferingFileIO:
    """Every local location opens with one FileIO that runs ``action`` before the first ``times`` data-file opens."""
    hooked = InterferingFileIO(LocalFileIO(), "data-", action, times=times)
    monkeypatch.setattr(factory, "LocalFileIO", lambda: hooked)
    return hooked


def test_maintain_once_succeeds_when_expire_records_loses_its_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = ttl_table(tmp_path / "t", KIND, **{"compaction.min.file-num": "2"})
    _append(table, [0, 1], [OLD, NEW])  # partly expired: expire-records rewrites it
    _append(table, [2], [NEW])
    _append(table, [3], [NEW])
    other = Table.open(table.location)  # opened before the patch: its FileIO does not interfere
    seen: dict[str, set[str]] = {}

    def race() -> None:  # another process compacts everything, appends a partly expired file, keeps 1 snapshot
        merged = other.maintenance.compact()
        _append(other, [4, 5], [OLD, NEW])
        other.maintenance.expire_snapshots(retain_min=1, retain_max=1)
        seen.update(live=_live(other.location), merged=_names(list(merged.written_files)))

    hooked = _interfere(monkeypatch, race, times=1)
    code, report, err = _maintain(table.location)

    assert (code, err) == (0, "") and hooked.ran == 1
    assert report["ok"] is True and report["error"] is None and report["lost_races"] == {}
    records = report["operations"]["expire-records"]
    assert _names(records["rewritten_paths"]) == seen["live"] - seen["merged"]  # the appended file, re-planned
    assert records["expired_records"] == 1 and len(records["written_paths"]) == 1
    assert any(note.startswith("re-planned 1 time") for note in records["notes"])
    compacted = report["operations"]["compact"]  # then compaction merges the other's file with the rewritten one
    assert _names(compacted["compacted_paths"]) == seen["merged"] | _names(records["written_paths"])
    assert _live(table.location) == _names(compacted["written_paths"])
    final = Table.open(table.location)
    assert sorted(r["id"] for r in final.to_arrow(include_expired=True).to_pylist()) == [1, 2, 3, 5]
    assert final.maintenance.check().ok


def test_maintain_once_reports_a_rewrite_that_loses_every_race_as_a_lost_race(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = ttl_table(tmp_path / "t", KIND, **{"compaction.min.file-num": "2"})
    _append(table, [0, 1], [OLD, NEW])
    _append(table, [2, 3], [OLD, NEW])
    other = Table.open(table.location)
    kept = [1, 3]

    def race() -> None:  # before every data-file open: compact everything, two partly expired files, keep 1
        other.maintenance.compact()
        for _ in range(2):
            row = 10 * len(kept)
            kept.append(row + 1)
            _append(other, [row, row + 1], [OLD, NEW])
        other.maintenance.expire_snapshots(retain_min=1, retain_max=1)

    hooked = _interfere(monkeypatch, race, times=2 * (REPLANS + 1))
    code, report, err = _maintain(table.location)

    assert (code, err) == (0, "") and hooked.ran == 2 * (REPLANS + 1)  # both rewrites lost every attempt
    assert report["ok"] is True and report["error"] is None
    assert sorted(report["lost_races"]) == ["compact", "expire-records"]
    assert all("was expired while it was being read" in m for m in report["lost_races"].values())
    assert list(report["operations"]) == ["expire", "remove-orphans"]  # the others ran
    state = MetadataStore(LocalFileIO(), TableLayout(table.location)).read_maintain_state()
    assert state is not None and state.last_success_ms > 0
    for name in ("compact", "expire-records"):
        entry = state.operations[name]
        assert entry.next_due_ms - entry.last_run_ms == 60_000 and entry.failures == 0  # backlog-retry, no failure
    monkeypatch.undo()
    final = Table.open(table.location)
    assert sorted(r["id"] for r in final.to_arrow().to_pylist()) == sorted(kept)
    assert final.maintenance.check().ok


def test_maintain_once_counts_ingest_past_a_snapshot_expired_while_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = ttl_table(tmp_path / "t", KIND)
    for row in range(3):
        _append(table, [row], [NEW])
    other = Table.open(table.location)

    def race() -> None:  # the snapshots the pass counts are replaced and expired while it runs
        _append(other, [3], [NEW])
        other.maintenance.expire_snapshots(retain_min=1, retain_max=1)

    hooked = InterferingFileIO(LocalFileIO(), "manifest-list-", race)  # the first list the pass reads
    monkeypatch.setattr(factory, "LocalFileIO", lambda: hooked)
    code, report, err = _maintain(table.location)

    assert (code, err) == (0, "") and hooked.ran == 1
    assert report["ok"] is True and report["error"] is None
    # The keep-up count runs beside the operations and shares their reads of lists: how many of snapshots 1-3 it
    # read before the race depends on which thread read a list first; it never fails the pass. The exact skip is
    # test_keep_up_count_skips_the_snapshots_expired_while_it_reads.
    assert report["keep_up"]["commits_per_hour"] <= 3
    assert sorted(report["operations"]) == ["expire", "expire-records", "remove-orphans"]


def test_keep_up_count_skips_the_snapshots_expired_while_it_reads(tmp_path: Path) -> None:
    """The count reads the snapshot files, then their delta lists oldest first: an expiration of all of them at its
    first list read leaves nothing to count, and no error."""
    table = ttl_table(tmp_path / "t", KIND)
    for row in range(3):
        _append(table, [row], [NEW])
    other = Table.open(table.location)
    latest = table.latest_snapshot()
    assert latest is not None

    def race() -> None:
        _append(other, [3], [NEW])
        other.maintenance.expire_snapshots(retain_min=1, retain_max=1)

    hooked = InterferingFileIO(LocalFileIO(), "manifest-list-", race)
    store = MetadataStore(hooked, TableLayout(table.location))
    now = latest.time_millis + 1
    assert count_ingest(store, 0, latest.id, now, 86_400_000, workers=1) == ([], latest.id)
    assert hooked.ran == 1
    assert [s.id for s in other.snapshots()] == [latest.id + 1]
