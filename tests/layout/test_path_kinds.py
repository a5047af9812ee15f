"""The file-name grammar a journal's paths are checked against lives in layout (is_path_of_kind)."""

from __future__ import annotations

import pytest

from tableformat.layout import is_path_of_kind

CASES = [
    ("snapshot/snapshot-12", "snapshot", True),
    ("snapshot/snapshot-x", "snapshot", False),
    ("snapshot/EARLIEST", "snapshot", False),
    ("manifest/manifest-list-abc-0", "manifest", True),
    ("manifest/index-manifest-abc-0", "manifest", False),
    ("manifest/index-manifest-abc-0", "index manifest", True),
    ("changelog/changelog-3", "changelog", True),
    ("changelog/changelog-3x", "changelog", False),
    ("tag/tag-v1", "tag", True),
    ("tag/tag-12", "tag", False),
    ("tag/tag-", "tag", False),
    ("index/index-abc-0", "index", True),
    ("statistics/stat-abc-0", "statistics", True),
    ("statistics/index-abc-0", "statistics", False),
    ("consumer/consumer-c1", "consumer", True),
    ("dt=1/bucket-0/data-abc-0.parquet", "data", True),
    ("bucket-0/data-abc-0.parquet", "data", True),
    ("dt=1/data-abc-0.parquet", "data", False),
    ("dt=1/bucket-0", "dir", True),
    ("dt=1", "dir", True),
    ("snapshot", "dir", False),
    ("snapshot/snapshot-1", "nothing", False),
]


@pytest.mark.parametrize(("path", "kind", "expected"), CASES, ids=[f"{k}:{p}" for p, k, _ in CASES])
def test_path_kinds(path: str, kind: str, expected: bool) -> None:
    assert is_path_of_kind(path.split("/"), kind) is expected
