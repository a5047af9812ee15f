"""What a run costs in requests and saves in storage (docs/cost.md): the metered FileIO counts each call as the S3
requests it costs (on local disk as on S3), dry runs add an estimate of what carrying the plan out sends, the price
table (``maintenance.cost.*``) prices both, and ``tablefmt maintain --metrics-file`` and ``tablefmt report`` show the
figures. On S3 (SeaweedFS) the counted requests of a dry run are exactly the requests the store received."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from support.operations import expire_snapshots, remove_orphan_files
from support.s3_requests import RequestLog
from support.s3_tables import appended
from support.tables import with_stored_options
from support.warehouses import make_warehouse

from tableformat.cli.main import cli
from tableformat.errors import ValidationError
from tableformat.io.factory import open_location
from tableformat.io.metered import MeteredFileIO, RequestTally
from tableformat.options import TableOptions
from tableformat.pricing import GB, PriceTable
from tableformat.units import dollars

DAY_MS = 86_400_000
EXPIRE_FLAGS = ("--retain-min", "4", "--retain-max", "4", "--time-retained", "0 ms", "--limit", "100")
SETTINGS: dict[str, Any] = {"retain_min": 4, "retain_max": 4, "time_retained": 0, "limit": 100}
BILLED = {
    "GetObject": "GET",
    "HeadObject": "HEAD",
    "HeadBucket": "HEAD",
    "ListObjectsV2": "LIST",
    "PutObject": "PUT",
    "DeleteObjects": "DELETE",
}
"""The S3 API calls a run makes, by the kind the metered FileIO counts them as."""


def logged(log: RequestLog) -> dict[str, int]:
    return dict(Counter(BILLED[call.operation] for call in log.calls))


def metered(root: Path) -> tuple[MeteredFileIO, RequestTally]:
    io, _ = open_location(str(root), {})
    tally = RequestTally()
    return MeteredFileIO(io, tally), tally


def test_local_calls_count_as_the_requests_s3_would_bill(tmp_path: Path) -> None:
    io, tally = metered(tmp_path)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(2500):
        (many / f"f-{i:04d}").write_bytes(b"x")
    assert len(io.list_dir(str(many))) == 2500
    assert len(io.list_dir(str(tmp_path / "missing"))) == 0
    assert tally.counts() == {"LIST": 4}  # 3 pages of 1,000 keys; an empty listing is still a request
    io.write_bytes(str(tmp_path / "a"), b"1")
    assert io.write_if_absent(str(tmp_path / "a"), b"2") is False  # refused: the key is read back
    assert io.read_bytes(str(tmp_path / "a")) == b"1"
    assert io.exists(str(tmp_path / "a")) and not io.exists(str(tmp_path / "b"))
    assert tally.counts() == {"LIST": 5, "GET": 2, "HEAD": 2, "PUT": 2}  # a missing key: HEAD, then a LIST
    # existence settled like S3FileIO: a listing of a directory with four or more, a HEAD each elsewhere
    (tmp_path / "few").mkdir()
    few = [str(tmp_path / "few" / f"g-{i}") for i in range(2)]
    for path in few:
        Path(path).write_bytes(b"y")
    gone = io.delete_files([str(many / f"f-{i:04d}") for i in range(5)] + few)
    assert len(gone) == 7
    assert tally.counts() == {"LIST": 6, "GET": 2, "HEAD": 4, "PUT": 2, "DELETE": 1}
    io.delete_listed([str(many / f"f-{i:04d}") for i in range(5, 2500)])  # known to exist: no question first
    assert tally.counts() == {"LIST": 6, "GET": 2, "HEAD": 4, "PUT": 2, "DELETE": 4}  # 2,495 keys: 3 requests
    assert list(many.iterdir()) == []


def test_the_price_table_is_s3_standard_unless_the_table_overrides_it() -> None:
    default = PriceTable.of(TableOptions({}))
    requests = {"LIST": 13, "GET": 40, "HEAD": 2, "PUT": 4, "DELETE": 3}
    # (13 + 4) x $0.005 + (40 + 2) x $0.0004 per 1,000; deletes free
    assert default.requests_usd(requests) == Decimal("0.0001018")
    assert default.storage_usd_per_month(10 * GB) == Decimal("0.23")
    options = {
        "maintenance.cost.put-per-1000": "1",
        "maintenance.cost.list-per-1000": "10",
        "maintenance.cost.get-per-1000": "$100",
        "maintenance.cost.delete-per-1000": "1000",
        "maintenance.cost.storage-gb-month": "1024",
    }
    priced = PriceTable.of(TableOptions(options))
    assert priced.requests_usd(requests) == Decimal("7.334")  # (4 + 130 + 4,200 + 3,000) / 1,000
    assert priced.storage_usd_per_month(3 * 2**20) == Decimal(3)  # 3 MiB at $1,024 per GB: $3
    with pytest.raises(ValidationError, match="maintenance.cost.get-per-1000"):
        PriceTable.of(TableOptions({"maintenance.cost.get-per-1000": "-1"}))


def test_a_dry_run_reports_its_requests_the_rest_of_the_run_and_their_price(tmp_path: Path) -> None:
    table = appended((str(tmp_path / "t"), {}), 12, drop_after=6)
    dry = expire_snapshots(table.context, dry_run=True, **SETTINGS)
    assert dry.expired_snapshot_ids == tuple(range(1, 10)) and dry.deleted_data_files == 6
    counted, requests = dict(dry.counted_requests), dict(dry.requests)
    assert set(counted) <= {"LIST", "GET", "HEAD"}  # planning reads and lists only
    files = [path for path in dry.deleted_paths if not path.startswith("snapshot/")]
    assert len(files) == 6 + dry.deleted_manifests + dry.deleted_manifest_lists
    assert {path.rsplit("/", 1)[0] for path in files} == {"part=0/bucket-0", "manifest"}
    # the rest: journal PUT and DELETE, EARLIEST PUT, snapshot files then the others in one DeleteObjects each,
    # tags, branches and changelogs listed again, existence of the files (a listing of each of the two directories:
    # four or more files in each), the claim (PUT, LIST, DELETE), the audit record and the ledger's pruning listing
    assert requests == {
        "PUT": 2 + 1 + 1,
        "DELETE": 1 + 1 + 1 + 1,
        "LIST": counted["LIST"] + 3 + 2 + 1 + 1,
        "GET": counted["GET"],
        "HEAD": counted["HEAD"],
    }
    prices = PriceTable.of(table.context.options)
    assert dry.requests_usd == float(round(prices.requests_usd(requests), 8))
    assert dry.freed_usd_per_month == float(round(Decimal("0.023") * dry.deleted_bytes / GB, 8))
    real = expire_snapshots(table.context, **SETTINGS)
    assert real.requests == real.counted_requests  # a real run reports what it sent
    assert sorted(real.deleted_paths) == sorted(dry.deleted_paths)
    # the estimate was the run but one GET: the plan's first kept snapshot, read again once the run holds its claim
    assert dict(real.requests) == {**requests, "GET": requests["GET"] + 1}


def test_a_price_override_changes_the_estimate_exactly(tmp_path: Path) -> None:
    table = appended((str(tmp_path / "t"), {}), 8, drop_after=3)
    before = expire_snapshots(table.context, dry_run=True, **SETTINGS)
    table = with_stored_options(
        table,
        **{
            "maintenance.cost.list-per-1000": "1000",
            "maintenance.cost.get-per-1000": "0",
            "maintenance.cost.put-per-1000": "0",
            "maintenance.cost.storage-gb-month": "1024",
        },
    )
    after = expire_snapshots(table.context, dry_run=True, **SETTINGS)
    assert after.deleted_paths == before.deleted_paths and after.deleted_bytes > 0
    assert after.requests_usd == dict(after.requests)["LIST"]  # $1 a LIST, nothing else charged
    assert after.freed_usd_per_month == float(round(Decimal(after.deleted_bytes) / 2**20, 8))  # $1 a MiB-month
    document = json.loads(
        CliRunner().invoke(cli, ["expire", table.location, "--dry-run", "--json", *EXPIRE_FLAGS]).stdout
    )
    assert document["deleted_paths"] == list(after.deleted_paths)
    assert document["estimated_cost_usd"] == document["requests"]["LIST"]
    assert document["freed_storage_usd_per_month"] == after.freed_usd_per_month


def test_maintain_metrics_show_the_requests_and_cost_of_the_pass(tmp_path: Path) -> None:
    make_warehouse(tmp_path / "wh", {"sales": ["orders"]}, commits=5)
    metrics = tmp_path / "tablefmt.prom"
    result = CliRunner().invoke(cli, ["maintain", "--json", str(tmp_path / "wh"), "--metrics-file", str(metrics)])
    assert result.exit_code == 0, result.output
    (report,) = [json.loads(line) for line in result.stdout.splitlines()]
    operations = report["operations"].values()
    kinds: Counter[str] = Counter()
    for operation in operations:
        assert operation["requests"] == operation["counted_requests"]  # real runs: counted
        kinds.update(operation["requests"])
    assert kinds["LIST"] > 0 and kinds["GET"] > 0 and kinds["PUT"] > 0 and kinds["DELETE"] > 0
    samples = dict(line.rsplit(" ", 1) for line in metrics.read_text().splitlines() if not line.startswith("#"))
    requests = {
        key.split('kind="')[1].rstrip('"}'): int(value)
        for key, value in samples.items()
        if key.startswith("tablefmt_maintain_requests{")
    }
    assert requests == dict(kinds)
    cost = round(sum(operation["estimated_cost_usd"] for operation in operations), 8)
    assert float(samples['tablefmt_maintain_request_cost_usd{table="sales.orders"}']) == cost
    freed = round(sum(operation["freed_storage_usd_per_month"] for operation in operations), 8)
    assert freed > 0
    assert float(samples['tablefmt_maintain_freed_storage_usd_per_month{table="sales.orders"}']) == freed


def test_the_report_shows_what_each_rule_would_save_a_month(tmp_path: Path) -> None:
    table = appended((str(tmp_path / "t"), {}), 8, drop_after=3)
    table = with_stored_options(
        table, **{"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2", "snapshot.time-retained": "1 ms"}
    )
    result = CliRunner().invoke(cli, ["report", table.location, "--json"])
    assert result.exit_code == 0, result.output
    (report,) = [json.loads(line) for line in result.stdout.splitlines()]
    rules = {rule["operation"]: rule for rule in report["rules"]}
    expire = rules["expire"]
    assert expire["frees_bytes"] > 0
    assert expire["frees_storage_usd_per_month"] == float(round(Decimal("0.023") * expire["frees_bytes"] / GB, 8))
    assert expire["run_cost_usd"] == expire["dry_run"]["estimated_cost_usd"] > 0
    total = round(sum(rule["frees_storage_usd_per_month"] for rule in rules.values()), 8)
    assert report["reclaimable_storage_usd_per_month"] == total
    text = CliRunner().invoke(cli, ["report", table.location]).stdout
    assert f"reclaimable now ({dollars(total)}/month), " in text


@pytest.mark.s3
def test_a_dry_run_of_expiration_on_s3_counts_exactly_the_requests_sent(
    s3_root: tuple[str, dict[str, Any]],
) -> None:
    table = appended(s3_root, 24, drop_after=12)
    table.create_tag("keep", 16)
    log = RequestLog().attach(table.context.io)
    dry = expire_snapshots(table.context, dry_run=True, **SETTINGS)
    assert dry.expired_snapshot_ids == tuple(range(1, 22)) and dry.deleted_data_files == 12
    assert dict(dry.counted_requests) == logged(log)
    log.clear()
    again = expire_snapshots(table.context, dry_run=True, parallelism=4, **SETTINGS)  # reads in parallel
    assert dict(again.counted_requests) == logged(log)


@pytest.mark.s3
def test_orphan_cleanup_on_s3_counts_exactly_the_requests_sent(s3_root: tuple[str, dict[str, Any]]) -> None:
    table = appended(s3_root, 6)
    io, root = table.context.io, table.context.layout.root
    strays = [f"part={i % 2}/bucket-0/data-{uuid.uuid4()}-0.parquet" for i in range(30)]
    io.fs.pipe({f"{root}/{rel}": b"x" for rel in strays})
    later = int(time.time() * 1000) + 2 * DAY_MS
    log = RequestLog().attach(io)
    dry = remove_orphan_files(table.context, dry_run=True, now_ms=later)
    assert sorted(dry.deleted_paths) == sorted(strays)
    assert dict(dry.counted_requests) == logged(log)
    assert dict(dry.requests)["DELETE"] == 1 + 1  # the orphans in one DeleteObjects, then the claim
    log.clear()
    real = remove_orphan_files(table.context, now_ms=later)
    assert sorted(real.deleted_paths) == sorted(strays)
    assert dict(real.counted_requests) == logged(log)  # the run's claim and audit record included
