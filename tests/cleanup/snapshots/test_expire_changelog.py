"""What expiration deletes of a snapshot's changelog and statistics file: exact file sets, with the roots that keep
them (a tag, a branch's snapshot, a long-lived changelog), the dry run, the journal and a crash, with the changelog
lifecycle coupled to the snapshots' (decoupled: test_changelog_lifecycle.py)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time

import pytest
from click.testing import CliRunner
from support.changelogs import Changelog, attach_changelog, attach_statistics, attached_needs
from support.faults import FaultyFileIO, InjectedFault
from support.operations import expire_snapshots
from support.paimon_index import PaimonIndex
from support.tables import FAR_FUTURE_MS, branch_from_snapshot, context_with_io, files_under, reachable_files

from tableformat.cleanup.snapshots import execute_expiration, plan_expiration
from tableformat.cleanup.snapshots.config import ExpireConfig
from tableformat.cleanup.snapshots.journal import read_journal, write_journal
from tableformat.cli.expire_command import expire as expire_command
from tableformat.errors import MaintenanceError
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.io.local import LocalFileIO
from tableformat.table import Table

EVERYTHING = {"retain_min": 1, "time_retained": 0, "limit": 1000}
SETTLED = {**EVERYTHING, "parallelism": 1, "now_ms": FAR_FUTURE_MS}


def wrap(io: FileIO, bulk: bool) -> FileIO:
    return BulkDeletes(io) if bulk else io


def chain(exc: BaseException):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def expire(table: Table, **kwargs):
    return expire_snapshots(table.context, **{**EVERYTHING, "now_ms": FAR_FUTURE_MS, **kwargs})


def history(kit, snapshots: int = 6) -> tuple[Table, dict[int, Changelog]]:
    """``snapshots`` appends, each with a changelog (as a primary-key table with changelog-producer=input has)."""
    table = kit.table()
    changelogs = {}
    for i in range(1, snapshots + 1):
        table.append(kit.rows(4))
        changelogs[i] = attach_changelog(table, i)
    return table, changelogs


def needed(table: Table) -> set[str]:
    """Everything the present snapshots and tags need, their changelogs and statistics included."""
    store = table.context.store
    roots = [*(store.read_snapshot(i) for i in store.snapshot_ids()), *(t.snapshot for t in store.tags())]
    return reachable_files(table.context) | attached_needs(table, roots)


def test_changelog_goes_with_its_snapshot_except_where_a_tag_a_branch_or_a_changelog_root_names_it(kit) -> None:
    table, changelogs = history(kit)
    table.create_tag("keep", 2)
    root = kit.root(table)
    branch_from_snapshot(root, "b1", 3)
    ctx = table.context
    ctx.io.write_bytes(ctx.layout.changelog_file("4"), ctx.store.snapshot_bytes(ctx.store.read_snapshot(4)))
    before = files_under(root)

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5)
    gone = before - files_under(root)
    every_changelog = {p for c in changelogs.values() for p in c.paths}
    assert gone & every_changelog == changelogs[1].paths | changelogs[5].paths
    for kept in (2, 3, 4, 6):  # tag, branch snapshot, long-lived changelog, the end
        assert changelogs[kept].paths <= files_under(root), kept
    assert result.deleted_changelog_files == 4
    assert result.deleted_changelog_manifests == 2
    assert result.deleted_changelog_manifest_lists == 2
    assert set(result.deleted_paths) == gone


def test_a_long_lived_changelog_without_a_changelog_list_keeps_its_data_like_a_branch(kit) -> None:
    """changelog-producer=none with a decoupled lifecycle: Paimon keeps the expired snapshot's manifest lists and data
    files for ``changelog/changelog-<id>``; an expiration by tablefmt keeps them too."""
    table = kit.table()
    table.append(kit.rows(4))
    table.append(kit.rows(4))
    replaced = {f.path for f in table.files(2) if f.partition["part"] == 0}
    table.overwrite(kit.rows(2, parts=(0,)), {"part": 0})
    table.append(kit.rows(2))
    ctx = table.context
    root = kit.root(table)
    ctx.io.write_bytes(ctx.layout.changelog_file("2"), ctx.store.snapshot_bytes(ctx.store.read_snapshot(2)))
    second = ctx.store.read_snapshot(2)
    held = {f"manifest/{n}" for n in (second.base_manifest_list, second.delta_manifest_list)}
    held |= {f"manifest/{m.file_name}" for m in ctx.store.manifests_of(second)}

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3)
    after = files_under(root)
    assert {p[len(ctx.layout.root) + 1 :] for p in replaced} <= after
    assert held <= after
    assert result.deleted_data_files == 0


def test_only_the_newest_snapshot_left_needs_exactly_its_changelog(kit) -> None:
    table, changelogs = history(kit)
    before = files_under(kit.root(table))

    result = expire(table)

    after = files_under(kit.root(table))
    assert after == needed(table)
    assert set(result.deleted_paths) == before - after
    assert {c for i in range(1, 6) for c in changelogs[i].paths} <= set(result.deleted_paths)
    assert changelogs[6].paths <= after


def test_an_expired_tag_gives_up_the_changelog_it_alone_named(kit) -> None:
    table, changelogs = history(kit, 4)
    table.create_tag("old", 1, time_retained=dt.timedelta(hours=1))
    table.create_tag("forever", 2)
    expire(table, now_ms=int(time.time() * 1000))  # the tag is young: snapshots 1-3 go, its changelog stays
    assert changelogs[1].paths <= files_under(kit.root(table))

    result = expire(table)  # now it is past its time-retained

    assert result.expired_tags == ("old",)
    assert not changelogs[1].paths & files_under(kit.root(table))
    assert changelogs[2].paths <= files_under(kit.root(table))
    assert files_under(kit.root(table)) == needed(table)


def test_statistics_file_lives_while_a_retained_snapshot_or_tag_names_it(kit) -> None:
    table, _ = history(kit, 6)
    first = attach_statistics(table, [1, 2])
    tagged = attach_statistics(table, [3, 4])
    last = attach_statistics(table, [5, 6])
    table.create_tag("t3", 3)

    result = expire(table)

    after = files_under(kit.root(table))
    assert first not in after and tagged in after and last in after
    assert result.deleted_statistics_files == 1
    assert first in result.deleted_paths
    assert after == needed(table)


def test_a_tag_created_on_an_expiring_snapshot_after_planning_keeps_its_changelog(kit) -> None:
    table, changelogs = history(kit, 4)
    attach_statistics(table, [2])
    config = ExpireConfig.resolve(table.context.options, **EVERYTHING)
    plan = plan_expiration(table.context, config, FAR_FUTURE_MS)
    assert changelogs[2].manifest_list in {f.path for f in plan.attached.changelog_manifest_lists}
    table.create_tag("late", 2)

    result = execute_expiration(table.context, plan, config=config)

    after = files_under(kit.root(table))
    assert changelogs[2].paths <= after and not (changelogs[1].paths | changelogs[3].paths) & after
    assert result.deleted_statistics_files == 0 and after == needed(table)


def test_a_bucket_directory_only_changelogs_used_is_removed_with_them(kit) -> None:
    table = kit.table(**{"snapshot.clean-empty-directories": "true"})
    for i in range(1, 4):
        table.append(kit.rows(4))
        attach_changelog(table, i, partitions=((0,), (7,)) if i == 1 else ((0,),))

    result = expire(table)

    assert "part=7/bucket-0" in result.removed_dirs and "part=7" in result.removed_dirs
    assert not (kit.root(table) / "part=7").exists()


def test_dry_run_reports_exactly_what_the_real_run_deletes(kit) -> None:
    table, _ = history(kit)
    attach_statistics(table, [1])
    table.create_tag("keep", 2)
    copy = kit.base / "copy"
    shutil.copytree(kit.root(table), copy)

    preview = expire(table, dry_run=True)
    done = expire(Table.open(str(copy)))

    assert sorted(preview.deleted_paths) == sorted(done.deleted_paths)
    for kind in ("changelog_files", "changelog_manifests", "changelog_manifest_lists", "statistics_files"):
        assert getattr(preview, f"deleted_{kind}") == getattr(done, f"deleted_{kind}") > 0, kind
    assert preview.to_json()["deleted_changelog_files"] == done.to_json()["deleted_changelog_files"] == 8


def test_journal_lists_the_changelog_and_statistics_files(kit) -> None:
    table, changelogs = history(kit, 3)
    stats = attach_statistics(table, [1])
    plan = plan_expiration(table.context, ExpireConfig.resolve(table.context.options, **EVERYTHING), FAR_FUTURE_MS)

    loaded = read_journal(table.context, write_journal(table.context, plan))

    assert loaded is not None
    assert {f.path for f in loaded.attached.changelog_files} == changelogs[1].files | changelogs[2].files
    assert {f.path for f in loaded.attached.changelog_manifests} == {changelogs[1].manifest, changelogs[2].manifest}
    assert {f.path for f in loaded.attached.changelog_manifest_lists} == {changelogs[i].manifest_list for i in (1, 2)}
    assert [f.path for f in loaded.attached.statistics_files] == [stats]
    assert loaded.attached == plan.attached


class BulkDeletes(ForwardingFileIO):
    """Local disk with an object store's delete path (one delete call per step, existence asked ahead)."""

    def __init__(self, inner: FileIO) -> None:
        super().__init__(inner)
        self.bulk_delete = True


@pytest.mark.parametrize("bulk", [False, True], ids=["local", "bulk-deletes"])
@pytest.mark.parametrize(("mode", "sticky"), [("before", False), ("after", False), ("before", True), ("after", True)])
def test_a_fault_at_every_write_and_delete_is_finished_by_the_next_run(kit, tmp_path, mode, sticky, bulk) -> None:
    """Every mutating call of an expiration that deletes changelogs and statistics fails once (before or after it
    takes effect; sticky: every later call refused too, a crash): the retained snapshots' changelogs stay, and a
    re-run leaves exactly what an uninterrupted run leaves (tests/reliability/test_fault_sweeps.py's sweep, on a
    table with changelogs)."""
    table, changelogs = history(kit)
    attach_statistics(table, [1])
    table.create_tag("keep", 2)
    base = kit.root(table)
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    done = expire(Table.open(str(reference)), parallelism=1)
    assert done.deleted_changelog_files and done.deleted_statistics_files
    counter = FaultyFileIO(LocalFileIO())
    expire_snapshots(context_with_io(shutil.copytree(base, tmp_path / "count"), wrap(counter, bulk)), **SETTLED)
    failures = []
    for point in range(1, counter.count + 1):
        copy = shutil.copytree(base, tmp_path / f"{mode}-{sticky}-{point}")
        faulty = FaultyFileIO(LocalFileIO(), point, mode, sticky=sticky)
        try:
            expire_snapshots(context_with_io(copy, wrap(faulty, bulk)), **SETTLED)
        except Exception as exc:
            assert any(isinstance(e, InjectedFault) for e in chain(exc)), exc
        lost = {c for i in (2, 6) for c in changelogs[i].paths} - files_under(copy)  # the tag's and the end's
        again = expire(Table.open(str(copy)), parallelism=1)
        present = {p for p in files_under(copy) if not p.startswith(".tablefmt/claim-")}  # a crashed claim lapses
        left = present - files_under(reference)
        if lost or present != files_under(reference):
            failures.append(f"point {point} {counter.calls[point - 1]}: lost {lost}, left {left}, {again.notes}")
        shutil.rmtree(copy)
    assert not failures, "\n".join(failures)


def test_changelog_retention_equal_to_the_snapshot_one_is_coupled(kit) -> None:
    table = kit.table(**{"changelog.num-retained.max": "2", "changelog.time-retained": "0 ms"})
    for i in range(1, 4):
        table.append(kit.rows(4))
        attach_changelog(table, i)

    result = expire(table, retain_min=2, retain_max=2)

    assert result.expired_snapshot_ids == (1,) and result.deleted_changelog_manifest_lists == 1


# --- index manifests and index files ----------------------------------------------------------------------------
def dv_history(kit, in_buckets: bool = False) -> tuple[Table, PaimonIndex, dict[int, str], dict[int, set[str]]]:
    """1: an append (parts 0 and 1); 2-4: deletion vectors committed as Paimon commits them (2: file A for part 0's
    bucket; 3: B replaces A; 4: C for part 1's bucket, B kept); 5: a commit that changes no index file. Returns the
    index manifest and the index file names of each snapshot. ``in_buckets``: with ``index-file-in-data-file-dir``."""
    table = kit.table(**({"index-file-in-data-file-dir": "true"} if in_buckets else {}))
    table.append(kit.rows(4))
    index = PaimonIndex(table, in_data_file_dir=in_buckets)
    live = index.live_files()
    by_part = {entry.partition: name for name, entry in sorted(live.items())}
    first, second = (by_part[p] for p in sorted(by_part))
    index.delete_rows({first: [0]})
    index.delete_rows({first: [1]})
    index.delete_rows({second: [0]})
    index.commit()
    store = table.context.store
    manifests = {i: store.read_snapshot(i).index_manifest for i in range(2, 6)}
    files = {i: {e.index_file.file_name for e in store.read_index_manifest(manifests[i])} for i in range(2, 6)}
    return table, index, manifests, files


def index_paths(manifests: dict[int, str], files: dict[int, set[str]], *snapshots: int) -> set[str]:
    return {f"manifest/{manifests[i]}" for i in snapshots} | {f"index/{n}" for i in snapshots for n in files[i]}


def test_index_manifests_and_files_live_while_a_retained_root_names_them(kit) -> None:
    table, _, manifests, files = dv_history(kit)
    (a,), (b,) = files[2], files[3]
    assert b in files[4] and len(files[4]) == 2 and files[4] == files[5] and manifests[4] == manifests[5]
    table.create_tag("old", 2, time_retained=dt.timedelta(hours=1))
    root = kit.root(table)
    before = files_under(root)

    result = expire(table, now_ms=int(time.time() * 1000))

    gone = before - files_under(root)
    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    assert {p for p in gone if p.startswith("index/") or "index-manifest" in p} == {f"manifest/{manifests[3]}"}
    assert result.deleted_index_manifests == 1 and result.deleted_index_files == 0
    assert index_paths(manifests, files, 2, 5) <= files_under(root)  # the tag's A and the end's B and C

    result = expire(table)  # the tag is past its time-retained now

    assert result.expired_tags == ("old",)
    assert set(result.deleted_paths) & index_paths(manifests, files, 2, 3) == {f"manifest/{manifests[2]}", f"index/{a}"}
    assert result.deleted_index_manifests == 1 and result.deleted_index_files == 1
    assert index_paths(manifests, files, 5) <= files_under(root)
    assert {p for p in files_under(root) if p.startswith("index/")} == {f"index/{n}" for n in files[5]}


def test_a_branch_keeps_the_index_files_of_its_snapshot(kit) -> None:
    table, _, manifests, files = dv_history(kit)
    branch_from_snapshot(kit.root(table), "b2", 2)

    result = expire(table)

    assert result.deleted_index_manifests == 1  # only snapshot 3's: 2's is the branch's, 4's the end's
    assert index_paths(manifests, files, 2, 5) <= files_under(kit.root(table))
    assert f"manifest/{manifests[3]}" not in files_under(kit.root(table))


def test_index_files_are_journaled_and_a_crash_is_finished_by_the_next_run(kit, tmp_path) -> None:
    table, _, manifests, files = dv_history(kit)
    plan = plan_expiration(table.context, ExpireConfig.resolve(table.context.options, **EVERYTHING), FAR_FUTURE_MS)
    loaded = read_journal(table.context, write_journal(table.context, plan))
    assert loaded is not None and loaded.attached == plan.attached
    assert [f.path for f in loaded.attached.index_manifests] == [
        f"manifest/{n}" for n in sorted({manifests[2], manifests[3]})
    ]
    assert {f.path for f in loaded.attached.index_files} == {f"index/{n}" for n in files[2]}
    table.context.store.delete_expire_journal(table.context.layout.expire_journal_file(plan.plan_id))
    reference = shutil.copytree(kit.root(table), tmp_path / "reference")
    expire(Table.open(str(reference)))
    for point in range(1, 12):
        copy = shutil.copytree(kit.root(table), tmp_path / f"crash-{point}")
        with pytest.raises(kit.Crash):
            expire_snapshots(context_with_io(copy, kit.CrashingIO(crash_at_delete=point)), **SETTLED)
        expire(Table.open(str(copy)))
        present = {p for p in files_under(copy) if not p.startswith(".tablefmt/claim-")}
        assert present == files_under(reference), point


def test_index_files_in_bucket_directories_go_from_there(kit, tmp_path) -> None:
    table, _, _, files = dv_history(kit, in_buckets=True)
    (a,) = files[2]
    named = files[2] | files[5]
    where = {p.rsplit("/", 1)[-1]: p for p in files_under(kit.root(table)) if p.rsplit("/", 1)[-1] in named}
    assert all("/bucket-" in p for p in where.values()) and not (kit.root(table) / "index").exists()
    crashed = shutil.copytree(kit.root(table), tmp_path / "crashed")

    result = expire(table)

    assert result.deleted_index_files == 1 and where[a] in result.deleted_paths
    assert {where[n] for n in files[5]} <= files_under(kit.root(table))
    with pytest.raises(kit.Crash):
        expire_snapshots(context_with_io(crashed, kit.CrashingIO(crash_at_delete=6)), **SETTLED)
    expire(Table.open(str(crashed)))  # the journal names the index file in its bucket directory
    assert {p for p in files_under(crashed) if not p.startswith(".tablefmt/")} == {
        p for p in files_under(kit.root(table)) if not p.startswith(".tablefmt/")
    }


def test_the_cli_names_the_changelog_and_statistics_files_it_deletes(kit) -> None:
    table, _ = history(kit, 3)
    attach_statistics(table, [1])
    args = [str(kit.root(table)), "--retain-min", "1", "--time-retained", "0s"]

    dry = CliRunner().invoke(expire_command, [*args, "--dry-run"], catch_exceptions=False)
    done = CliRunner().invoke(expire_command, args, catch_exceptions=False)

    assert dry.exit_code == done.exit_code == 0
    counts = "4 changelog file(s), 2 changelog manifest(s), 2 changelog manifest list(s), 1 statistics file(s)"
    assert "would delete 0 data file(s), 0 manifest(s), 4 manifest list(s), 15 file(s) in all" in dry.output
    assert f"including {counts}" in dry.output and f"including {counts}" in done.output


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("changelogFiles", "snapshot/snapshot-1"),
        ("changelogManifests", "schema/schema-0"),
        ("changelogManifestLists", "../manifest/manifest-list-x"),
        ("statisticsFiles", "manifest/stat-x"),
        ("indexFiles", "tag/index-x"),
        ("indexManifests", "manifest/manifest-list-x"),
    ],
)
def test_a_journal_naming_a_file_outside_the_attached_kinds_places_is_refused(kit, field, bad) -> None:
    table, _ = history(kit, 3)
    plan = plan_expiration(table.context, ExpireConfig.resolve(table.context.options, **EVERYTHING), FAR_FUTURE_MS)
    path = write_journal(table.context, plan)
    journal = kit.root(table) / table.context.layout.relative(path)
    document = json.loads(journal.read_bytes())
    document.setdefault(field, []).append([bad, 1, []] if field == "changelogFiles" else [bad, 1])
    journal.write_text(json.dumps(document))
    before = files_under(kit.root(table))

    with pytest.raises(MaintenanceError, match="unsafe"):
        expire(table)

    assert files_under(kit.root(table)) == before
