"""check's verifier over its memory budget: listed sizes and references spilled to disk, verified bucket by bucket."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tableformat.cleanup.check_references import Verifier
from tableformat.errors import MaintenanceError

LISTED = {f"part=0/bucket-0/data-{n}.parquet": n for n in range(50)} | {"manifest/manifest-a": 7}
REFERENCES = [
    ("part=0/bucket-0/data-3.parquet", "data", 3, "snapshot 1"),
    ("part=0/bucket-0/data-4.parquet", "data", 40, "snapshot 1"),  # recorded 40, listed 4
    ("part=0/bucket-0/data-3.parquet", "data", 3, "tag t"),  # a second root naming it: counted once
    ("manifest/manifest-a", "index-manifest", None, "snapshot 1"),  # no recorded size ...
    ("manifest/manifest-a", "index-manifest", 8, "snapshot 2"),  # ... until one records another
    ("part=0/bucket-0/data-99.parquet", "data", 99, "snapshot 2"),  # not listed
]


def verified(in_memory: int) -> Verifier:
    verifier = Verifier(in_memory)
    verifier.list_files(list(LISTED.items())[:20])
    verifier.list_files(list(LISTED.items())[20:])
    for reference in REFERENCES:
        verifier.add(*reference)
    verifier.resolve_unlisted(lambda rels: [None for _ in rels])
    return verifier


def outcome(verifier: Verifier) -> tuple[object, ...]:
    problems = [(p.path, p.expected_size, p.actual_size, p.referenced_by) for p in verifier.mismatched]
    missing = [(p.path, p.referenced_by) for p in verifier.missing]
    return verifier.found, verifier.found_bytes, verifier.referenced, problems, missing


@pytest.mark.parametrize("in_memory", [1, 7, 51])
def test_a_spilled_verification_finds_what_one_in_memory_finds(in_memory: int) -> None:
    spilled = verified(in_memory)
    assert outcome(spilled) == outcome(verified(1 << 30))
    assert outcome(spilled) == (
        3,
        3 + 4 + 7,
        4,
        [("manifest/manifest-a", 8, 7, "snapshot 2"), ("part=0/bucket-0/data-4.parquet", 40, 4, "snapshot 1")],
        [("part=0/bucket-0/data-99.parquet", "snapshot 2")],
    )


def test_an_unreadable_spill_file_is_an_error_not_a_verdict() -> None:
    verifier = Verifier(1)
    verifier.list_files(LISTED.items())
    for reference in REFERENCES:
        verifier.add(*reference)
    spill = verifier._spill
    assert spill is not None
    directory = Path(spill.directory)
    sizes = [path for path in sorted(directory.iterdir()) if path.name.startswith("sizes-") and path.stat().st_size]
    damaged = sizes[0]
    with damaged.open("r+b") as out:
        out.truncate(damaged.stat().st_size - 1)
    with pytest.raises(MaintenanceError, match="spill file"):
        verifier.resolve_unlisted(lambda rels: [None for _ in rels])
    assert not os.path.exists(directory)  # removed all the same
