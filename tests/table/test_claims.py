"""Claims (tableformat/claims.py) on their own: who keeps whom off the table, how a claim lapses, renews and stops
its holder, and that tag deletion takes one. A fake clock decides every time rule."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from support.tables import files_under

from tableformat import claims
from tableformat.claims import CLAIM_DURATION_MS, CLOCK_SKEW_MS, MAINTENANCE, ROLLBACK, TableClaim
from tableformat.errors import MaintenanceError, TableBusyError
from tableformat.model.maintain import Claim
from tableformat.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
T0 = 1_800_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def table(tmp_path: Path) -> Table:
    created = Table.create(str(tmp_path / "t"), SCHEMA, ["part"], options={"write-only": "true"})
    for i in range(4):
        created.append(pa.table({"id": [i], "part": [0]}, schema=SCHEMA))
    created.create_tag("v2", 2)
    return created


def claim(table: Table, kind: str, clock: Clock) -> TableClaim:
    return TableClaim(table.context.store, kind, "test", clock=clock)


def claims_on_disk(table: Table) -> list[str]:
    return sorted(f for f in files_under(table.location) if f.startswith(".tablefmt/"))


def test_maintenance_runs_share_the_table_and_a_rollback_has_it_alone(table: Table) -> None:
    clock = Clock()
    first, second = claim(table, MAINTENANCE, clock), claim(table, MAINTENANCE, clock)
    first.acquire()
    second.acquire()  # maintenance runs go on together
    with pytest.raises(TableBusyError, match=r"maintenance \(test\) by .* holds the table"):
        claim(table, ROLLBACK, clock).acquire()
    assert len(claims_on_disk(table)) == 2  # the refused rollback removed its own claim
    first.release()
    second.release()
    assert claims_on_disk(table) == []
    rolling = claim(table, ROLLBACK, clock)
    rolling.acquire()
    with pytest.raises(TableBusyError, match="a rollback by"):
        claim(table, MAINTENANCE, clock).acquire()
    with pytest.raises(TableBusyError, match="a rollback by"):
        claim(table, ROLLBACK, clock).acquire()
    rolling.release()


def test_a_rollback_refused_while_maintenance_holds_the_table_changes_nothing(table: Table) -> None:
    holder = TableClaim(table.context.store, MAINTENANCE, "expire")
    holder.acquire()
    before = files_under(table.location)
    with pytest.raises(TableBusyError, match=r"rollback refused: maintenance \(expire\)"):
        table.rollback_to(1)
    assert files_under(table.location) == before
    holder.release()
    assert table.rollback_to(1).removed_snapshots == (2, 3, 4)


def test_tag_delete_waits_for_no_rollback(table: Table) -> None:
    holder = TableClaim(table.context.store, ROLLBACK, "rollback")
    holder.acquire()
    with pytest.raises(TableBusyError):
        table.delete_tag("v2")
    assert [t.name for t in table.tags()] == ["v2"]
    holder.release()
    table.delete_tag("v2")
    assert table.tags() == [] and claims_on_disk(table) == []


def test_a_crashed_runs_claim_counts_until_it_lapses_then_is_deleted(table: Table) -> None:
    clock = Clock()
    store = table.context.store
    crashed = Claim(
        kind=MAINTENANCE,
        owner="deadbeef",
        operation="expire",
        host="elsewhere",
        pid=os.getpid() + 1,
        acquired_ms=T0,
        expires_ms=T0 + CLAIM_DURATION_MS,
    )
    store.write_claim(crashed)
    clock.now = T0 + CLAIM_DURATION_MS + CLOCK_SKEW_MS - 1  # another host's clock may be behind
    with pytest.raises(TableBusyError, match="elsewhere"):
        claim(table, ROLLBACK, clock).acquire()
    clock.now += 1
    rolling = claim(table, ROLLBACK, clock)
    rolling.acquire()
    assert claims_on_disk(table) == [f".tablefmt/claim-rollback-{rolling.owner}"]  # the lapsed one is gone
    rolling.release()


def test_a_claim_left_behind_by_this_process_no_longer_counts(table: Table) -> None:
    clock = Clock()
    left = claim(table, MAINTENANCE, clock)
    left.acquire()
    left.held = None  # its release never ran (a crash in a test, a failed delete)
    claims._HELD.discard(left.owner)
    rolling = claim(table, ROLLBACK, clock)
    rolling.acquire()
    assert claims_on_disk(table) == [f".tablefmt/claim-rollback-{rolling.owner}"]
    rolling.release()


def test_a_holder_renews_at_half_time_and_stops_once_its_claim_lapsed(table: Table) -> None:
    clock = Clock()
    holder = claim(table, MAINTENANCE, clock)
    holder.acquire()
    clock.now = T0 + CLAIM_DURATION_MS // 2
    holder.check()  # renewed: counts for a whole duration from now
    assert table.context.store.read_claim(MAINTENANCE, holder.owner).expires_ms == clock.now + CLAIM_DURATION_MS
    clock.now += CLAIM_DURATION_MS
    with pytest.raises(MaintenanceError, match="lapsed"):
        holder.check()
    holder.release()
