"""Erasure on real tables: exactly the matching rows go, exactly the live files holding them are rewritten (pruned
by partition and statistics, then checked by content), one snapshot; the dry run names exactly what the real run
rewrites and purges; a purge expires every older snapshot and deletes the old files unless a tag, a branch or a
consumer holds them (named in ``pinned_by``); ``verify_erasure`` finds every copy under the root."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.erase_tables import (
    STANDARD_APPENDS,
    all_rows,
    event_rows,
    events_table,
    files_holding,
    live_files,
    parquet_names_under,
)
from support.tables import FAR_FUTURE_MS, branch_from_snapshot

from tableformat.errors import ArgumentError, ValidationError
from tableformat.model.snapshot import Consumer
from tableformat.table import Table


@pytest.fixture
def events(tmp_path: Path) -> Table:
    return events_table(tmp_path / "events", STANDARD_APPENDS)


def _names(paths: tuple[str, ...] | list[str]) -> set[str]:
    return {p.rsplit("/", 1)[-1] for p in paths}


def _data(paths: tuple[str, ...]) -> set[str]:
    return {p for p in paths if p.endswith(".parquet")}


def test_erase_removes_exactly_the_matching_rows_and_rewrites_exactly_their_files(events: Table) -> None:
    before = all_rows(events)
    files_before = live_files(events)
    holding = files_holding(events, {3, 12})
    assert len(holding) == 3  # users 3 and 12 on day 0 (two files) and again on day 2

    result = events.erase("user_id IN (3, 12)")

    assert result.snapshot_id == 6 and result.snapshot_ids == (6,)
    assert set(result.rewritten_paths) == holding
    assert result.erased_rows == 4
    assert result.rewritten_bytes == sum((Path(events.location) / p).stat().st_size for p in holding)
    assert all_rows(events) == [r for r in before if r["user_id"] not in (3, 12)]
    files_after = live_files(events)
    untouched = set(files_before) - holding
    assert untouched <= set(files_after)
    assert set(files_after) - untouched == set(result.written_paths)
    for path in untouched:
        assert files_after[path].equals(files_before[path])
    snapshot = events.latest_snapshot()
    assert snapshot.commit_kind.value == "OVERWRITE" and snapshot.commit_user.startswith("tablefmt-erase-")
    assert [p.text() for p in result.pinned_by] == [f"snapshot {i}" for i in (1, 2, 3, 4, 5)]
    assert result.purged_snapshot_ids == () and result.deleted_paths == ()
    assert result.deadline_ms is not None and any("erase.deadline" in note for note in result.notes)
    assert events.maintenance.check().ok


def test_statistics_and_partitions_prune_files_before_any_is_opened(events: Table) -> None:
    dry = events.erase("day = DATE '2024-01-03' AND user_id = 9", dry_run=True)
    assert dry.erased_rows == 1 and len(dry.rewritten_paths) == 1
    from tableformat.cleanup.erase import plan_erase
    from tableformat.cleanup.erase.plan import EraseConfig

    ctx = events.context
    config = EraseConfig.resolve(ctx, {"where": "user_id >= 35"})
    plan = plan_erase(ctx, config, 0)
    assert (plan.live_files, plan.opened_files) == (5, 1)  # only the day-1 file of users 30..39 can hold one
    assert [f.rows for f in plan.files] == [5]


SQL_CASES: list[tuple[str, Any]] = [
    ("user_id = 4", lambda r: r["user_id"] == 4),
    ("4 = user_id", lambda r: r["user_id"] == 4),
    ("user_id <> 4 AND user_id < 6", lambda r: r["user_id"] != 4 and r["user_id"] < 6),
    ("NOT user_id >= 2", lambda r: r["user_id"] < 2),
    ("user_id BETWEEN 5 AND 7", lambda r: 5 <= r["user_id"] <= 7),
    ("email = 'u8@example.com'", lambda r: r["email"] == "u8@example.com"),
    ("email IS NULL", lambda r: r["email"] is None),
    ("email IS NOT NULL AND user_id > 36", lambda r: r["email"] is not None and r["user_id"] > 36),
    ("amount = 21.02", lambda r: r["amount"] == decimal.Decimal("21.02")),
    ("active AND user_id < 4", lambda r: r["active"] and r["user_id"] < 4),
    ("active = FALSE AND user_id < 4", lambda r: not r["active"] and r["user_id"] < 4),
    ("score > 18.5", lambda r: r["score"] > 18.5),
    ("score < -1", lambda r: r["score"] < -1),
    (
        "day = DATE '2024-01-02' AND (user_id = 21 OR user_id = 33)",
        lambda r: r["day"] == dt.date(2024, 1, 2) and r["user_id"] in (21, 33),
    ),
    ("day IN ('2024-01-03')", lambda r: r["day"] == dt.date(2024, 1, 3)),
    ("ts >= TIMESTAMP '2024-01-02 12:00:00'", lambda r: r["ts"] >= dt.datetime(2024, 1, 2, 12)),
    ("ts < '2024-01-01 02:30:00'", lambda r: r["ts"] < dt.datetime(2024, 1, 1, 2, 30)),
    (
        "user_id IN (1, 2) OR email IS NULL AND NOT active",
        lambda r: r["user_id"] in (1, 2) or (r["email"] is None and not r["active"]),
    ),
]


@pytest.mark.parametrize(("where", "matches"), SQL_CASES, ids=[c[0] for c in SQL_CASES])
def test_where_erases_the_rows_sql_semantics_select(events: Table, where: str, matches: Any) -> None:
    before = all_rows(events)
    expected = [r for r in before if not matches(r)]
    result = events.erase(where)
    assert all_rows(events) == expected
    assert result.erased_rows == len(before) - len(expected)


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (
            "nope = 1",
            "where='nope = 1': unknown column 'nope'; the table has user_id, email, amount, active, score, day, ts",
        ),
        ("user_id = 'x'", "where=\"user_id = 'x'\": 'x' is not a value of column 'user_id' (int64)"),
        ("user_id = 1.5", "where='user_id = 1.5': 1.5 is not a value of column 'user_id' (int64)"),
        ("email = 5", "where='email = 5': 5 is not a value of column 'email' (string)"),
        ("day > 5", "where='day > 5': 5 is not a value of column 'day' (date32[day])"),
        ("active = 1", "where='active = 1': 1 is not a value of column 'active' (bool)"),
        ("user_id = NULL", "where='user_id = NULL': compare 'user_id' with NULL using IS NULL"),
        ("user_id =", "where='user_id =' is not a SQL boolean expression"),
        ("user_id = email", "where='user_id = email': cannot compare 'user_id' (int64) with 'email' (string)"),
    ],
)
def test_unknown_columns_and_type_mismatches_are_one_argument_error_before_anything_is_read(
    events: Table, where: str, message: str
) -> None:
    latest = events.latest_snapshot().id
    with pytest.raises(ArgumentError) as raised:
        events.erase(where)
    assert str(raised.value).startswith(message)
    assert events.latest_snapshot().id == latest


def test_a_keys_file_erases_by_a_hash_lookup_whatever_the_number_of_keys(events: Table, tmp_path: Path) -> None:
    keys = pa.table({"uid": pa.array([5, 12, 39, *range(1_000, 1_000_000)], pa.int64())})  # ~1M keys
    pq.write_table(keys, tmp_path / "keys.parquet")
    before = all_rows(events)
    holding = files_holding(events, {5, 12, 39})

    dry = events.maintenance.erase(keys_file=str(tmp_path / "keys.parquet"), key="user_id=uid", dry_run=True)
    real = events.maintenance.erase(keys_file=str(tmp_path / "keys.parquet"), key="user_id=uid")

    assert set(dry.rewritten_paths) == set(real.rewritten_paths) == holding
    assert dry.erased_rows == real.erased_rows == 4  # user 12 twice
    assert all_rows(events) == [r for r in before if r["user_id"] not in (5, 12, 39)]
    from tableformat.cleanup.erase import erase_filter

    row_filter = erase_filter(events.context.schema, keys_file=str(tmp_path / "keys.parquet"), key="user_id=uid")
    assert str(row_filter.prune).count(" or ") == 15  # 16 ranges of keys prune files: no expression lists them all
    assert row_filter.keys is not None and len(row_filter.keys) == 999_003


def test_a_csv_keys_file_is_cast_to_the_column_type(events: Table, tmp_path: Path) -> None:
    (tmp_path / "keys.csv").write_text("email,other\nu8@example.com,x\nu33@example.com,y\n\n")
    result = events.maintenance.erase(keys_file=str(tmp_path / "keys.csv"), key="email")
    assert result.erased_rows == 2
    assert {r["user_id"] for r in all_rows(events)} == set(range(40)) - {8, 33}
    (tmp_path / "ids.csv").write_text("id\n7\nseven\n")
    with pytest.raises(ArgumentError, match=r"column 'id' \(string\) holds values that are not 'user_id' \(int64\)"):
        events.maintenance.erase(keys_file=str(tmp_path / "ids.csv"), key="user_id=id")
    with pytest.raises(ArgumentError, match="no column 'nope' can be read"):
        events.maintenance.erase(keys_file=str(tmp_path / "ids.csv"), key="user_id=nope")


def test_a_pyarrow_expression_erases_too(events: Table) -> None:
    result = events.erase(pc.field("user_id") == 17)
    assert result.erased_rows == 1 and 17 not in {r["user_id"] for r in all_rows(events)}


def _comparable(result: Any) -> dict[str, Any]:
    document = result.to_json()
    run_only = ("requests", "counted_requests", "estimated_cost_usd")  # the dry run's estimate, the run's count
    for key in ("dry_run", "run_id", "snapshot_id", "snapshot_ids", "written_files", "written_paths", *run_only):
        document.pop(key)
    document["deleted_paths"] = sorted(document["deleted_paths"])
    return document


@pytest.mark.parametrize("purge", [False, True], ids=["erase", "purge"])
def test_the_dry_run_names_exactly_what_the_real_run_rewrites_and_purges(events: Table, purge: bool) -> None:
    events.create_tag("audit", 2)
    dry = events.erase("user_id IN (3, 12, 25)", purge=purge, dry_run=True, now_ms=FAR_FUTURE_MS)
    assert events.latest_snapshot().id == 5  # nothing changed
    real = events.erase("user_id IN (3, 12, 25)", purge=purge, now_ms=FAR_FUTURE_MS)
    assert dry.dry_run and not real.dry_run
    assert _comparable(dry) == _comparable(real)
    assert real.snapshot_id == 6 and len(real.written_paths) == len(real.rewritten_paths) == 4
    if purge:
        assert real.purged_snapshot_ids == (1, 2, 3, 4, 5)
        assert [p.text() for p in real.pinned_by] == ["tag audit (snapshot 2)"]
        assert _data(real.deleted_paths) == set(real.rewritten_paths) - files_in_tag(events, "audit")
    else:
        assert real.purged_snapshot_ids == () and real.deleted_paths == ()


def files_in_tag(table: Table, tag: str) -> set[str]:
    root = Path(table.location)
    snapshot = Table.open(table.location).context.store.read_tag(tag).snapshot
    names = {e.file.file_name for e in table.plan_files(snapshot)}
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet") if p.name in names}


def test_purge_deletes_the_old_files_at_once_and_stops_short_of_tags_and_consumers(events: Table) -> None:
    events.create_tag("kept", 2)  # holds user 12's file (second append)
    events.context.store.write_consumer(Consumer(consumer_id="reader", next_snapshot=4))
    root = Path(events.location)
    holding = files_holding(events, {3, 12})

    result = events.erase("user_id IN (3, 12)", purge=True)

    assert result.snapshot_id == 6
    assert result.purged_snapshot_ids == (1, 2, 3)  # the consumer keeps 4 and 5 (and expiration never passes it)
    assert {p.text() for p in result.pinned_by} == {
        "snapshot 4",
        "snapshot 5",
        "tag kept (snapshot 2)",
        "consumer reader (snapshot 4)",
    }
    assert any("overriding snapshot.num-retained.min/max" in n for n in result.notes)
    assert result.deadline_ms is not None
    on_disk = parquet_names_under(root)
    assert _names(tuple(holding)) <= on_disk  # still referenced by snapshot 4/5 and the tag: nothing deleted early
    check = events.maintenance.verify_erasure("user_id IN (3, 12)")
    assert check.matches == 4 and not check.certified
    assert {p.text() for p in check.pinned_by} >= {"tag kept (snapshot 2)", "snapshot 4", "snapshot 5"}

    events.context.store.write_consumer(Consumer(consumer_id="reader", next_snapshot=6))
    events.delete_tag("kept")
    again = events.erase("user_id IN (3, 12)", purge=True)
    assert again.erased_rows == 0 and again.purged_snapshot_ids == (4, 5) and again.pinned_by == ()
    assert not _names(tuple(holding)) & parquet_names_under(root)
    certificate = events.maintenance.verify_erasure("user_id IN (3, 12)")
    assert certificate.certified and certificate.matches == 0
    assert certificate.files_scanned == len(parquet_names_under(root))


def test_verify_finds_copies_in_files_no_snapshot_references(events: Table) -> None:
    events.erase("user_id = 14", purge=True)
    root = Path(events.location)
    stray = root / "day=19723" / "bucket-0" / "data-stray-0.parquet"
    pq.write_table(event_rows([14, 15], 0), stray)  # a failed write's leftover
    check = events.maintenance.verify_erasure(keys_file=None, where="user_id = 14")
    assert check.matches == 1 and check.pinned_by == ()
    assert [path for path, _ in check.matched_files] == ["day=19723/bucket-0/data-stray-0.parquet"]
    total_bytes = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    assert 0 < check.bytes_scanned < total_bytes / 3  # only the user_id column chunks are read


def test_nothing_matching_commits_nothing(events: Table) -> None:
    result = events.erase("user_id = 999")
    assert result.snapshot_id is None and result.erased_rows == 0 and result.rewritten_paths == ()
    assert events.latest_snapshot().id == 5


def test_the_deadline_comes_from_erase_deadline_or_the_override(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", STANDARD_APPENDS, **{"erase.deadline": "7 d"})
    result = table.erase("user_id = 1", now_ms=1_000)
    assert result.deadline_ms == 1_000 + 7 * 86_400_000
    assert table.latest_snapshot().properties["tablefmt.erase.deadline-ms"] == str(1_000 + 7 * 86_400_000)
    override = table.erase("user_id = 2", deadline="1h", now_ms=1_000)
    assert override.deadline_ms == 1_000 + 3_600_000
    with pytest.raises(ValidationError, match=r"deadline \(erase.deadline\)"):
        table.erase("user_id = 3", deadline="-1d")


def test_pins_follow_compactions_expired_snapshots_and_branches(tmp_path: Path) -> None:
    table = events_table(tmp_path / "t", STANDARD_APPENDS, **{"compaction.min.file-num": "2"})
    table.maintenance.compact()  # snapshot 6: days 0 and 1 merged (DELETE entries in its delta)
    table.append(event_rows([50], 3, seq=7))  # snapshot 7
    table.maintenance.expire_snapshots(retain_min=5, retain_max=5)  # snapshots 3..7 stay: the walk starts at 3
    branch_from_snapshot(Path(table.location), "audit", 4)  # the branch holds snapshot 4's files
    result = table.erase("user_id IN (13, 50)")
    # user 13 lived in day 0's second file (snapshots 3..5), then in the merged file (6, 7); user 50 in 7 only
    assert [p.text() for p in result.pinned_by] == [
        *(f"snapshot {i}" for i in (3, 4, 5, 6, 7)),
        "branch audit snapshot 4 (snapshot 4)",
    ]
    assert result.erased_rows == 2
    check = table.maintenance.verify_erasure("user_id IN (13, 50)")
    assert check.matches == 3 and {p.text() for p in check.pinned_by} == {p.text() for p in result.pinned_by}


def test_the_audit_ledger_keeps_a_digest_of_the_filter_never_the_personal_data(events: Table) -> None:
    """An erasure's filter names the people whose rows go: its audit record keeps a SHA-256 of it, nothing to read
    back, and no row of the ledger holds the text."""
    where = "user_id IN (3, 12)"
    events.erase(where)
    [run] = [r for r in events.audit() if r.run.operation == "erase"]
    digest = hashlib.sha256(where.encode()).hexdigest()
    assert run.run.overrides == {"where": f"sha256:{digest}"}
    ledger = Path(events.location) / ".tablefmt" / "audit"
    assert not [p for p in ledger.iterdir() if b"user_id IN" in p.read_bytes()]
