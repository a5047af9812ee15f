"""``tablefmt maintain`` over a warehouse on S3 (SeaweedFS): discovery by listing, leases by conditional create,
the same per-table results as on local disk, and an idle second pass."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from support.s3_requests import RequestLog
from support.warehouses import RETAIN, SCHEMA, FakeClock

from tableformat.cleanup.maintainer import Maintainer, MaintainSettings, TableLease
from tableformat.context import TableContext
from tableformat.errors import TargetNotFoundError
from tableformat.io.factory import open_location
from tableformat.io.fileio import FileIO
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


def test_a_first_pass_reads_each_manifest_once_and_checks_its_lease_with_one_head(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    """The keep-up count (the whole history on a first pass) and snapshot expiration share one read of every
    manifest list and manifest; snapshot files and hints are read fresh by each; a lease check is one HEAD."""
    url, options = s3_root
    retain = {**RETAIN, "snapshot.num-retained.min": "5", "snapshot.num-retained.max": "5"}
    table = Table.create(f"{url}/wh/db.db/t", SCHEMA, [], retain, options)
    for i in range(12):
        table.append(pa.table({"id": [i]}, schema=SCHEMA))
    log = RequestLog()

    def opener(location: str, storage_options: dict[str, Any]) -> tuple[FileIO, str]:
        file_io, root = open_location(location, storage_options)
        log.attach(file_io)
        return file_io, root

    clock = FakeClock()
    [report] = Maintainer(
        [f"{url}/wh"], MaintainSettings(storage_options=options), clock=clock, opener=opener
    ).run_once()
    assert report.ok, report.errors
    assert dict(report.operations)["expire"].to_json()["expired_snapshot_ids"] == [1, 2, 3, 4, 5, 6, 7]
    # the count reads the 12 snapshots, their 12 delta lists and 12 manifests; expiration the 9 base lists more
    manifest_reads = [call.key for call in log.of("GetObject") if "/manifest/" in call.key]
    assert len(manifest_reads) == len(set(manifest_reads)) == 33
    assert sum("/manifest-list-" in key for key in manifest_reads) == 21
    # snapshot files and hints are not kept: the count reads 12 files, expiration the 8 it judges and the latest,
    # the 8th (its end) twice, the hints (LATEST in the probe before and under the lease, and in its plan; EARLIEST)
    gets = Counter(call.key.rsplit("/", 2)[-2] for call in log.of("GetObject"))
    assert gets == {"manifest": 33, "snapshot": 12 + 10 + 4, ".tablefmt": 2, "schema": 1}
    assert log.counts() == {"GetObject": 62, "ListObjectsV2": 25, "HeadObject": 7, "PutObject": 7, "DeleteObjects": 5}
    # the lease: taken (lease-0), checked before each of the 6 changes (one HEAD of the next generation), released
    leases = Counter(call.operation for call in log.calls if "/.tablefmt/lease-" in call.key)
    assert leases == {"PutObject": 2, "HeadObject": 6}
    keep_up = report.keep_up
    assert keep_up is not None and round(keep_up.commits_per_hour * keep_up.window_hours) == 12
