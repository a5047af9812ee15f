"""Partition expiration on primary-key tables pypaimon 2.1.0 wrote, as Paimon does it (PartitionExpire ->
FileStoreCommitImpl.dropPartitions): one OVERWRITE snapshot of DELETE entries for every live file of the expired
partitions, each a byte-for-byte copy of its ADD entry (bucket, total buckets, level, keys, key statistics, sequence
numbers), whether the drop was planned on the latest snapshot or planned again after a concurrent pypaimon commit.
pypaimon then reads exactly the other partitions' rows, every retained snapshot as before, and keeps upserting (also
into the dropped partition: no older version of a key comes back), on fixed-bucket and dynamic-bucket tables.

Compaction and record expiration are refused on these tables (they would rewrite key versions as final rows), and
``tablefmt maintain`` skips them as not applicable.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from support.tables import files_under

from interop.helpers import Paimon, delta_entries, read_avro, rows_of, snapshot_json
from interop.pk_upserts import (
    PARTITIONS,
    UpsertModel,
    assert_exact_drop,
    create_pk_table,
    missing_references,
    pk_options,
    upsert,
    upsert_rows,
)
from tableformat import Table
from tableformat.cleanup.partitions import PARTITION_EXPIRATION
from tableformat.cli.main import cli
from tableformat.commit.committer import ChangeKind, CommitRequest, Committer
from tableformat.commit.data_writer import NewDataFile
from tableformat.live_set import live_entries
from tableformat.model.manifest import ManifestEntry
from tableformat.model.snapshot import CommitKind

SEED = 26
EXPIRED = ["2020-01-01", "2020-01-02"]
PARTITION_EXPIRATION_NOW_MS = 1_893_456_000_000  # 2030-01-01: the 2020 partitions are long expired, 2099 is not


def _cli(*args: str, expect: int = 0) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == expect, result.output
    return json.loads(result.stdout)


def _pk_table(pp: Paimon, rounds: int = 6, **options: str) -> tuple[str, UpsertModel]:
    path = create_pk_table(pp, "t", pk_options(**options))
    model = UpsertModel()
    for number in range(1, rounds + 1):
        upsert(pp, "t", model.next_round(SEED, number))
    assert rows_of(pp.read("t")) == model.rows()
    return path, model


def test_expiring_partitions_of_a_pk_table_drops_exact_copies_and_pypaimon_keeps_upserting(pp: Paimon) -> None:
    root, model = _pk_table(pp)
    before = {sid: rows_of(pp.read("t", snapshot_id=sid)) for sid in range(1, 7)}

    result = _cli("expire-partitions", root)
    assert result["expired_partitions"] == [{"dt": dt} for dt in EXPIRED] and result["snapshot_ids"] == [7]
    assert_exact_drop(root, 7, EXPIRED)
    for dt in EXPIRED:
        model.drop(dt)
    assert rows_of(pp.read("t")) == model.rows()
    assert {sid: rows_of(pp.read("t", snapshot_id=sid)) for sid in range(1, 7)} == before
    assert missing_references(root) == []

    for number in (7, 8):  # upserts and deletes into every partition, the dropped ones too
        upsert(pp, "t", model.next_round(SEED, number))
    assert rows_of(pp.read("t")) == model.rows()
    assert {r[1] for r in model.rows()} == set(PARTITIONS)  # the dropped partitions hold only the new rows


def test_a_drop_planned_again_after_a_pypaimon_commit_still_copies_the_entries_exactly(pp: Paimon) -> None:
    root, model = _pk_table(pp)
    ctx = Table.open(root).context
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, PARTITION_EXPIRATION_NOW_MS)
    assert [p.display for p in plan.expired] == [{"dt": dt} for dt in EXPIRED]
    kept_only = upsert_rows(SEED, 7, model.live.keys(), ["2099-01-01"])
    upsert(pp, "t", kept_only)  # snapshot 7, after planning: the drop is planned again on it (guarded)
    model.apply(7, kept_only)
    result = PARTITION_EXPIRATION.execute(ctx, plan, config, None)
    assert result.snapshot_ids == (8,) and result.skipped_partitions == ()
    assert_exact_drop(root, 8, EXPIRED)
    for dt in EXPIRED:
        model.drop(dt)
    assert rows_of(pp.read("t")) == model.rows()


def test_a_partition_touched_after_planning_is_not_dropped(pp: Paimon) -> None:
    root, model = _pk_table(pp)
    ctx = Table.open(root).context
    config = PARTITION_EXPIRATION.configure(ctx, {})
    plan = PARTITION_EXPIRATION.plan(ctx, config, PARTITION_EXPIRATION_NOW_MS)
    late = upsert_rows(SEED, 7, model.live.keys(), ["2020-01-01"])
    upsert(pp, "t", late)  # a late upsert into an expiring partition: its new file was not planned
    model.apply(7, late)
    result = PARTITION_EXPIRATION.execute(ctx, plan, config, None)
    assert result.expired_partitions == ({"dt": "2020-01-02"},)
    assert [(dict(p), reason) for p, reason in result.skipped_partitions] == [
        ({"dt": "2020-01-01"}, "files were added after planning; not dropped")
    ]
    assert_exact_drop(root, 8, ["2020-01-02"])
    model.drop("2020-01-02")
    assert rows_of(pp.read("t")) == model.rows()


def test_dynamic_bucket_pk_table_keeps_its_hash_index_through_a_drop(pp: Paimon) -> None:
    """bucket=-1: pypaimon assigns keys to buckets with the hash index the snapshot's index manifest names. A drop
    that lost the index manifest made pypaimon's next write fail ("has data files but no complete HASH index"). As
    Paimon's overwrite does, the drop removes the index files of the dropped partitions and keeps the others."""
    root = create_pk_table(pp, "t", pk_options(bucket="-1", **{"dynamic-bucket.target-row-num": "4"}))
    model = UpsertModel()
    for number in (1, 2, 3):
        upsert(pp, "t", model.next_round(SEED, number))
    index = snapshot_json(root, 3)["indexManifest"]
    assert index
    result = _cli("expire-partitions", root)
    assert result["snapshot_ids"] == [4]
    after = snapshot_json(root, 4)["indexManifest"]
    assert after and after != index
    before_entries = read_avro(Path(root) / "manifest" / index)
    dropped = [e for e in before_entries if any(dt.encode() in e["_PARTITION"] for dt in EXPIRED)]
    assert dropped and len(dropped) < len(before_entries)
    assert read_avro(Path(root) / "manifest" / after) == [e for e in before_entries if e not in dropped]
    for dt in EXPIRED:
        model.drop(dt)
    for number in (4, 5):
        upsert(pp, "t", model.next_round(SEED, number))
    got = rows_of(pp.read("t"))
    assert got == model.rows()
    assert len({(r[0], r[1]) for r in got}) == len(got)  # no key in two buckets


def test_rewrites_are_refused_and_maintain_skips_them_on_a_pypaimon_pk_table(pp: Paimon, tmp_path: Path) -> None:
    options = {"record-level.expire-time": "1 d", "record-level.time-field": "id", "compaction.max.file-num": "3"}
    root, model = _pk_table(pp, rounds=3, **options)
    before = files_under(root)
    for name in ("compact", "expire-records"):
        result = CliRunner().invoke(cli, [name, root])
        assert result.exit_code == 1
        assert result.stderr.startswith(f"error: {name}: the table has a primary key; tablefmt rewrites append")
        assert result.stderr.count("\n") == 1
    assert files_under(root) == before

    result = CliRunner().invoke(cli, ["maintain", root, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[0])
    assert report["ok"] is True and sorted(report["not_applicable"]) == ["compact", "expire-records"]
    assert report["operations"]["expire-partitions"]["expired_partitions"] == [{"dt": dt} for dt in EXPIRED]
    for dt in EXPIRED:
        model.drop(dt)
    assert rows_of(pp.read("t")) == model.rows()
    assert missing_references(root) == []


def test_a_drop_copies_files_paimon_upgraded_to_a_higher_level(pp: Paimon) -> None:
    """Paimon's compaction "upgrades" a file that overlaps nothing: DELETE at level 0 and ADD at level 5 of the same
    name, in one COMPACT snapshot (pypaimon 2.1.0 does not compact; the upgrade is committed here as Paimon's would
    be). File identity includes the level: the drop must delete the level-5 entry, copied exactly."""
    root, model = _pk_table(pp)
    ctx = Table.open(root).context
    latest = ctx.store.latest_snapshot()
    assert latest is not None
    oldest: dict[tuple[bytes, int], ManifestEntry] = {}
    for entry in live_entries(ctx.store, latest, ctx.partition_codec(), None, 1):
        key = (entry.partition, entry.bucket)
        if key not in oldest or entry.file.max_sequence_number < oldest[key].file.max_sequence_number:
            oldest[key] = entry
    upgraded = [e for (partition, _), e in sorted(oldest.items()) if b"2020-01-01" in partition]
    assert upgraded
    request = CommitRequest(
        kind=ChangeKind.REPLACE,
        new_files=[
            NewDataFile(
                partition=e.partition,
                partition_values=("2020-01-01",),
                partition_path="dt=2020-01-01",
                bucket=e.bucket,
                total_buckets=e.total_buckets,
                meta=dataclasses.replace(e.file, level=5),
                path=f"{root}/dt=2020-01-01/bucket-{e.bucket}/{e.file.file_name}",
            )
            for e in upgraded
        ],
        replaced_files=tuple(upgraded),
        snapshot_kind=CommitKind.COMPACT,
    )
    outcome = Committer(ctx.store, ctx.schema).commit(request)
    assert outcome.created and outcome.snapshot is not None and outcome.snapshot.id == 7
    assert rows_of(pp.read("t")) == model.rows()  # an upgrade changes no row

    result = _cli("expire-partitions", root)
    assert result["snapshot_ids"] == [8]
    assert_exact_drop(root, 8, EXPIRED, levels=(0, 5))
    upgraded_names = {e.file.file_name for e in upgraded}
    deleted_at_5 = {e["_FILE"]["_FILE_NAME"] for e in delta_entries(root, 8) if e["_FILE"]["_LEVEL"] == 5}
    assert deleted_at_5 == upgraded_names
    for dt in EXPIRED:
        model.drop(dt)
    assert rows_of(pp.read("t")) == model.rows()
    upsert(pp, "t", model.next_round(SEED, 7))
    assert rows_of(pp.read("t")) == model.rows()
