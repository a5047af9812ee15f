"""tableformat.layout: where every file lives, and the name checks that keep metadata names inside the table root.

Pure functions: no files needed, except where a test shows that a refused name never reaches the disk.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from tableformat.errors import UnsafePathError, ValidationError
from tableformat.io.local import LocalFileIO
from tableformat.layout import (
    CONSUMER_PREFIX,
    MANIFEST_LIST_PREFIX,
    MANIFEST_PREFIX,
    SCHEMA_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    NameFactory,
    TableLayout,
    bucket_dir_name,
    check_file_name,
    check_tag_name,
    parse_id,
)
from tableformat.model.snapshot import Consumer
from tableformat.store import MetadataStore

# --- check_file_name --------------------------------------------------------------------------------------------
PLAIN_NAMES = [
    "manifest-0e1f0000-0000-4000-8000-000000000000-0",
    "data-0e1f0000-0000-4000-8000-000000000000-0.parquet",
    ".snapshot-7.0e1f0000.tmp",
    "a..b",  # dots inside a name are fine
    "...",
    "x y",
    "éé",
]
UNSAFE_NAMES = [
    "",
    ".",
    "..",
    "../x",
    "a/b",
    "/etc/passwd",
    "a\\b",
    "..\\..\\outside.parquet",
    "x\x00y",
    "s3://bucket/key",
    "c:x",
    "file:x",
    "a/",
]


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_file_names_pass_unchanged(name: str) -> None:
    assert check_file_name(name) == name


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_names_with_a_directory_part_a_scheme_or_nul_are_refused(name: str) -> None:
    with pytest.raises(UnsafePathError) as raised:
        check_file_name(name, what="consumer id")
    message = str(raised.value)
    assert message.startswith(f"refusing consumer id {name!r} from metadata")
    assert isinstance(raised.value, ValidationError)


# --- check_tag_name ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["v1", "release-1.0", "a_b", "A", "1a", "2024.01.01", "x" * 200])
def test_tag_names_of_letters_digits_and_separators_pass(name: str) -> None:
    assert check_tag_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", "123", "0", "-a", ".a", "_a", "a/b", "../a", "a b", "a:b", "ä", "x" * 201, "a\x00", "a\tb", "\nv1"],
)
def test_other_tag_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafePathError, match=r"invalid tag name .*letters, digits"):
        check_tag_name(name)


def test_a_tag_name_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(UnsafePathError):
        check_tag_name("v1\n")


# --- paths ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("root", ["/data/t", "/data/t/", "bucket/prefix/t"])
def test_every_metadata_path(root: str) -> None:
    layout = TableLayout(root)
    base = root.rstrip("/")
    assert (layout.snapshot_dir, layout.schema_dir, layout.tag_dir, layout.consumer_dir) == (
        f"{base}/snapshot",
        f"{base}/schema",
        f"{base}/tag",
        f"{base}/consumer",
    )
    assert TableLayout.manifest_rel("manifest-x-0") == "manifest/manifest-x-0"
    assert layout.expire_journal_file("p1") == f"{base}/snapshot/.expire-journal-p1"
    assert layout.changelog_file("3") == f"{base}/changelog/changelog-3"
    assert layout.branch("b1").root == f"{base}/branch/branch-b1"
    assert layout.snapshot_file(12) == f"{base}/snapshot/{SNAPSHOT_PREFIX}12"
    assert layout.hint_file("LATEST") == f"{base}/snapshot/LATEST"
    assert layout.schema_file(0) == f"{base}/schema/{SCHEMA_PREFIX}0"
    assert layout.manifest_file("manifest-list-x-1") == f"{base}/manifest/manifest-list-x-1"
    assert layout.tag_file("v1") == f"{base}/tag/{TAG_PREFIX}v1"
    assert layout.consumer_file("etl") == f"{base}/consumer/{CONSUMER_PREFIX}etl"
    assert layout.join("part=a", "bucket-0") == f"{base}/part=a/bucket-0"
    assert layout.join("/part=a/", "", "bucket-0/", "f") == f"{base}/part=a/bucket-0/f"
    assert layout.join("a/b", "c") == f"{base}/a/b/c"


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/b", "", ".."])
def test_paths_refuse_unsafe_names(name: str) -> None:
    layout = TableLayout("/data/t")
    for build in (layout.manifest_file, layout.consumer_file, layout.tag_file, layout.branch):
        with pytest.raises(UnsafePathError):
            build(name)


def test_branch_is_a_layout_under_branch_dir() -> None:
    layout = TableLayout("/data/t/")
    branch = layout.branch("b1")
    assert branch == TableLayout("/data/t/branch/branch-b1")
    assert branch.snapshot_file(3) == "/data/t/branch/branch-b1/snapshot/snapshot-3"
    assert branch.tag_file("v1") == "/data/t/branch/branch-b1/tag/tag-v1"
    assert branch.branch("b2").root == "/data/t/branch/branch-b1/branch/branch-b2"
    assert layout.relative(branch.schema_file(0)) == "branch/branch-b1/schema/schema-0"


def test_relative_is_the_path_below_the_root() -> None:
    for root in ("/data/t", "/data/t/"):
        layout = TableLayout(root)
        assert layout.relative("/data/t/snapshot/snapshot-1") == "snapshot/snapshot-1"
        assert layout.relative(layout.manifest_file("m")) == "manifest/m"
        assert layout.relative("/data/t/part=a/bucket-0/data-1.parquet") == "part=a/bucket-0/data-1.parquet"


@pytest.mark.parametrize(
    "path",
    [
        "/data/t",  # the root itself is not a file inside it
        "/data/t-sibling/part=a/bucket-0/data-1.parquet",  # a root sharing the name as a prefix
        "/data/t2/snapshot/snapshot-1",
        "/data/snapshot/snapshot-1",
        "/etc/passwd",
        "data/t/snapshot/snapshot-1",  # relative, not under the absolute root
        "s3://bucket/data/t/snapshot/snapshot-1",
        "",
    ],
)
def test_relative_refuses_paths_outside_the_root(path: str) -> None:
    with pytest.raises(UnsafePathError, match="is not inside the table root '/data/t'"):
        TableLayout("/data/t").relative(path)


def test_relative_refuses_paths_that_climb_out_of_the_root() -> None:
    with pytest.raises(UnsafePathError):
        TableLayout("/data/t").relative("/data/t/../outside.parquet")


# --- ids and names ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "prefix", "expected"),
    [
        ("snapshot-1", SNAPSHOT_PREFIX, 1),
        ("snapshot-1234567890123", SNAPSHOT_PREFIX, 1234567890123),
        ("schema-0", SCHEMA_PREFIX, 0),
        ("snapshot-", SNAPSHOT_PREFIX, None),
        ("snapshot-x", SNAPSHOT_PREFIX, None),
        ("snapshot--1", SNAPSHOT_PREFIX, None),
        ("snapshot-+1", SNAPSHOT_PREFIX, None),
        ("snapshot-1.tmp", SNAPSHOT_PREFIX, None),
        ("snapshot-1 ", SNAPSHOT_PREFIX, None),
        (".snapshot-1.0e1f.tmp", SNAPSHOT_PREFIX, None),
        ("LATEST", SNAPSHOT_PREFIX, None),
        ("schema-1", SNAPSHOT_PREFIX, None),
        ("Snapshot-1", SNAPSHOT_PREFIX, None),
    ],
)
def test_parse_id(name: str, prefix: str, expected: int | None) -> None:
    assert parse_id(name, prefix) == expected


def test_bucket_directories() -> None:
    assert [bucket_dir_name(b) for b in (0, 7, -1, -2)] == ["bucket-0", "bucket-7", "bucket--1", "bucket-postpone"]


def test_name_factory_names_are_unique_per_factory_and_per_call() -> None:
    first, second = NameFactory(), NameFactory()
    names = [first.next(MANIFEST_PREFIX) for _ in range(3)] + [first.next("data-", ".parquet")]
    uuid_part = names[0][len(MANIFEST_PREFIX) : -len("-0")]
    assert names == [
        f"manifest-{uuid_part}-0",
        f"manifest-{uuid_part}-1",
        f"manifest-{uuid_part}-2",
        f"data-{uuid_part}-3.parquet",
    ]
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", uuid_part)
    other = second.next(MANIFEST_LIST_PREFIX)
    assert other.startswith(MANIFEST_LIST_PREFIX) and uuid_part not in other
    assert all(check_file_name(n) == n for n in [*names, other])


def test_name_factory_is_thread_safe() -> None:
    factory = NameFactory()
    found: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        mine = [factory.next("data-") for _ in range(500)]
        with lock:
            found.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == len(set(found)) == 4000
    assert sorted(int(n.rsplit("-", 1)[1]) for n in found) == list(range(4000))


def test_refused_names_never_reach_the_disk(tmp_path: Path) -> None:
    """A table's store builds every path through the layout: an unsafe consumer id writes nothing anywhere."""
    root = tmp_path / "t"
    store = MetadataStore(LocalFileIO(), TableLayout(str(root)))
    for evil in ("../x", "../../y", "/tmp/z"):
        with pytest.raises(UnsafePathError):
            store.write_consumer(Consumer(consumer_id=evil, next_snapshot=1))
    assert list(tmp_path.rglob("*")) == []
