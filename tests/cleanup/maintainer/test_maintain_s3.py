"""``tablefmt maintain`` over a warehouse on S3 (SeaweedFS): discovery by listing, leases by conditional create,
the same per-table results as on local disk, and an idle second pass."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from support.warehouses import RETAIN, SCHEMA, FakeClock

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings, TableLease
from tableformat.context import TableContext
from tableformat.errors import TargetNotFoundError
from tableformat.table import Table

pytestmark = pytest.mark.s3


@pytest.mark.slow
def test_a_warehouse_on_s3_is_discovered_leased_and_maintained(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    for name in ("sales.db/orders", "web.db/clicks"):
        table = Table.create(f"{url}/{name}", SCHEMA, [], dict(RETAIN), options)
        for i in range(5):
            table.append(pa.table({"id": [i]}, schema=SCHEMA))
    clock = FakeClock()
    settings = MaintainSettings(storage_options=options)
    maintainer = Maintainer([url], settings, clock=clock)
    first = maintainer.run_once()
    assert [(r.table, r.ok) for r in first] == [("sales.orders", True), ("web.clicks", True)]
    assert [dict(r.operations)["expire"].to_json()["expired_snapshot_ids"] for r in first] == [[1, 2, 3]] * 2
    assert [r.skipped for r in maintainer.run_once()] == ["nothing due"] * 2

    # a live lease of another maintainer on S3 keeps this one out until it expires
    ctx = TableContext.load(f"{url}/web.db/clicks", options)
    other = TableLease(ctx.store, "other", 600_000, clock, host="elsewhere")
    assert other.acquire()
    Table.open(f"{url}/web.db/clicks", options).append(pa.table({"id": [9]}, schema=SCHEMA))  # expire due there
    held = maintainer.run_once()
    assert [r.skipped for r in held] == ["nothing due", "leased by elsewhere (pid " + str(other.held.pid) + ")"]  # type: ignore[union-attr]
    clock.advance(3_600_000)  # expire is due again on both tables; the lease ran out meanwhile
    taken = maintainer.run_once()
    assert [r.skipped for r in taken] == ["", ""] and all(r.ok for r in taken)
    assert ctx.store.lease_generations()[-1] >= 2  # taken over, then released: new generations, never overwritten


def test_a_prefix_with_no_objects_does_not_exist(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    Table.create(f"{url}/wh/sales.db/orders", SCHEMA, [], dict(RETAIN), options)
    settings = MaintainSettings(storage_options=options)
    assert [t.name for t in Maintainer([f"{url}/wh"], settings).discover()] == ["sales.orders"]
    for missing in (f"{url}/wh/typo.db", f"{url}/wh/sales.db/ordres", f"{url}/whh"):
        with pytest.raises(TargetNotFoundError) as raised:
            Maintainer([f"{url}/wh", missing], settings).discover()
        assert str(raised.value) == f"{missing}: does not exist"
