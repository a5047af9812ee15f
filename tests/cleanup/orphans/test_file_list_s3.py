"""Orphan cleanup and check from an S3 Inventory report on a real S3 server (SeaweedFS), the report written by the
test in AWS's documented layout (CSV.gz, CSV and Parquet data files): the same orphans as the listing run, and no
listing of the table's directories (exact request counts at the botocore call)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from support.inventories import write_s3_inventory
from support.operations import check, remove_orphan_files
from support.s3_requests import RequestLog
from support.s3_tables import appended

from tableformat.errors import FileListError
from tableformat.table import Table

pytestmark = pytest.mark.s3

DAY_MS = 86_400_000
ROOT_LISTINGS = ["snapshot/", "tag/", "changelog/", "branch/"]
"""What a run still lists, with a delimiter, after its references were read and again to close over new roots:
the roots (snapshots, tags, branches, long-lived changelogs) cannot come from a list made before the run."""


class InventoryScenario:
    """A table with orphans of every kind, an unknown file, a file of another table in the bucket, and an S3
    Inventory of the whole bucket prefix (the table and its neighbour) made after them."""

    def __init__(self, s3_root: tuple[str, dict[str, Any]], file_format: str) -> None:
        self.table = appended(s3_root, 6)
        self.io, self.root = self.table.context.io, self.table.context.layout.root
        self.bucket = self.root.split("/", 1)[0]
        self.strays = [f"part={i % 2}/bucket-0/data-{uuid.uuid4()}-0.parquet" for i in range(12)]
        self.strays += [f"manifest/manifest-{uuid.uuid4()}-0" for _ in range(3)]
        self.strays += [f"statistics/stat-{uuid.uuid4()}-0"]
        self.neighbour = f"{self.root}-other/part=0/bucket-0/data-{uuid.uuid4()}-0.parquet"
        self.io.fs.pipe({f"{self.root}/{rel}": b"x" for rel in [*self.strays, "part=0/bucket-0/notes.txt"]})
        self.io.write_bytes(self.neighbour, b"y")
        self.created_ms = int(time.time() * 1000) + 1000
        infos = [*self.io.walk_files(self.root), *self.io.walk_files(f"{self.root}-other")]
        rows = [(info.path.split("/", 1)[1], info.size, info.mtime_ms) for info in infos]
        self.manifest = write_s3_inventory(
            lambda key, data: self.io.write_bytes(f"{self.bucket}/{key}", data),
            self.bucket,
            self.bucket,
            rows,
            file_format=file_format,
            created_ms=self.created_ms,
            prefix=f"inventory-{uuid.uuid4().hex[:8]}",
        )
        self.source = f"s3://{self.bucket}/{self.manifest}"
        self.future = int(time.time() * 1000) + 2 * DAY_MS  # every object is young: judge them from the future


@pytest.mark.parametrize("file_format", ["CSV", "CSV-plain", "Parquet"])
def test_an_s3_inventory_run_lists_no_table_directory_and_deletes_what_the_listing_run_deletes(
    s3_root: tuple[str, dict[str, Any]], file_format: str
) -> None:
    scenario = InventoryScenario(s3_root, file_format)
    ctx = scenario.table.context
    by_listing = remove_orphan_files(ctx, dry_run=True, now_ms=scenario.future)
    assert sorted(by_listing.deleted_paths) == sorted(scenario.strays)
    log = RequestLog().attach(scenario.io)
    result = remove_orphan_files(ctx, now_ms=scenario.future, file_list=scenario.source)
    assert result.deleted_paths == by_listing.deleted_paths and not result.failed
    assert result.skipped_unknown == by_listing.skipped_unknown == ("part=0/bucket-0/notes.txt",)
    assert result.cutoff_ms == scenario.created_ms  # capped: now + 1 d would be later
    assert any(note.startswith("cutoff capped at the S3 Inventory's creation time") for note in result.notes)
    base = scenario.root.split("/", 1)[1]
    listed = sorted(call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if call.delimiter == "/")
    assert listed == sorted([*2 * ROOT_LISTINGS, ".tablefmt/"])  # no census: not the root, not one data directory
    # besides, before and after the roots, what the undo window keeps (docs/undo.md): never an orphan
    held = [call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if not call.delimiter]
    assert held == 2 * [".tablefmt/undo/"]
    # the manifest and its data files, once each; one HEAD per unreferenced candidate (its mtime, its existence)
    inventory_reads = [call.key for call in log.of("GetObject") if "/inventory-" in f"/{call.key}"]
    assert len(inventory_reads) == 3 and log.read_twice() == []
    assert log.counts()["HeadObject"] == len(scenario.strays)
    assert [call.keys for call in log.of("DeleteObjects")] == [len(scenario.strays), 1]  # the orphans; the claim
    assert scenario.io.exists(scenario.neighbour)  # outside the table root: never considered
    assert scenario.table.to_arrow().num_rows == 48


def test_check_from_an_s3_inventory_lists_no_table_directory(s3_root: tuple[str, dict[str, Any]]) -> None:
    scenario = InventoryScenario(s3_root, "CSV")
    ctx = scenario.table.context
    by_listing = check(ctx, older_than="1h", now_ms=scenario.future)
    log = RequestLog().attach(scenario.io)
    result = check(ctx, older_than="1h", now_ms=scenario.future, file_list=scenario.source)
    assert result.ok and result.orphan_paths == by_listing.orphan_paths == tuple(sorted(scenario.strays))
    assert result.referenced_files == by_listing.referenced_files
    assert result.referenced_bytes == by_listing.referenced_bytes
    base = scenario.root.split("/", 1)[1]
    held = [call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if call.delimiter != "/"]
    assert held == 2 * [".tablefmt/undo/"]  # what the undo window keeps, around the roots (docs/undo.md)
    listed = {call.key[len(base) + 1 :] for call in log.of("ListObjectsV2") if call.delimiter == "/"}
    assert listed <= {*ROOT_LISTINGS, "consumer/", "schema/", "snapshot/.expire-journal-"}  # roots, no census


def test_a_stale_inventory_entry_is_no_error(s3_root: tuple[str, dict[str, Any]]) -> None:
    scenario = InventoryScenario(s3_root, "Parquet")
    gone = scenario.strays[0]
    scenario.io.delete_files([f"{scenario.root}/{gone}"])
    result = remove_orphan_files(scenario.table.context, now_ms=scenario.future, file_list=scenario.source)
    assert sorted(result.deleted_paths) == sorted(scenario.strays[1:]) and result.failed == ()
    assert "1 file(s) the S3 Inventory names were already gone (not orphans)" in result.notes


def test_an_inventory_of_another_bucket_is_refused_and_nothing_is_deleted(s3_root: tuple[str, dict[str, Any]]) -> None:
    scenario = InventoryScenario(s3_root, "CSV")
    other = write_s3_inventory(
        lambda key, data: scenario.io.write_bytes(f"{scenario.bucket}/{key}", data),
        "another-bucket",
        scenario.bucket,
        [(f"{scenario.root.split('/', 1)[1]}/{rel}", 1, 0) for rel in scenario.strays],
        file_format="CSV",
        created_ms=scenario.created_ms,
        prefix=f"inventory-{uuid.uuid4().hex[:8]}",
    )
    with pytest.raises(FileListError, match="is an inventory of bucket 'another-bucket'"):
        remove_orphan_files(scenario.table.context, now_ms=scenario.future, file_list=f"s3://{scenario.bucket}/{other}")
    assert all(scenario.io.exists(f"{scenario.root}/{rel}") for rel in scenario.strays)
    assert Table.open(*s3_root[:1], storage_options=s3_root[1]).to_arrow().num_rows == 48
