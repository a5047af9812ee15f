"""Bad input: corrupt metadata, unsafe file names, odd histories, bad durations, s3:// vs s3a://.

Every case ends in a clear typed error (a TableFormatError subclass naming the file) or a documented safe
behaviour, and never deletes anything outside the table root or anything live. Every table here is surrounded by
sentinel files (next to the root, in a root sharing its name as a prefix, and unknown files inside it), all two
days old like the table's own files, so the default 1-day orphan guard does not protect them; they must survive
every call. CLI commands run through click's CliRunner and must fail with exactly one ``error: ...`` line.

The snapshot JSON corpus lives in tests/resources/bad_input/snapshot/ (see its README.md); Avro, manifest and
history damage is generated from a real table, since it must match that table's files.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.operations import expire_snapshots, remove_orphan_files
from support.tables import DAY_S, FAR_FUTURE_MS, age_files, age_path, files_under, reachable_files, row_counts

from tableformat.cleanup.check import check_table
from tableformat.codec import json_codec
from tableformat.errors import (
    CorruptMetadataError,
    MaintenanceError,
    SnapshotNotFoundError,
    TableFormatError,
    TableNotFoundError,
    UnsafePathError,
    UnsupportedFormatError,
    ValidationError,
)
from tableformat.layout import NameFactory
from tableformat.live_set import live_entries
from tableformat.model.manifest import FileKind, ManifestEntry, ManifestFileMeta
from tableformat.model.snapshot import Snapshot
from tableformat.table import Table

from .kit import (
    INSIDE_SENTINELS,
    History,
    assert_one_line_error,
    assert_sentinels,
    batch,
    build_history,
    check_reads,
    copy_table,
    plant_sentinels,
    run_cli,
)

CORPUS = Path(__file__).resolve().parent.parent / "resources" / "bad_input" / "snapshot"
CORPUS_FILES = sorted(p.name for p in CORPUS.iterdir() if p.name != "README.md")
TYPED_METADATA_ERRORS = (CorruptMetadataError, UnsupportedFormatError, UnsafePathError)


# --- fixtures -------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, History]:
    """The six-snapshot history (tag t2 on snapshot 2), every file two days old."""
    root = tmp_path_factory.mktemp("pristine") / "t"
    history = build_history(root, {"write-only": "true", "file-operation.thread-num": "2"})
    age_files(root, 2 * DAY_S)
    return root, history


@pytest.fixture
def table_root(pristine: tuple[Path, History], tmp_path: Path) -> Iterator[Path]:
    """A copy of the pristine table with sentinels around it; they are checked after the test."""
    root = copy_table(pristine[0], tmp_path / "tables" / "t")
    planted = plant_sentinels(root)
    yield root
    assert_sentinels(planted)


@pytest.fixture
def history(pristine: tuple[Path, History]) -> History:
    return pristine[1].copy()


# --- helpers --------------------------------------------------------------------------------------------------------
def maintenance_calls() -> dict[str, Callable[[Any], Any]]:
    future = int(time.time() * 1000) + 60_000
    return {
        "expire": lambda ctx: expire_snapshots(ctx, retain_min=1, time_retained=0, parallelism=1),
        "orphans": lambda ctx: remove_orphan_files(ctx, parallelism=1),  # 1-day guard; files are 2 days old
        "orphans-forced": lambda ctx: remove_orphan_files(
            ctx, older_than=timedelta(0), force=True, parallelism=1, now_ms=future
        ),
    }


def assert_maintenance_refuses(root: Path, *needles: str) -> None:
    """Expiration and orphan cleanup stop with a MaintenanceError naming the problem, and delete nothing."""
    for name, call in maintenance_calls().items():
        before = files_under(root)
        with pytest.raises(MaintenanceError) as raised:
            call(Table.open(str(root)).context)
        for needle in needles:
            assert needle in str(raised.value), f"{name}: {needle!r} not in {raised.value}"
        assert before <= files_under(root), f"{name} deleted {sorted(before - files_under(root))}"


def put_snapshot(root: Path, snapshot_id: int, data: bytes) -> None:
    (root / "snapshot" / f"snapshot-{snapshot_id}").write_bytes(data)


def put_corpus_snapshot(root: Path, snapshot_id: int, name: str) -> None:
    """Replace snapshot-N with a corpus file, its placeholders filled from the snapshot it replaces."""
    original = latest_context(root).store.read_snapshot(snapshot_id)
    data = (CORPUS / name).read_bytes()
    data = data.replace(b"@ID@", str(snapshot_id).encode())
    data = data.replace(b"@BASE@", original.base_manifest_list.encode())
    data = data.replace(b"@DELTA@", original.delta_manifest_list.encode())
    put_snapshot(root, snapshot_id, data)


UNSAFE_MARKERS = ("../", "/etc/passwd", "s3://")
NAME_ONLY_DAMAGE = {
    "unsafe_manifest_list_name.json",
    "absolute_manifest_list_name.json",
    "scheme_manifest_list_name.json",
}
"""Corpus files that are valid JSON snapshots naming an unsafe manifest list: listing snapshots parses them fine,
anything that reads the manifest list refuses the name."""


def table_files(root: Path) -> set[str]:
    """Files under the root except the unknown sentinel files planted inside it."""
    return files_under(root) - set(INSIDE_SENTINELS)


def latest_context(root: Path) -> Any:
    return Table.open(str(root)).context


def craft_snapshot(root: Path, base: list[ManifestFileMeta], delta: list[ManifestFileMeta]) -> Snapshot:
    """Append snapshot latest+1 by hand with the given base and delta manifests (and make it LATEST)."""
    ctx = latest_context(root)
    store = ctx.store
    latest = store.latest_snapshot()
    assert latest is not None
    names = NameFactory()
    base_list = store.write_manifest_list(base, names)
    delta_list = store.write_manifest_list(delta, names)
    snapshot = dataclasses.replace(
        latest,
        id=latest.id + 1,
        base_manifest_list=base_list.name,
        delta_manifest_list=delta_list.name,
        base_manifest_list_size=base_list.size,
        delta_manifest_list_size=delta_list.size,
        commit_identifier=latest.commit_identifier + 1,
        time_millis=int(time.time() * 1000),
        uuid=str(uuid.uuid4()),
    )
    assert store.write_snapshot_if_absent(snapshot)
    store.write_hint("LATEST", snapshot.id)
    return snapshot


def write_entries(root: Path, entries: list[ManifestEntry]) -> ManifestFileMeta:
    ctx = latest_context(root)
    types = [f.type for f in ctx.schema.partition_fields]
    return ctx.store.write_manifest(entries, NameFactory(), ctx.schema.id, types)


def a_live_entry(root: Path, part: str = "p0") -> ManifestEntry:
    ctx = latest_context(root)
    latest = ctx.store.latest_snapshot()
    assert latest is not None
    codec = ctx.partition_codec()
    return next(e for e in live_entries(ctx.store, latest, codec) if codec.values(e.partition)["part"] == part)


# --- 1. the snapshot JSON corpus ------------------------------------------------------------------------------------
def test_corpus_is_documented() -> None:
    readme = (CORPUS / "README.md").read_text()
    undocumented = [name for name in CORPUS_FILES if f"`{name}`" not in readme]
    assert not undocumented and len(CORPUS_FILES) >= 20


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corrupt_latest_snapshot_is_a_typed_error_everywhere(table_root: Path, name: str) -> None:
    put_corpus_snapshot(table_root, 6, name)
    table = Table.open(str(table_root))
    reads = [table.to_arrow, lambda: table.to_arrow(snapshot_id=6)]
    if name not in NAME_ONLY_DAMAGE:
        reads.append(table.snapshots)
    for read in reads:
        with pytest.raises(TYPED_METADATA_ERRORS) as raised:
            read()
        message = str(raised.value)
        assert "snapshot-6" in message or any(marker in message for marker in UNSAFE_MARKERS), message
    before = files_under(table_root)
    with pytest.raises(TYPED_METADATA_ERRORS):
        table.append(batch([(50, "p0")]))
    assert files_under(table_root) == before, "a failed commit left files behind"
    if name not in NAME_ONLY_DAMAGE:
        assert_one_line_error(run_cli("snapshots", str(table_root), "--json"), "snapshot-6")
    assert_one_line_error(run_cli("files", str(table_root)))
    assert_maintenance_refuses(table_root)
    assert_one_line_error(run_cli("expire", str(table_root), "--json", "--retain-min", "1", "--time-retained", "0s"))
    assert_one_line_error(run_cli("remove-orphans", str(table_root), "--json"))
    assert files_under(table_root) == before


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corrupt_middle_snapshot_stops_maintenance_but_not_reads_of_others(
    table_root: Path, history: History, name: str
) -> None:
    put_corpus_snapshot(table_root, 3, name)
    table = Table.open(str(table_root))
    assert row_counts(table.to_arrow()) == history.rows[6]
    assert row_counts(table.to_arrow(tag="t2")) == history.rows[2]
    with pytest.raises(TYPED_METADATA_ERRORS):
        table.to_arrow(snapshot_id=3)
    assert table.append(batch([(50, "p0")])) is not None  # commits only need the latest snapshot
    assert_maintenance_refuses(table_root)
    assert_one_line_error(run_cli("remove-orphans", str(table_root)))


# --- 2. Avro damage -------------------------------------------------------------------------------------------------
def _latest_lists(root: Path) -> tuple[str, str]:
    latest = latest_context(root).store.latest_snapshot()
    assert latest is not None
    return latest.base_manifest_list, latest.delta_manifest_list


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "header-only":
        path.write_bytes(data[:16])
    else:  # flipped bytes in the compressed block
        middle = len(data) * 3 // 4
        path.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 8]) + data[middle + 8 :])


@pytest.mark.parametrize("how", ["truncated", "empty", "header-only", "flipped"])
@pytest.mark.parametrize("which", ["manifest-list", "manifest"])
def test_damaged_avro_of_the_latest_snapshot(table_root: Path, which: str, how: str) -> None:
    base_list, _ = _latest_lists(table_root)
    if which == "manifest-list":
        victim = base_list
    else:
        victim = latest_context(table_root).store.read_manifest_list(base_list)[0].file_name
    _damage(table_root / "manifest" / victim, how)
    table = Table.open(str(table_root))
    with pytest.raises(CorruptMetadataError, match=victim):
        table.to_arrow()
    before = files_under(table_root)
    if which == "manifest-list":  # a commit needs the latest manifest lists: it fails and leaves nothing
        with pytest.raises(CorruptMetadataError, match=victim):
            table.append(batch([(50, "p0")]))
        assert files_under(table_root) == before
    else:  # an append does not read manifests (Paimon neither): it commits, and the damage stays visible
        assert table.append(batch([(50, "p0")])) is not None
        with pytest.raises(CorruptMetadataError, match=victim):
            table.to_arrow()
    assert_maintenance_refuses(table_root, victim)
    assert_one_line_error(run_cli("files", str(table_root)), victim)


def test_damaged_manifest_list_of_an_expiring_snapshot_stops_expiration(table_root: Path, history: History) -> None:
    snapshot_1 = latest_context(table_root).store.read_snapshot(1)
    _damage(table_root / "manifest" / snapshot_1.delta_manifest_list, "truncated")
    assert row_counts(Table.open(str(table_root)).to_arrow()) == history.rows[6]
    assert_maintenance_refuses(table_root, snapshot_1.delta_manifest_list)


# --- 3. file names that point outside the table ---------------------------------------------------------------------
def unsafe_names(root: Path) -> list[str]:
    return [
        "../x.parquet",
        "../../outside.parquet",
        "../../../outside.parquet",
        str(root.parent / "abs-sentinel.parquet"),
        "s3://other-bucket/x.parquet",
        f"file://{root.parent / 'abs-sentinel.parquet'}",
        "..",
        "..\\..\\outside.parquet",
        "",
    ]


@pytest.mark.parametrize("index", range(9))
def test_manifest_naming_a_data_file_outside_the_table(table_root: Path, history: History, index: int) -> None:
    """Snapshot 7 adds a file with an unsafe name, snapshot 8 deletes it again (so expiring 7 would delete it)."""
    evil = unsafe_names(table_root)[index]
    template = a_live_entry(table_root)
    add = dataclasses.replace(template, file=dataclasses.replace(template.file, file_name=evil))
    store = latest_context(table_root).store
    base = store.manifests_of(store.read_snapshot(6))
    added = write_entries(table_root, [add])
    craft_snapshot(table_root, base, [added])
    craft_snapshot(table_root, [*base, added], [write_entries(table_root, [add.as_kind(FileKind.DELETE)])])
    age_files(table_root, 2 * DAY_S)
    table = Table.open(str(table_root))
    with pytest.raises(UnsafePathError):
        table.to_arrow(snapshot_id=7)
    assert row_counts(table.to_arrow(snapshot_id=8)) == history.rows[6]  # the name is never used to read 8
    assert_maintenance_refuses(table_root, "refusing")
    assert_one_line_error(run_cli("expire", str(table_root), "--retain-min", "1", "--time-retained", "0s"))
    assert not check_table(latest_context(table_root)).ok
    result = run_cli("check", str(table_root), "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["ok"] is False


@pytest.mark.parametrize("evil", ["../../../outside.parquet", "/etc/passwd", "s3://other-bucket/manifest-1"])
def test_manifest_list_naming_a_manifest_outside_the_table(table_root: Path, evil: str) -> None:
    """Snapshot 7 references an unsafe manifest name; snapshot 8 drops it (so expiring 7 would delete it)."""
    store = latest_context(table_root).store
    base = store.manifests_of(store.read_snapshot(6))
    bad = dataclasses.replace(base[0], file_name=evil)
    craft_snapshot(table_root, base, [bad])
    craft_snapshot(table_root, base, [write_entries(table_root, [])])
    age_files(table_root, 2 * DAY_S)
    with pytest.raises(UnsafePathError):
        Table.open(str(table_root)).to_arrow(snapshot_id=7)
    assert_maintenance_refuses(table_root, "refusing")


def test_names_are_checked_before_any_io() -> None:
    from tableformat.data_paths import file_in
    from tableformat.layout import TableLayout

    layout = TableLayout("/data/t")
    for evil in ("../x", "/etc/passwd", "s3://b/k", "a/b", "..", ".", "", "c:x", "a\\b", "x\x00y"):
        with pytest.raises(UnsafePathError):
            file_in("part=p0/bucket-0", evil)
        with pytest.raises(UnsafePathError):
            layout.manifest_file(evil)
    with pytest.raises(UnsafePathError):
        layout.relative("/data/t-sibling/part=p0/bucket-0/data-1.parquet")


# --- 4. odd histories -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", [[3], [3, 4], [1], [5]])
def test_snapshot_id_gaps(table_root: Path, history: History, missing: list[int]) -> None:
    for snapshot_id in missing:
        (table_root / "snapshot" / f"snapshot-{snapshot_id}").unlink()
    for snapshot_id in missing:
        history.rows.pop(snapshot_id)
    table = Table.open(str(table_root))
    assert [s.id for s in table.snapshots()] == sorted(history.rows)
    with pytest.raises(SnapshotNotFoundError):
        table.to_arrow(snapshot_id=missing[0])
    check_reads(table_root, history)
    assert table.append(batch([(50, "p0")])).id == 7  # type: ignore[union-attr]
    history.record(7, history.rows[6] + row_counts(batch([(50, "p0")])))
    result = expire_snapshots(Table.open(str(table_root)).context, retain_min=2, retain_max=2, time_retained=0)
    assert result.earliest_snapshot == 6
    assert check_reads(table_root, history) == [6, 7]
    # What only the vanished snapshots referenced goes to orphan cleanup. A data file whose DELETE entry was in a
    # vanished snapshot's delta stays: retained manifests still name it, so neither cleaner may judge it (safe, but
    # a leak that only a repair tool can reclaim). Nothing else is left over, and nothing live is gone.
    maintenance_calls()["orphans-forced"](Table.open(str(table_root)).context)
    ctx = latest_context(table_root)
    reachable = reachable_files(ctx)
    assert reachable <= table_files(table_root)
    leftover = table_files(table_root) - reachable
    assert leftover <= named_by_delete_entries(ctx), sorted(leftover)
    check_reads(table_root, history)


def named_by_delete_entries(ctx: Any) -> set[str]:
    """Data files that a DELETE entry in a manifest of a present snapshot or tag names."""
    from tableformat.scan.reader import DataReader

    store, layout = ctx.store, ctx.layout
    reader = DataReader(ctx.io, layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec())
    roots = [store.read_snapshot(i) for i in store.snapshot_ids()] + [t.snapshot for t in store.tags()]
    names = set()
    for snapshot in roots:
        for meta in store.manifests_of(snapshot):
            for entry in store.read_manifest(meta.file_name):
                if entry.kind == FileKind.DELETE:
                    names.add(layout.relative(reader.path_of(entry)))
    return names


@pytest.mark.parametrize(
    ("latest", "earliest"),
    [(b"99", b"77"), (b"garbage", b""), (b"-5", b"0"), (b"", b"6"), (b"3", b"1"), (b"9" * 40, b"2")],
)
def test_hints_pointing_anywhere_are_only_hints(
    table_root: Path, history: History, latest: bytes, earliest: bytes
) -> None:
    (table_root / "snapshot" / "LATEST").write_bytes(latest)
    (table_root / "snapshot" / "EARLIEST").write_bytes(earliest)
    table = Table.open(str(table_root))
    assert table.latest_snapshot().id == 6  # type: ignore[union-attr]
    assert row_counts(table.to_arrow()) == history.rows[6]
    assert table.append(batch([(50, "p0")])).id == 7  # type: ignore[union-attr]
    assert [s.id for s in table.snapshots()] == [1, 2, 3, 4, 5, 6, 7]
    result = expire_snapshots(table.context, retain_min=2, retain_max=2, time_retained=0)
    assert result.expired_snapshot_ids == (1, 2, 3, 4, 5) and result.earliest_snapshot == 6


def test_future_commit_times_are_young_forever(table_root: Path, history: History) -> None:
    """A snapshot stamped in the future (clock skew) counts as young: time-based expiration keeps it and what
    follows it; count-based retention still applies. Reads and as-of reads keep working."""
    ctx = latest_context(table_root)
    for snapshot_id in range(1, 7):
        snapshot = ctx.store.read_snapshot(snapshot_id)
        future = dataclasses.replace(snapshot, time_millis=FAR_FUTURE_MS + snapshot_id)
        ctx.io.write_bytes(ctx.layout.snapshot_file(snapshot_id), json_codec.snapshot_to_json(future))
    table = Table.open(str(table_root))
    assert table.snapshot_as_of(FAR_FUTURE_MS + 3).id == 3
    assert expire_snapshots(table.context, retain_min=1, time_retained=timedelta(hours=1)).expired_snapshots == 0
    assert check_reads(table_root, history) == [1, 2, 3, 4, 5, 6]
    result = expire_snapshots(table.context, retain_min=1, retain_max=2, time_retained=timedelta(hours=1))
    assert result.expired_snapshot_ids == (1, 2, 3, 4)
    assert check_reads(table_root, history) == [5, 6]


def test_files_with_future_mtimes_are_never_orphans(table_root: Path) -> None:
    stray = table_root / "part=p0" / "bucket-0" / f"data-{uuid.uuid4()}-0.parquet"
    stray.write_bytes(b"written by a host whose clock is a year ahead")
    age_path(stray, -365 * DAY_S)  # a year in the future
    result = maintenance_calls()["orphans-forced"](latest_context(table_root))
    assert result.deleted_paths == () and stray.exists()


def test_corrupt_tag_stops_maintenance(table_root: Path, history: History) -> None:
    (table_root / "tag" / "tag-t2").write_bytes(b'{"version": 3, "id": 2')
    assert row_counts(Table.open(str(table_root)).to_arrow()) == history.rows[6]
    assert_maintenance_refuses(table_root, "tag-t2")


def test_corrupt_schema_and_missing_table(table_root: Path, tmp_path: Path) -> None:
    (table_root / "schema" / "schema-0").write_bytes(b'{"version": 3, "id": 0, "fields": [')
    with pytest.raises(CorruptMetadataError, match="schema-0"):
        Table.open(str(table_root))
    assert_one_line_error(run_cli("snapshots", str(table_root)), "schema-0")
    with pytest.raises(TableNotFoundError):
        Table.open(str(tmp_path / "nothing-here"))
    assert_one_line_error(run_cli("snapshots", str(tmp_path / "nothing-here"), "--json"))
    assert_one_line_error(run_cli("remove-orphans", str(tmp_path / "nothing-here")))
    assert not (tmp_path / "nothing-here").exists()


# --- 5. durations ---------------------------------------------------------------------------------------------------
BAD_DURATIONS = ["-1h", "-0", "abc", "1.5ms", "", "1 fortnight", "1h-30m", "1h30", "PT1H", "0x10s", "1e3s"]


@pytest.mark.parametrize("value", [*BAD_DURATIONS, -5, timedelta(hours=-1), True, 1.5, [1]])
def test_bad_expiration_durations_api(table_root: Path, value: Any) -> None:
    before = files_under(table_root)
    with pytest.raises(ValidationError):
        expire_snapshots(latest_context(table_root), retain_min=1, time_retained=value)
    assert files_under(table_root) == before


@pytest.mark.parametrize(
    ("value", "force"),
    [
        (timedelta(hours=-1), True),
        (timedelta(milliseconds=-1), True),
        (timedelta(minutes=59), False),
        ("59m", False),
        (3_599_999, False),
        ("-1d", True),
        ("soon", False),
        (True, False),
        (1.5, False),
    ],
)
def test_bad_orphan_cutoffs_api(table_root: Path, value: Any, force: bool) -> None:
    before = files_under(table_root)
    with pytest.raises(ValidationError):
        remove_orphan_files(latest_context(table_root), older_than=value, force=force)
    assert files_under(table_root) == before


@pytest.mark.parametrize("value", [timedelta(days=1), "1d", "1 d", 86_400_000])
def test_orphan_cutoff_spellings_are_one_duration(table_root: Path, value: Any) -> None:
    """A timedelta, a duration string and milliseconds are the same cutoff (the kernel types every override)."""
    dry = remove_orphan_files(latest_context(table_root), older_than=value, dry_run=True)
    assert dry.plan is not None and dry.plan.planned_at_ms - dry.cutoff_ms == 86_400_000


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("snapshot.time-retained", "-1 h"),
        ("snapshot.time-retained", "1.5ms"),
        ("snapshot.time-retained", "1h30"),
        ("orphan-files.older-than", "-2d"),
        ("orphan-files.older-than", "soon"),
        ("snapshot.num-retained.min", "0"),
        ("snapshot.num-retained.min", "-3"),
        ("snapshot.num-retained.max", "x"),
    ],
)
def test_bad_duration_and_retention_options_refused_at_create(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ValidationError, match=key.replace(".", r"\.")):
        Table.create(str(tmp_path / "t"), batch([]).schema, options={key: value})
    assert not (tmp_path / "t" / "schema").exists()


@pytest.mark.parametrize("value", BAD_DURATIONS)
def test_bad_durations_cli(table_root: Path, value: str) -> None:
    before = files_under(table_root)
    assert_one_line_error(run_cli("expire", str(table_root), f"--time-retained={value}", "--json"))
    assert_one_line_error(run_cli("remove-orphans", str(table_root), f"--older-than={value}", "--json"))
    assert files_under(table_root) == before


@pytest.mark.parametrize("value", ["9" * 30 + "d", "99999999999999999999ms"])
def test_absurdly_long_durations_keep_everything_or_fail_cleanly(table_root: Path, value: str) -> None:
    before = files_under(table_root)
    for name, flag in (("expire", "--time-retained"), ("remove-orphans", "--older-than")):
        result = run_cli(name, str(table_root), f"{flag}={value}", "--json")
        if result.exit_code:
            assert_one_line_error(result)
    assert before <= files_under(table_root)


def test_orphan_cutoff_under_an_hour_needs_force_cli(table_root: Path) -> None:
    assert_one_line_error(run_cli("remove-orphans", str(table_root), "--older-than", "59min"), "1 h minimum")


# --- 6. one table, two URL schemes ----------------------------------------------------------------------------------
@pytest.mark.s3
def test_s3_and_s3a_address_the_same_table(s3_root: tuple[str, dict[str, Any]]) -> None:
    url, options = s3_root
    assert url.startswith("s3://")
    rest = url[len("s3://") :]
    table = Table.create(
        url, batch([]).schema, partition_keys=["part"], options={"write-only": "true"}, storage_options=options
    )
    table.append(batch([(1, "p0"), (2, "p1")]))
    via_s3a = Table.open(f"s3a://{rest}", options)
    assert via_s3a.location == url
    assert via_s3a.append(batch([(3, "p0")])).id == 2  # type: ignore[union-attr]
    assert [s.id for s in Table.open(f"s3n://{rest}/", options).snapshots()] == [1, 2]
    assert row_counts(Table.open(url, options).to_arrow()) == row_counts(batch([(1, "p0"), (2, "p1"), (3, "p0")]))

    io, layout = table.context.io, table.context.layout
    orphan = f"part=p0/bucket-0/data-{uuid.uuid4()}-0.parquet"
    io.write_bytes(layout.join(orphan), b"orphan")
    bucket = rest.split("/", 1)[0]
    sentinels = [
        f"{layout.root}-sibling/part=p0/bucket-0/data-{uuid.uuid4()}-0.parquet",
        f"{bucket}/outside.parquet",
        f"{layout.root}2/manifest/manifest-{uuid.uuid4()}-0",
    ]
    for path in sentinels:
        io.write_bytes(path, b"sentinel")
    future = int(time.time() * 1000) + 60_000
    result = remove_orphan_files(
        Table.open(f"s3a://{rest}", options).context, older_than=timedelta(0), force=True, now_ms=future
    )
    assert result.deleted_paths == (orphan,)
    s3a_ctx = Table.open(f"s3a://{rest}", options).context
    expired = expire_snapshots(s3a_ctx, retain_min=1, retain_max=1, time_retained=0)
    assert expired.expired_snapshot_ids == (1,)
    assert row_counts(Table.open(url, options).to_arrow()) == row_counts(batch([(1, "p0"), (2, "p1"), (3, "p0")]))
    assert all(io.read_bytes(path) == b"sentinel" for path in sentinels)
    assert Table.open(url, options).context.layout.root == via_s3a.context.layout.root == layout.root


def test_error_types_are_one_hierarchy() -> None:
    for error in (CorruptMetadataError, UnsupportedFormatError, UnsafePathError, MaintenanceError, ValidationError):
        assert issubclass(error, TableFormatError)
