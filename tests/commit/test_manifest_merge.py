"""tableformat.commit.manifest_merge: the base manifest list is merged without ever changing what is live.

Minor merge: manifests are grouped in order until a group reaches ``target_size``; full groups are rewritten as one
(ADD/DELETE pairs inside the group cancel, a DELETE whose ADD is outside the group stays), the trailing group only
once it has ``merge_min_count`` manifests. Full compaction: once the manifests that must change (with DELETEs, or
smaller than the target) reach ``full_compaction_size``, they are rewritten without any DELETE, together with every
large manifest that may hold a deleted file.

Manifests are real files of a real table (tests/support/manifests.py); every policy is expressed in the sizes of
the manifests at hand, which are checked first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.manifests import Manifests, kinds
from support.tables import ID_PART_SCHEMA, files_under

from tableformat.commit.manifest_merge import ManifestMerger, MergePolicy
from tableformat.model.manifest import FileKind, ManifestFileMeta
from tableformat.table import Table

ADD, DELETE = FileKind.ADD, FileKind.DELETE
NEVER = 10**12
"""A threshold no test manifest reaches."""


@pytest.fixture
def kit(tmp_path: Path) -> Manifests:
    return Manifests(Table.create(str(tmp_path / "t"), ID_PART_SCHEMA, partition_keys=["part"]))


def merger(kit: Manifests, target: int, min_count: int, full: int = NEVER) -> ManifestMerger:
    policy = MergePolicy(target_size=target, merge_min_count=min_count, full_compaction_size=full)
    return ManifestMerger(kit.store, kit.names, kit.ctx.schema.id, kit.types, kit.codec, policy)


def singles(kit: Manifests, count: int, part: int = 0, start: int = 0) -> list[ManifestFileMeta]:
    """``count`` manifests of one ADD each (equal sizes: names of equal length)."""
    metas = [kit.write([kit.entry(f"data-{start + i:04d}.parquet", [part])]) for i in range(count)]
    assert len({m.file_size for m in metas}) == 1, "the test needs manifests of one size"
    return metas


def manifest_files(kit: Manifests) -> set[str]:
    return {f for f in files_under(kit.ctx.layout.root) if f.startswith("manifest/manifest-")}


# --- minor merges ---------------------------------------------------------------------------------------------------
def test_small_manifests_below_the_min_count_stay_as_they_are(kit: Manifests) -> None:
    metas = singles(kit, 2)
    before = manifest_files(kit)
    m = merger(kit, target=NEVER, min_count=3)
    assert m.merge(metas) == metas
    assert m.written == [] and manifest_files(kit) == before


def test_the_trailing_group_is_merged_at_the_min_count(kit: Manifests) -> None:
    metas = singles(kit, 3)
    m = merger(kit, target=NEVER, min_count=3)
    merged = m.merge(metas)
    assert len(merged) == 1 and merged[0] not in metas
    assert kinds(kit.entries_of(merged)) == kinds(kit.entries_of(metas))  # every entry, in order
    assert (merged[0].num_added_files, merged[0].num_deleted_files) == (3, 0)
    assert m.written == [kit.ctx.layout.manifest_file(merged[0].file_name)]  # for removal if the commit fails
    assert f"manifest/{merged[0].file_name}" in manifest_files(kit)
    assert all(f"manifest/{meta.file_name}" in manifest_files(kit) for meta in metas)  # the merger deletes nothing


def test_groups_close_at_the_target_size(kit: Manifests) -> None:
    """Size S each, target 2S: [m0 m1] [m2 m3] are full groups and merged, m4 trails alone (min count 3)."""
    metas = singles(kit, 5)
    size = metas[0].file_size
    merged = merger(kit, target=2 * size, min_count=3).merge(metas)
    assert len(merged) == 3 and merged[2] == metas[4]
    assert [kinds(kit.entries_of([meta])) for meta in merged[:2]] == [
        kinds(kit.entries_of(metas[0:2])),
        kinds(kit.entries_of(metas[2:4])),
    ]
    # one byte more and every group needs three manifests: [m0 m1 m2], then m3 m4 trail (fewer than 3); the three
    # entries of the group are written two per file (a file holds target // bytes-per-entry = 2 entries)
    merged = merger(kit, target=2 * size + 1, min_count=3).merge(metas)
    assert merged[2:] == metas[3:] and kinds(kit.entries_of(merged[:2])) == kinds(kit.entries_of(metas[:3]))
    assert [m.num_added_files for m in merged[:2]] == [2, 1]


def test_a_manifest_at_the_target_size_is_reused_not_rewritten(kit: Manifests) -> None:
    big = kit.write([kit.entry(f"big-{i:04d}.parquet", [1]) for i in range(40)])
    small = singles(kit, 1)
    m = merger(kit, target=big.file_size, min_count=5)
    assert m.merge([big, *small]) == [big, *small]  # a group of one is never rewritten; the small one trails
    assert m.merge([*small, big]) != [*small, big]  # [small big] reaches the target: a full group, rewritten
    assert m.written != []


def test_add_delete_pairs_cancel_and_unmatched_deletes_stay(kit: Manifests) -> None:
    e = kit.entry
    outside = kit.write([e(f"old-{i:04d}.parquet", [1]) for i in range(40)])  # a full group on its own
    group = [
        kit.write([e("data-a.parquet", [0]), e("data-b.parquet", [0])]),
        kit.write(
            [
                e("data-a.parquet", [0], kind=DELETE),
                e("data-c.parquet", [2]),
                e("old-0003.parquet", [1], kind=DELETE),  # its ADD is in the manifest before the group
            ]
        ),
    ]
    assert group[0].file_size < outside.file_size <= group[0].file_size + group[1].file_size  # one full group
    merged = merger(kit, target=outside.file_size, min_count=100).merge([outside, *group])
    assert merged[0] == outside
    assert kinds(kit.entries_of(merged[1:])) == [
        ("ADD", "data-b.parquet"),
        ("ADD", "data-c.parquet"),
        ("DELETE", "old-0003.parquet"),
    ]
    assert sum(m.num_added_files for m in merged[1:]) == 2 and sum(m.num_deleted_files for m in merged[1:]) == 1
    assert kit.live(merged).keys() == kit.live([outside, *group]).keys()


def test_a_group_that_cancels_out_leaves_no_manifest(kit: Manifests) -> None:
    e = kit.entry
    group = [kit.write([e("data-a.parquet", [0])]), kit.write([e("data-a.parquet", [0], kind=DELETE)])]
    m = merger(kit, target=NEVER, min_count=2)
    assert m.merge(group) == []
    assert m.written == []


def test_a_rewrite_is_split_into_files_of_about_the_target_size(kit: Manifests) -> None:
    """The rewritten manifests' bytes per entry estimate how many entries fill ``target_size``."""
    metas = [kit.write([kit.entry(f"data-{i:02d}-{j}.parquet", [i % 3]) for j in range(4)]) for i in range(6)]
    per_entry = sum(m.file_size for m in metas) // 24
    target = 5 * per_entry  # five entries per file
    assert all(m.file_size < target for m in metas)  # all small: a full compaction rewrites them all
    m = merger(kit, target=target, min_count=100, full=1)
    merged = m.merge(metas)
    assert [x.num_added_files for x in merged] == [5, 5, 5, 5, 4]
    assert kinds(kit.entries_of(merged)) == kinds(kit.entries_of(metas))
    assert len(m.written) == 5


# --- full compaction ------------------------------------------------------------------------------------------------
def full_compaction_case(kit: Manifests) -> tuple[list[ManifestFileMeta], int]:
    """Two large manifests (parts 0 and 1), a small one (part 2) and one deleting a file of part 1."""
    e = kit.entry
    big_0 = kit.write([e(f"p0-{i:04d}.parquet", [0]) for i in range(40)])
    big_1 = kit.write([e(f"p1-{i:04d}.parquet", [1]) for i in range(40)])
    small = kit.write([e("p2-0000.parquet", [2])])
    deletes = kit.write([e("p1-0007.parquet", [1], kind=DELETE)])
    target = min(big_0.file_size, big_1.file_size)
    assert small.file_size < target and deletes.file_size < target
    return [big_0, big_1, small, deletes], target


def test_full_compaction_leaves_no_delete_and_keeps_untouched_partitions(kit: Manifests) -> None:
    metas, target = full_compaction_case(kit)
    big_0 = metas[0]
    must_change = metas[2].file_size + metas[3].file_size  # the small manifest and the one with a DELETE
    merged = merger(kit, target=target, min_count=100, full=must_change).merge(metas)
    assert merged[0] == big_0  # part 0 had no deletion: reused as it is
    rewritten = kit.entries_of(merged[1:])
    assert all(entry.kind == ADD for entry in rewritten)
    assert sorted(entry.file.file_name for entry in rewritten) == sorted(
        [f"p1-{i:04d}.parquet" for i in range(40) if i != 7] + ["p2-0000.parquet"]
    )
    assert kit.live(merged).keys() == kit.live(metas).keys()
    assert sum(m.num_deleted_files for m in merged) == 0


def test_below_the_full_compaction_threshold_deletes_stay(kit: Manifests) -> None:
    metas, target = full_compaction_case(kit)
    must_change = metas[2].file_size + metas[3].file_size
    merged = merger(kit, target=target, min_count=2, full=must_change + 1).merge(metas)
    assert merged[:2] == metas[:2]  # each large manifest is a full group of one: reused
    assert kinds(kit.entries_of(merged[2:])) == [("ADD", "p2-0000.parquet"), ("DELETE", "p1-0007.parquet")]
    assert kit.live(merged).keys() == kit.live(metas).keys()


def test_full_compaction_rewrites_a_large_manifest_whose_partition_lost_a_file(kit: Manifests) -> None:
    """Dropping the DELETE while keeping the large manifest that holds its ADD would revive the file."""
    metas, target = full_compaction_case(kit)
    merged = merger(kit, target=target, min_count=100, full=1).merge(metas)
    assert metas[1] not in merged
    assert not any(e.file.file_name == "p1-0007.parquet" for e in kit.entries_of(merged))


# --- any history ----------------------------------------------------------------------------------------------------
# One step: a manifest of new files (partition of each) and deletions of live files (indices into the live list).
STEP = st.tuples(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 10**6), max_size=4))
POLICY = st.tuples(st.integers(1, 6), st.integers(1, 5), st.sampled_from([0.5, 1.0, 3.0, 1000.0]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=8), policy=POLICY)
def test_merging_never_changes_the_live_files(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[list[int], list[int]]], policy: tuple[int, int, float]
) -> None:
    """Random valid histories (every DELETE names a live file) and policies: the merged list describes exactly the
    files a model of the history says are live; after a full compaction it holds no DELETE at all."""
    kit = Manifests(Table.create(str(tmp_path_factory.mktemp("merge") / "t"), ID_PART_SCHEMA, partition_keys=["part"]))
    live: list[tuple[str, int]] = []
    metas = []
    for number, (adds, deletes) in enumerate(steps):
        entries = []
        for index in sorted({i % len(live) for i in deletes} if live else set(), reverse=True):
            name, part = live.pop(index)
            entries.append(kit.entry(name, [part], kind=DELETE))
        for position, part in enumerate(adds):
            name = f"data-{number:02d}-{position:02d}.parquet"
            entries.append(kit.entry(name, [part]))
            live.append((name, part))
        if entries:
            metas.append(kit.write(entries))
    if not metas:
        return
    size = metas[0].file_size
    target_in_manifests, min_count, full_factor = policy
    m = merger(kit, target=target_in_manifests * size, min_count=min_count, full=int(full_factor * size))
    merged = m.merge(metas)
    result = kit.live(merged)
    assert sorted((e.file.file_name, kit.codec.values(e.partition)["part"]) for e in result.values()) == sorted(live)
    must_change = [x for x in metas if x.num_deleted_files > 0 or x.file_size < m.policy.target_size]
    if sum(x.file_size for x in must_change) >= m.policy.full_compaction_size:
        assert all(e.kind == ADD for e in kit.entries_of(merged))
    assert sorted(m.written) == sorted(kit.ctx.layout.manifest_file(x.file_name) for x in merged if x not in metas)
    reused = [x for x in merged if x in metas]
    assert reused == [x for x in metas if x in reused]  # reused manifests keep their order
