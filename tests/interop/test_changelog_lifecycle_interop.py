"""A decoupled changelog lifecycle on a primary-key table pypaimon 2.1.0 wrote with ``changelog-producer=input``:
tablefmt's expiration leaves ``changelog/changelog-<id>`` for each expired snapshot, keeps exactly the changelog
those name, expires the long-lived changelogs past ``changelog.num-retained.max`` with exactly the files only they
named, and pypaimon reads the result (its ChangelogManager reads tablefmt's long-lived changelogs; the latest
snapshot and the changelog of the retained range read the same as before).

The expected files are computed independently of tablefmt (the JSON, the manifests decoded with fastavro)."""

from __future__ import annotations

import json
from pathlib import Path

from support.tables import files_under, rows_of

from interop.helpers import Paimon, referenced_files, tablefmt_json
from interop.test_pk_expire_interop import ROUNDS, changelog_files, changelog_rows, commit_time, upserts

DECOUPLED = {"changelog.num-retained.max": "4", "changelog.time-retained": "1 d"}
"""Above the snapshot retention the run asks for (2): changelogs outlive their snapshots (Paimon's
changelogDecoupled); the newest 4 ids (5-8) keep their changelog, 1-4 expire whatever their age."""


def test_decoupled_changelogs_outlive_their_snapshots_and_pypaimon_reads_them(pp: Paimon) -> None:
    upserts(pp, "dc", DECOUPLED)
    root = Path(pp.path("dc"))
    latest = rows_of(pp.read("dc"))
    start = commit_time(pp, "dc", ROUNDS - 2)
    retained_changelog = changelog_rows(pp, "dc", start)  # the changelogs of snapshots 7 and 8
    snapshot_json = {i: (root / "snapshot" / f"snapshot-{i}").read_bytes() for i in range(1, ROUNDS + 1)}
    changelogs = {i: changelog_files(root, json.loads(snapshot_json[i])) for i in range(1, ROUNDS + 1)}
    assert all(changelogs.values())
    before = files_under(root)

    result = tablefmt_json("expire", str(root), "--retain-min", "2", "--retain-max", "2", "--time-retained", "0s")

    assert result["expired_snapshot_ids"] == [1, 2, 3, 4, 5, 6]
    assert result["expired_changelogs"] == 4 and result["expired_changelog_ids"] == [1, 2, 3, 4]
    assert sorted(p.name for p in (root / "changelog").iterdir()) == [
        "EARLIEST",
        "LATEST",
        "changelog-5",
        "changelog-6",
    ]
    for i in (5, 6):
        assert (root / "changelog" / f"changelog-{i}").read_bytes() == snapshot_json[i]
    after = files_under(root)
    expected = set().union(*(changelogs[i] for i in (5, 6, 7, 8)))
    for i in (ROUNDS - 1, ROUNDS):
        expected |= referenced_files(root, json.loads(snapshot_json[i]))
    data_and_manifests = {p for p in after if p.startswith(("manifest/", "dt="))}
    assert data_and_manifests == expected, (
        f"left: {sorted(data_and_manifests - expected)}, missing: {sorted(expected - data_and_manifests)}"
    )
    written_and_expired = {f"changelog/changelog-{i}" for i in (1, 2, 3, 4)}  # in this same run
    assert set(result["deleted_paths"]) == (before - after) | written_and_expired
    assert set().union(*(changelogs[i] for i in (1, 2, 3, 4))) <= before - after

    manager = pp.table("dc").changelog_manager()
    assert manager.earliest_long_lived_changelog_id() == 5 and manager.latest_long_lived_changelog_id() == 6
    for i in (5, 6):
        changelog = manager.changelog(i)
        assert changelog.id == i
        assert changelog.changelog_manifest_list == json.loads(snapshot_json[i])["changelogManifestList"]
    assert rows_of(pp.read("dc")) == latest
    assert changelog_rows(pp, "dc", start) == retained_changelog
