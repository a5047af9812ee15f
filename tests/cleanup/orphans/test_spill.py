"""Candidates over the memory budget are spilled to disk and matched against the references bucket by bucket: the
survivors are exactly the candidates no discard named, and a spill file that cannot be read back deletes nothing."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from pathlib import Path

import pytest
from support.faults import InterferingFileIO
from support.operations import remove_orphan_files
from support.tables import DAY_S, ID_PART_SCHEMA, age_files, context_with_io, files_under, id_part_rows

from tableformat import MaintenanceError, Table
from tableformat.cleanup.orphans.candidates import CandidateSet
from tableformat.cleanup.orphans.census import FileClass
from tableformat.io.local import LocalFileIO

DATA = FileClass.DATA


def data_name(number: int) -> str:
    return f"data-{number:08d}-0.parquet"


def survivors(candidates: CandidateSet) -> list[tuple[str, str, int, int]]:
    return sorted(candidates.items())


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where spill directories are made in this test (tempfile's default directory, watched)."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_survivors_are_exactly_the_undiscarded_candidates(spill_dir: Path) -> None:
    candidates = CandidateSet(in_memory=3)
    candidates.add_unstated("p=0/bucket-0", [data_name(n) for n in range(10)], DATA)
    for n in range(10, 20):
        candidates.add("p=1/bucket-0", data_name(n), n, 1_000 + n, DATA)
    candidates.add("manifest", "manifest-a-0", 7, 70, FileClass.MANIFEST)
    assert candidates.spilled
    assert len(list(spill_dir.iterdir())) == 1
    for n in (*range(0, 20, 3), 99):  # 99 was never a candidate
        candidates.discard(data_name(n))
    candidates.discard("manifest-a-0")
    expected = [("p=0/bucket-0", data_name(n), 0, 0) for n in range(10) if n % 3]
    expected += [("p=1/bucket-0", data_name(n), n, 1_000 + n) for n in range(10, 20) if n % 3]
    assert survivors(candidates) == sorted(expected)
    assert survivors(candidates) == sorted(expected)  # items() can be read again
    assert len(candidates) >= len(expected)
    candidates.close()
    assert list(spill_dir.iterdir()) == []


def test_same_result_in_memory_and_spilled(spill_dir: Path) -> None:
    results = []
    for in_memory in (1_000, 1, 2, 7):
        candidates = CandidateSet(in_memory=in_memory)
        for part in range(3):
            candidates.add_unstated(f"p={part}/bucket-0", [data_name(part * 100 + n) for n in range(25)], DATA)
        for n in range(0, 300, 4):
            candidates.discard(data_name(n))
        results.append(survivors(candidates))
        assert candidates.spilled is (in_memory < 75)
    assert len(results[0]) == 75 - 3 * 7  # multiples of 4 in 0..24, 100..124, 200..224
    assert results[1:] == [results[0]] * 3


def test_a_name_in_two_directories_is_two_candidates_and_one_discard_removes_both(spill_dir: Path) -> None:
    candidates = CandidateSet(in_memory=2)
    candidates.add_unstated("p=0/bucket-0", [data_name(1), data_name(2)], DATA)  # spilled at once
    candidates.add_unstated("p=1/bucket-0", [data_name(1), data_name(3)], DATA)  # spilled again
    candidates.add_unstated("p=2/bucket-0", [data_name(2)], DATA)  # still in memory
    candidates.add_unstated("p=0/bucket-0", [data_name(2)], DATA)  # listed twice (a file list may): one file
    assert survivors(candidates) == [
        ("p=0/bucket-0", data_name(1), 0, 0),
        ("p=0/bucket-0", data_name(2), 0, 0),
        ("p=1/bucket-0", data_name(1), 0, 0),
        ("p=1/bucket-0", data_name(3), 0, 0),
        ("p=2/bucket-0", data_name(2), 0, 0),
    ]
    candidates.discard(data_name(2))
    assert survivors(candidates) == [
        ("p=0/bucket-0", data_name(1), 0, 0),
        ("p=1/bucket-0", data_name(1), 0, 0),
        ("p=1/bucket-0", data_name(3), 0, 0),
    ]
    candidates.discard(data_name(1))
    assert survivors(candidates) == [("p=1/bucket-0", data_name(3), 0, 0)]


def test_names_discarded_before_and_after_spilling_started(spill_dir: Path) -> None:
    candidates = CandidateSet(in_memory=4)
    candidates.add_unstated("p=0/bucket-0", [data_name(n) for n in range(3)], DATA)
    candidates.discard(data_name(0))  # before any spill: only from memory
    assert not candidates.spilled
    assert len(candidates) == 2
    candidates.add_unstated("p=0/bucket-0", [data_name(n) for n in range(3, 9)], DATA)  # spills 1, 2, 3, 4
    assert candidates.spilled
    candidates.discard(data_name(2))  # spilled
    candidates.discard(data_name(7))  # in memory
    candidates.add_unstated("p=1/bucket-0", [data_name(9)], DATA)  # in memory after spilling started
    candidates.discard(data_name(9))
    expected = [("p=0/bucket-0", data_name(n), 0, 0) for n in (1, 3, 4, 5, 6, 8)]
    assert survivors(candidates) == expected


def test_other_kinds_stay_in_memory_and_can_be_stated(spill_dir: Path) -> None:
    candidates = CandidateSet(in_memory=1)
    candidates.add_unstated("p=0/bucket-0", [data_name(1), data_name(2)], DATA)
    candidates.add("manifest", "manifest-a-0", 0, 0, FileClass.MANIFEST)
    candidates.add("manifest", "manifest-list-b-0", 0, 0, FileClass.MANIFEST_LIST)
    assert "manifest-a-0" in candidates
    candidates.set_stats("manifest", "manifest-a-0", 12, 3_000)
    candidates.discard("manifest-list-b-0")
    assert "manifest-list-b-0" not in candidates
    assert candidates.kinds == {DATA, FileClass.MANIFEST, FileClass.MANIFEST_LIST}
    assert survivors(candidates) == [
        ("manifest", "manifest-a-0", 12, 3_000),
        ("p=0/bucket-0", data_name(1), 0, 0),
        ("p=0/bucket-0", data_name(2), 0, 0),
    ]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing", "extra"])
def test_a_spill_file_that_cannot_be_read_back_raises(spill_dir: Path, damage: str) -> None:
    candidates = CandidateSet(in_memory=1)
    candidates.add_unstated("p=0/bucket-0", [data_name(n) for n in range(200)], DATA)
    for n in range(0, 200, 2):
        candidates.discard(data_name(n))
    candidates.discard(data_name(999))
    assert len(list(candidates.items())) == 100  # the discarded names are written out by now
    (spill,) = spill_dir.iterdir()
    spill_file = sorted(spill.glob("references-*" if damage == "extra" else "candidates-*"), key=os.path.getsize)[-1]
    if damage == "truncated":
        spill_file.write_bytes(spill_file.read_bytes()[:-3])
    elif damage == "garbage":
        spill_file.write_bytes(b"\x00" * spill_file.stat().st_size)
    elif damage == "missing":
        spill_file.unlink()
    else:
        spill_file.write_bytes(spill_file.read_bytes() * 2)
    with pytest.raises(MaintenanceError, match="nothing was deleted: .*spill file"):
        list(candidates.items())


def test_unwritable_spill_directory_raises(spill_dir: Path) -> None:
    candidates = CandidateSet(in_memory=1)
    candidates.add_unstated("p=0/bucket-0", [data_name(1)], DATA)
    (spill,) = spill_dir.iterdir()
    for file in spill.iterdir():
        file.unlink()
    spill.rmdir()
    with pytest.raises(MaintenanceError, match="cannot write the candidates' spill file"):
        candidates.add_unstated("p=0/bucket-0", [data_name(2)], DATA)


def spilled_table(root: Path) -> Table:
    """Three appends with the candidates' budget at one entry, and one old stray data file (the only orphan)."""
    options = {"write-only": "true", "orphan-files.candidates-in-memory": "1"}
    table = Table.create(str(root), ID_PART_SCHEMA, partition_keys=["part"], options=options)
    for i in range(3):
        table.append(id_part_rows(i * 100, 8))
    (root / "part=0" / "bucket-0" / "data-00000000-0000-0000-0000-000000000000-0.parquet").write_bytes(b"stray")
    age_files(root, 10 * DAY_S)
    return table


def test_a_damaged_spill_file_deletes_nothing(tmp_path: Path, spill_dir: Path) -> None:
    root = tmp_path / "t"
    spilled_table(root)
    before = files_under(root)

    def damage_the_spill_files() -> None:  # the census is done when the first manifest is read
        (spill,) = spill_dir.iterdir()
        for file in spill.glob("candidates-*"):
            file.write_bytes(b"not marshal")

    io = InterferingFileIO(LocalFileIO(), "manifest-", damage_the_spill_files)
    with pytest.raises(MaintenanceError, match="nothing was deleted: cannot read back the candidates' spill file"):
        remove_orphan_files(context_with_io(root, io), older_than=dt.timedelta(hours=1))
    assert io.action is None  # the damage happened
    assert files_under(root) == before
    assert list(spill_dir.iterdir()) == []  # the spill directory is gone with the run


def test_the_option_spills_and_finds_the_same_orphan(tmp_path: Path, spill_dir: Path) -> None:
    root = tmp_path / "t"
    spilled_table(root)
    before = files_under(root)
    seen: list[list[str]] = []
    io = InterferingFileIO(LocalFileIO(), "manifest-", lambda: seen.append(os.listdir(spill_dir)))
    result = remove_orphan_files(context_with_io(root, io), older_than=dt.timedelta(hours=1))
    assert len(seen) == 1 and len(seen[0]) == 1  # one spill directory while the references were read
    assert result.deleted_paths == ("part=0/bucket-0/data-00000000-0000-0000-0000-000000000000-0.parquet",)
    assert files_under(root) == before - set(result.deleted_paths)
    assert list(spill_dir.iterdir()) == []
