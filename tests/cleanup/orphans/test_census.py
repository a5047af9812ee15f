"""The census classifies data file names exactly as the table's name rules say (fast path == regular expression)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tableformat.cleanup.orphans.census import DATA_FORMATS, DirKind, FileClass, NameRules

PIECES = [
    "data-",
    "dat",
    "a",
    "-",
    ".",
    "..",
    "/",
    "\n",
    "parquet",
    "orc",
    "avro",
    "index",
    "tmp",
    "x",
    "0",
    ".parquet",
]


def by_regex(prefix: str, name: str) -> bool:
    return re.match(rf"^{re.escape(prefix)}[^/]+\.({'|'.join(DATA_FORMATS)})$", name) is not None


@settings(max_examples=3000, deadline=None)
@given(prefix=st.sampled_from(["data-", "d", "data.", "x-"]), parts=st.lists(st.sampled_from(PIECES), max_size=6))
def test_data_names_are_classified_as_the_rule_says(prefix: str, parts: list[str]) -> None:
    name = "".join(parts)
    kind = NameRules(prefix).classify(DirKind.BUCKET, name)
    assert (kind is FileClass.DATA) == by_regex(prefix, name), name


def test_examples() -> None:
    rules = NameRules("data-")
    assert rules.classify(DirKind.BUCKET, "data-1b2c-0.parquet") is FileClass.DATA
    assert rules.classify(DirKind.BUCKET, "data-.parquet") is FileClass.UNKNOWN
    assert rules.classify(DirKind.BUCKET, "data-x.parquet.index") is FileClass.DATA_INDEX
    assert rules.classify(DirKind.BUCKET, "data-x.csv") is FileClass.UNKNOWN
    assert rules.classify(DirKind.MANIFEST, "data-x.parquet") is FileClass.UNKNOWN


def test_changelog_and_sidecar_names() -> None:
    rules = NameRules("data-", "changelog-")
    bucket = DirKind.BUCKET
    assert rules.classify(bucket, "changelog-1b2c-0.parquet") is FileClass.CHANGELOG_DATA
    assert rules.classify(bucket, "changelog-1b2c-0.orc") is FileClass.CHANGELOG_DATA
    assert rules.classify(bucket, "changelog-.parquet") is FileClass.UNKNOWN
    assert rules.classify(bucket, "changelog-x.json") is FileClass.UNKNOWN
    assert rules.classify(DirKind.MANIFEST, "changelog-x.parquet") is FileClass.UNKNOWN
    assert rules.classify(DirKind.PARTITION, "changelog-x.parquet") is FileClass.UNKNOWN
    assert rules.classify(bucket, "changelog-x-0.parquet.index") is FileClass.DATA_INDEX
    assert rules.classify(bucket, "data-x-0.parquet-1.index") is FileClass.DATA_INDEX  # a rewritten file index
    assert rules.classify(bucket, "data-x-0.parquet-.index") is FileClass.UNKNOWN
    assert rules.classify(bucket, "other-x-0.parquet.index") is FileClass.UNKNOWN
    custom = NameRules("d-", "cl-")
    assert custom.classify(bucket, "cl-x-0.parquet") is FileClass.CHANGELOG_DATA
    assert custom.classify(bucket, "changelog-x-0.parquet") is FileClass.UNKNOWN
    manifest = DirKind.MANIFEST
    assert rules.classify(manifest, "manifest-list-1b2c-changelog") is FileClass.MANIFEST_LIST
    assert rules.classify(manifest, "manifest-1b2c-changelog-0") is FileClass.MANIFEST


def test_candidate_set_keeps_a_name_listed_in_several_directories() -> None:
    from tableformat.cleanup.orphans import CandidateSet

    candidates = CandidateSet()
    candidates.add_unstated("part=0/bucket-0", ["data-a.parquet", "data-b.parquet"], FileClass.DATA)
    candidates.add("part=1/bucket-0", "data-a.parquet", 5, 20_000_000_000, FileClass.DATA)
    candidates.add_unstated("part=2/bucket-0", ["data-a.parquet"], FileClass.DATA)
    assert len(candidates) == 4
    assert sorted(candidates.items()) == [
        ("part=0/bucket-0", "data-a.parquet", 0, 0),
        ("part=0/bucket-0", "data-b.parquet", 0, 0),
        ("part=1/bucket-0", "data-a.parquet", 5, 20_000_000_000),
        ("part=2/bucket-0", "data-a.parquet", 0, 0),
    ]
    candidates.set_stats("part=2/bucket-0", "data-a.parquet", 7, 30_000_000_000)
    candidates.set_stats("part=0/bucket-0", "data-b.parquet", 9, 40_000_000_000)
    assert sorted(candidates.items()) == [
        ("part=0/bucket-0", "data-a.parquet", 0, 0),
        ("part=0/bucket-0", "data-b.parquet", 9, 40_000_000_000),
        ("part=1/bucket-0", "data-a.parquet", 5, 20_000_000_000),
        ("part=2/bucket-0", "data-a.parquet", 7, 30_000_000_000),
    ]
    candidates.discard("data-a.parquet")  # referenced: wherever it lies, it is kept
    assert list(candidates.items()) == [("part=0/bucket-0", "data-b.parquet", 9, 40_000_000_000)]
    assert candidates.kinds == {FileClass.DATA}


def test_index_file_names() -> None:
    rules = NameRules("data-", "changelog-")
    uid = "3f337624-2830-4dea-981d-183789a1289f"
    assert rules.classify(DirKind.INDEX, f"index-{uid}-0") is FileClass.INDEX
    assert rules.classify(DirKind.INDEX, f"btree-global-index-{uid}.index") is FileClass.INDEX
    assert rules.classify(DirKind.BUCKET, f"index-{uid}-3") is FileClass.INDEX  # index-file-in-data-file-dir
    assert rules.classify(DirKind.BUCKET, f"btree-global-index-{uid}.index") is FileClass.UNKNOWN
    assert rules.classify(DirKind.INDEX, "index-abc-0") is FileClass.UNKNOWN
    assert rules.classify(DirKind.INDEX, f"index-{uid}") is FileClass.UNKNOWN
    assert rules.classify(DirKind.INDEX, f"index-manifest-{uid}-0") is FileClass.UNKNOWN
    assert rules.classify(DirKind.MANIFEST, f"index-{uid}-0") is FileClass.UNKNOWN
    assert rules.classify(DirKind.MANIFEST, f"index-manifest-{uid}") is FileClass.INDEX_MANIFEST
    assert rules.classify(DirKind.PARTITION, f"index-{uid}-0") is FileClass.UNKNOWN
