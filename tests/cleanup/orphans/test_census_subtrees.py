"""On object stores the census lists the root, then each directory the format uses below it by one recursive
listing: it must find exactly what a listing per directory finds, and list nothing it would not enter."""

from __future__ import annotations

from typing import Any

import pytest
from support.s3_requests import RequestLog

from tableformat.cleanup.orphans.census import DirKind, Listing, walk_table
from tableformat.io.factory import open_location
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.layout import TableLayout
from tableformat.parallel import executor

pytestmark = pytest.mark.s3

KEYS = [
    "schema/schema-0",
    "snapshot/snapshot-1",
    "snapshot/LATEST",
    "snapshot/.expire-journal-x",
    "manifest/manifest-list-a-0",
    "manifest/manifest-b-0",
    "manifest/.manifest-b-0.123e4567-e89b-12d3-a456-426614174000.tmp",
    "manifest/deeper/manifest-c-0",  # an unknown directory inside manifest/: never entered
    "dt=1/hr=0/bucket-0/data-a-0.parquet",
    "dt=1/hr=0/bucket-0/data-a-0.parquet.index",
    "dt=1/hr=0/bucket-0/notes.txt",
    "dt=1/hr=0/bucket-0/sub/data-z-0.parquet",  # below a bucket: never entered
    "dt=1/hr=1/bucket-1/data-b-0.parquet",
    "dt=1/hr=1/bucket-postpone/data-c-0.parquet",
    "dt=1/other/data-d-0.parquet",  # not the second partition key: never entered
    "dt=1/stray.parquet",
    "dt=1//bucket-0/data-e-0.parquet",  # an empty path component
    "dt=2/",  # a directory marker object, nothing below it
    "dt=3/hr=0/",  # a marker below a partition
    "dt=zz/schema/schema-0",  # the root of another table where a partition was expected: listed, never entered
    "dt=zz/snapshot/snapshot-1",
    "dt=zz/hr=0/bucket-0/data-f-0.parquet",
    "branch/branch-b/snapshot/snapshot-2",
    "branch/branch-b/schema/schema-0",
    "branch/branch-b/manifest/manifest-g-0",  # branches have no manifest directory of their own
    "branch/not-a-branch/snapshot/snapshot-1",
    "branch/README",
    "tag/tag-t",
    "unknown/a/b/c",  # an unknown directory at the root: never listed at all
    "README.md",
]


class PerDirectory(ForwardingFileIO):
    """The same store, listed one directory at a time (the walk's way on local disk)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.lists_subtrees = False


def walked(io: Any, root: str) -> list[tuple[DirKind, str, int, str, tuple[tuple[str, int, bool], ...]]]:
    with executor(4, "test-census") as pool:
        listings: list[Listing] = list(walk_table(io, TableLayout(root), ("dt", "hr"), pool, 4))
    return sorted(
        (item.kind, item.rel, item.level, item.metadata_dir, tuple((e.path, e.size, e.is_dir) for e in item.entries))
        for item in listings
    )


def test_subtree_listings_find_what_per_directory_listings_find(s3_root: tuple[str, dict[str, Any]]) -> None:
    io, root = open_location(*s3_root)
    io.fs.pipe({f"{root}/{key}": b"" if key.endswith("/") else b"x" for key in KEYS})
    assert io.lists_subtrees
    log = RequestLog().attach(io)
    flat = walked(io, root)
    base = len(root.split("/", 1)[1]) + 1
    calls = [(call.key[base:], call.delimiter, call.start_after[base:]) for call in log.of("ListObjectsV2")]
    log.clear()
    by_directory = walked(PerDirectory(io), root)
    assert flat == by_directory
    kinds = {(kind, rel) for kind, rel, *_ in flat}
    assert (DirKind.NESTED_TABLE, "dt=zz") in kinds and (DirKind.BUCKET, "dt=1/hr=1/bucket-postpone") in kinds
    assert not [rel for _, rel, *_ in flat if rel.startswith(("unknown", "dt=zz/", "dt=1/other"))]
    # one listing of the root, then the directories the format uses below it flat: in key order, in at most four
    # (the window) runs of neighbours, one recursive listing of each run's key range (Prefix: what its first and
    # last keys have in common); never unknown/ (after the last run) nor README.md (before the first)
    assert sorted(calls) == sorted(
        [("", "/", ""), ("", "", "branch/"), ("dt=", "", "dt=3/"), ("", "", "manifest/"), ("", "", "snapshot/")]
    )
    assert len(log.of("ListObjectsV2")) > len(calls)  # a listing per directory costs more requests


def test_a_thousand_partitions_cost_ten_listings_not_one_each(s3_root: tuple[str, dict[str, Any]]) -> None:
    """1,000 first-level partitions: the root in two pages (1,003 entries), then eight runs (the window) of about
    125 partitions, one recursive listing each; per directory it took 1,005 (and a walk level by level 2,005)."""
    io, root = open_location(*s3_root)
    keys = ["schema/schema-0", "snapshot/LATEST", "manifest/manifest-a-0"]
    keys += [f"part={p:04d}/bucket-0/data-{p}-0.parquet" for p in range(1000)]
    io.fs.pipe({f"{root}/{key}": b"x" for key in keys})
    log = RequestLog().attach(io)
    with executor(8, "test-census") as pool:
        listings = list(walk_table(io, TableLayout(root), ("part",), pool, 8))
    assert log.counts() == {"ListObjectsV2": 10}
    assert [call.delimiter for call in log.of("ListObjectsV2")][:2] == ["/", "/"]  # the root's two pages
    found = sorted(info.path[len(root) + 1 :] for listing in listings for info in listing.files)
    assert found == sorted(keys)
    assert sum(1 for listing in listings if listing.kind == DirKind.PARTITION) == 1000
