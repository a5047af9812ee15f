"""A decoupled changelog lifecycle (a ``changelog.*`` retention above the snapshot one, Paimon's
``changelogDecoupled``): expiring a snapshot leaves ``changelog/changelog-<id>`` (a copy of its JSON) and exactly
the files that changelog needs; changelog expiration later removes those roots with the files only they named."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest
from click.testing import CliRunner
from support.changelogs import attach_changelog, attached_needs
from support.faults import FaultyFileIO, InjectedFault
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import branch_from_snapshot, context_with_io, files_under, reachable_files

from tableformat.cleanup.check import check_table
from tableformat.cleanup.snapshots import plan_expiration
from tableformat.cleanup.snapshots.changelog_expiry import plan_changelog_expiration
from tableformat.cleanup.snapshots.config import ExpireConfig
from tableformat.cleanup.snapshots.journal import plan_from_document, plan_to_document, read_journal, write_journal
from tableformat.cli.expire_command import expire as expire_command
from tableformat.context import TableContext
from tableformat.errors import UnsafePathError
from tableformat.io.local import LocalFileIO
from tableformat.live_set import live_entries
from tableformat.model.snapshot import Snapshot
from tableformat.parallel import Workers
from tableformat.scan.reader import DataReader
from tableformat.table import Table

DECOUPLED = {
    "snapshot.num-retained.min": "1",
    "snapshot.num-retained.max": "2",
    "changelog.num-retained.max": "50",
    "changelog.time-retained": "1 h",
}
HOUR_MS = 3_600_000


SETTLED = {"time_retained": 0, "limit": 1000, "parallelism": 1}


def chain(exc: BaseException | None):
    while exc is not None:
        yield exc
        exc = exc.__cause__ or exc.__context__


def soon(table: Table) -> int:
    """A minute after the latest commit: every snapshot is past snapshot.time-retained (0), no changelog is past
    changelog.time-retained (1 h)."""
    ctx = table.context
    return ctx.store.read_snapshot(ctx.store.latest_snapshot_id()).time_millis + 60_000


def expire(table: Table, **kwargs):
    return expire_snapshots(table.context, **{"time_retained": 0, "limit": 1000, "now_ms": soon(table), **kwargs})


def changelog_roots(ctx: TableContext) -> list[Snapshot]:
    found = (ctx.store.read_changelog(str(i)) for i in ctx.store.changelog_ids())
    return [c for c in found if c is not None]


def whole_needs(ctx: TableContext, roots: list[Snapshot]) -> set[str]:
    """What the roots name as a reader of each would open: manifest lists, manifests, live data files."""
    store, layout = ctx.store, ctx.layout
    reader = DataReader(ctx.io, layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec())
    files: set[str] = set()
    for root in roots:
        files |= {layout.relative(layout.manifest_file(n)) for n in root.manifest_lists()}
        files |= {layout.relative(layout.manifest_file(m.file_name)) for m in store.manifests_of(root)}
        live = live_entries(store, root, ctx.partition_codec(), threads=1)
        files |= {layout.relative(reader.path_of(e)) for e in live}
    return files


def changelog_needs(table: Table) -> set[str]:
    """What the long-lived changelogs and the snapshots with a changelog manifest list name: the list, its manifests
    and files."""
    store = table.context.store
    roots = [*changelog_roots(table.context), *(store.read_snapshot(i) for i in store.snapshot_ids())]
    roots += [t.snapshot for t in store.tags()]
    lists = {f"manifest/{r.changelog_manifest_list}" for r in roots if r.changelog_manifest_list}
    return lists | attached_needs(table, roots)


def root_files(ctx: TableContext) -> set[str]:
    names = {f"changelog/changelog-{i}" for i in ctx.store.changelog_ids()}
    return names | {f"changelog/{h}" for h in ("EARLIEST", "LATEST") if ctx.io.exists(ctx.layout.join("changelog", h))}


def input_history(kit, snapshots: int = 6, **options: str) -> tuple[Table, dict[int, frozenset[str]]]:
    table = kit.table(**{**DECOUPLED, "changelog-producer": "input", **options})
    paths = {}
    for i in range(1, snapshots + 1):
        table.append(kit.rows(4))
        paths[i] = attach_changelog(table, i).paths
    return table, paths


def test_input_producer_expired_snapshots_leave_changelog_roots_that_keep_exactly_their_changelog(kit) -> None:
    table, changelogs = input_history(kit)
    ctx = table.context
    root = kit.root(table)
    copies = {i: (root / "snapshot" / f"snapshot-{i}").read_bytes() for i in range(1, 7)}

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5)
    assert ctx.store.changelog_ids() == [1, 2, 3, 4, 5]
    for i in range(1, 6):
        assert (root / "changelog" / f"changelog-{i}").read_bytes() == copies[i]
    assert json.loads((root / "changelog" / "LATEST").read_text()) == 5
    assert json.loads((root / "changelog" / "EARLIEST").read_text()) == 1
    every = {p for paths in changelogs.values() for p in paths}
    after = files_under(root)
    assert every <= after
    assert result.deleted_changelog_files == result.deleted_changelog_manifest_lists == 0
    assert after == reachable_files(ctx) | changelog_needs(table) | root_files(ctx)


def test_none_producer_changelog_roots_keep_their_manifest_lists_and_data_files(kit) -> None:
    table = kit.table(**DECOUPLED)
    table.append(kit.rows(4))
    table.append(kit.rows(4))
    root = str(kit.root(table))
    replaced = {f.path[len(root) + 1 :] for f in table.files(2) if f.partition["part"] == 0}
    table.overwrite(kit.rows(2, parts=(0,)), {"part": 0})
    table.append(kit.rows(2))
    table.append(kit.rows(2))
    ctx = table.context

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    assert result.deleted_data_files == result.deleted_manifests == result.deleted_manifest_lists == 0
    roots = changelog_roots(ctx)
    assert [r.id for r in roots] == [1, 2, 3, 4]
    after = files_under(kit.root(table))
    assert replaced <= after
    assert after == reachable_files(ctx) | whole_needs(ctx, roots) | root_files(ctx)


def test_coupled_lifecycle_writes_no_changelog_root(kit) -> None:
    table = kit.table(**{**DECOUPLED, "changelog.num-retained.max": "2", "changelog.time-retained": "0 ms"})
    for _ in range(4):
        table.append(kit.rows(2))

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3)
    assert not (kit.root(table) / "changelog").exists() or table.context.store.changelog_ids() == []


def sweep_table(kit, scenario: str) -> tuple[Table, set[str], int]:
    """A decoupled table with changelogs and a tag, the changelog files that must survive, and the run's clock.
    roots: the run writes long-lived changelogs; same-run: it also expires some of them (num-retained.max);
    later: they exist already and the run expires them (time-retained)."""
    options = {"changelog.num-retained.max": "3"} if scenario == "same-run" else {}
    table, changelogs = input_history(kit, **options)
    table.create_tag("keep", 2)
    now = soon(table)
    if scenario == "later":
        expire(table, now_ms=now)
        now += 2 * HOUR_MS
        return table, set(changelogs[2] | changelogs[5] | changelogs[6]), now
    if scenario == "same-run":
        return table, set(changelogs[2] | changelogs[4] | changelogs[5] | changelogs[6]), now
    return table, {p for paths in changelogs.values() for p in paths}, now


@pytest.mark.parametrize("scenario", ["roots", "same-run", "later"])
@pytest.mark.parametrize(("mode", "sticky"), [("before", False), ("after", False), ("before", True), ("after", True)])
@pytest.mark.slow
def test_a_fault_at_every_write_and_delete_is_finished_by_the_next_run(kit, tmp_path, mode, sticky, scenario) -> None:
    """Every mutating call of a decoupled expiration (long-lived changelogs written and expired, snapshots and files
    deleted) fails once (sticky: every later call too, a crash); a re-run leaves exactly what an uninterrupted run
    leaves, and no changelog file a retained root needs is lost meanwhile."""
    table, needed_files, now = sweep_table(kit, scenario)
    base = kit.root(table)
    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    expire(Table.open(str(reference)), parallelism=1, now_ms=now)
    counter = FaultyFileIO(LocalFileIO())
    expire_snapshots(context_with_io(shutil.copytree(base, tmp_path / "count"), counter), **SETTLED, now_ms=now)
    failures = []
    for point in range(1, counter.count + 1):
        copy = shutil.copytree(base, tmp_path / f"{mode}-{sticky}-{point}")
        faulty = FaultyFileIO(LocalFileIO(), point, mode, sticky=sticky)
        try:
            expire_snapshots(context_with_io(copy, faulty), **SETTLED, now_ms=now)
        except Exception as exc:
            assert any(isinstance(e, InjectedFault) for e in chain(exc)), exc
        lost = needed_files - files_under(copy)
        expire(Table.open(str(copy)), parallelism=1, now_ms=now)
        present = {p for p in files_under(copy) if not p.startswith(".tablefmt/claim-")}
        hints = {"changelog/LATEST", "changelog/EARLIEST"}  # only hints: a failed write is logged, the listing decides
        diff = (present ^ files_under(reference)) - hints
        if lost or diff:
            failures.append(f"point {point} {counter.calls[point - 1]}: lost {lost}, {diff}")
        shutil.rmtree(copy)
    assert not failures, "\n".join(failures)


# --- changelog expiration -----------------------------------------------------------------------------------------
def test_input_producer_changelogs_past_their_time_go_with_exactly_the_files_only_they_named(kit) -> None:
    table, changelogs = input_history(kit)
    table.create_tag("keep", 2)
    ctx = table.context
    root = kit.root(table)
    first = expire(table)
    assert first.expired_snapshot_ids == (1, 2, 3, 4, 5) and first.expired_changelog_ids == ()
    before = files_under(root)

    result = expire(table, now_ms=soon(table) + 2 * HOUR_MS)

    assert result.expired_snapshot_ids == ()
    assert result.expired_changelog_ids == (1, 2, 3, 4)  # the newest long-lived changelog always stays
    assert ctx.store.changelog_ids() == [5]
    assert json.loads((root / "changelog" / "EARLIEST").read_text()) == 5
    gone = before - files_under(root)
    roots_gone = {f"changelog/changelog-{i}" for i in (1, 2, 3, 4)}
    assert gone == roots_gone | changelogs[1] | changelogs[3] | changelogs[4]  # the tag holds 2's changelog
    assert set(result.deleted_paths) == gone
    assert result.deleted_changelog_files == 6 and result.deleted_changelog_manifest_lists == 3
    assert files_under(root) == reachable_files(ctx) | changelog_needs(table) | root_files(ctx)


def test_changelog_num_retained_max_expires_changelogs_in_the_same_run(kit) -> None:
    table, changelogs = input_history(kit, **{"changelog.num-retained.max": "3"})

    result = expire(table)

    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5)
    assert result.expired_changelog_ids == (1, 2, 3)  # beyond the newest 3 ids (4, 5, 6): whatever their age
    assert table.context.store.changelog_ids() == [4, 5]
    after = files_under(kit.root(table))
    assert not (changelogs[1] | changelogs[2] | changelogs[3]) & after
    assert after == reachable_files(table.context) | changelog_needs(table) | root_files(table.context)
    assert result.to_json()["expired_changelogs"] == 3
    assert result.to_json()["expired_changelog_ids"] == [1, 2, 3]
    assert "and 3 changelog(s)" in result.headline()


def test_none_producer_changelogs_go_with_their_lists_and_data_files_but_what_a_tag_or_branch_holds(kit) -> None:
    table = kit.table(**DECOUPLED)
    table.append(kit.rows(4))
    table.append(kit.rows(4))
    table.overwrite(kit.rows(2, parts=(0,)), {"part": 0})  # replaces part 0 of snapshots 1 and 2
    for _ in range(3):
        table.append(kit.rows(2))
    table.create_tag("keep", 1)
    branch_from_snapshot(kit.root(table), "b1", 3)
    ctx = table.context
    base = str(kit.root(table))
    second_only = {f.path[len(base) + 1 :] for f in table.files(2) if f.partition["part"] == 0}
    second_only -= {f.path[len(base) + 1 :] for f in table.files(1)}
    third = ctx.store.read_snapshot(3)  # the branch's snapshot
    expire(table)
    assert ctx.store.changelog_ids() == [1, 2, 3, 4, 5]
    before = files_under(kit.root(table))

    result = expire(table, now_ms=soon(table) + 2 * HOUR_MS)

    assert result.expired_changelog_ids == (1, 2, 3, 4)
    after = files_under(kit.root(table))
    gone = before - after
    assert set(result.deleted_paths) == gone
    assert {p for p in gone if p.startswith("part=")} == second_only  # live only in changelog 2
    assert result.deleted_data_files == len(second_only) == 1
    branch = {p for p in after if p.startswith("branch/")} | whole_needs(ctx, [third])
    tag = whole_needs(ctx, [t.snapshot for t in ctx.store.tags()])
    assert after == reachable_files(ctx) | whole_needs(ctx, changelog_roots(ctx)) | root_files(ctx) | branch | tag


@pytest.mark.parametrize("producer", ["input", "none"])
def test_check_and_orphan_cleanup_see_long_lived_changelogs_as_roots(kit, producer) -> None:
    """A long-lived changelog with a changelog list names it and no base or delta list (Paimon deleted those with
    its snapshot): check finds nothing missing, orphan cleanup deletes nothing, before and after they expire."""
    if producer == "input":
        table, _ = input_history(kit)
    else:
        table = kit.table(**DECOUPLED)
        for _ in range(6):
            table.append(kit.rows(4))
    ctx = table.context
    for now in (soon(table), soon(table) + 2 * HOUR_MS):
        expire(table, now_ms=now)
        before = files_under(kit.root(table))
        checked = check_table(ctx)
        assert checked.missing_files == () and checked.errors == () and checked.orphan_files == 0
        orphans = remove_orphan_files(ctx, older_than=dt.timedelta(0), force=True)
        assert orphans.deleted_paths == () and files_under(kit.root(table)) == before
    assert ctx.store.changelog_ids() == [5]


def test_dry_run_of_changelog_expiration_reports_exactly_what_the_real_run_deletes(kit) -> None:
    table, _ = input_history(kit)
    table.create_tag("keep", 2)
    expire(table)
    copy = kit.base / "copy"
    shutil.copytree(kit.root(table), copy)
    later = soon(table) + 2 * HOUR_MS

    preview = expire(table, now_ms=later, dry_run=True)
    done = expire(Table.open(str(copy)), now_ms=later)

    assert preview.expired_changelog_ids == done.expired_changelog_ids == (1, 2, 3, 4)
    assert sorted(preview.deleted_paths) == sorted(done.deleted_paths)
    assert preview.deleted_changelog_files == done.deleted_changelog_files == 6


def test_journal_holds_the_changelogs_to_write_and_to_expire_and_refuses_other_paths(kit) -> None:
    table, _ = input_history(kit)
    ctx = table.context
    config = ExpireConfig.resolve(ctx.options, time_retained=0, limit=1000)
    plan = plan_expiration(ctx, config, soon(table))
    assert plan.changelog_roots == (1, 2, 3, 4, 5)
    loaded = read_journal(ctx, write_journal(ctx, plan))
    assert loaded is not None and loaded.changelog_roots == plan.changelog_roots
    expire(table)
    with Workers(1) as workers:
        changelogs = plan_changelog_expiration(ctx, config, soon(table) + 2 * HOUR_MS, workers)
    assert changelogs.expired_changelogs == (1, 2, 3, 4) and changelogs.changelog_end == 5
    loaded = read_journal(ctx, write_journal(ctx, changelogs))
    assert loaded is not None
    assert (loaded.expired_changelogs, loaded.changelog_root_files) == (
        changelogs.expired_changelogs,
        changelogs.changelog_root_files,
    )
    assert loaded.changelog_end == 5 and loaded.attached == changelogs.attached
    document = plan_to_document(changelogs)
    for bad in ("snapshot/snapshot-1", "changelog/../x", "changelog/EARLIEST", "../changelog/changelog-1"):
        with pytest.raises(UnsafePathError):
            plan_from_document({**document, "changelogRootFiles": [[bad, 0]]})


def test_the_cli_names_the_changelogs_it_expires(kit) -> None:
    table, _ = input_history(kit, **{"changelog.num-retained.max": "3", "changelog.time-retained": "0 s"})
    args = [str(kit.root(table)), "--retain-min", "1", "--time-retained", "0s"]

    text = CliRunner().invoke(expire_command, [*args, "--dry-run"], catch_exceptions=False)
    done = CliRunner().invoke(expire_command, [*args, "--json"], catch_exceptions=False)

    assert text.exit_code == done.exit_code == 0
    assert "would expire 5 snapshot(s)" in text.output  # the dry run sees no long-lived changelog yet
    result = json.loads(done.output)
    assert result["expired_changelogs"] == 4 and result["expired_changelog_ids"] == [1, 2, 3, 4]
    again = CliRunner().invoke(expire_command, args, catch_exceptions=False)
    assert again.exit_code == 0 and "changelog(s)" not in again.output
