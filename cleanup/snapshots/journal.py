"""The expiration journal: the exact plan, written before anything is deleted, removed when the run finished.

File: ``<table>/snapshot/.expire-journal-<plan uuid>`` (UTF-8 JSON, written atomically by FileIO.write_bytes).
A run that finds a journal completes it first, so a crash at any point loses nothing: every file the plan lists is
deleted by a later run, after the plan has been re-checked against the tags that exist then. Java Paimon and
pypaimon list only ``snapshot-*``, ``EARLIEST`` and ``LATEST`` there; orphan cleanup treats the name as metadata
(cleanup/file_census.py). If a foreign orphan cleaner removes an old journal, nothing unsafe follows: the files it
listed are unreferenced by then (snapshot files go first) and become ordinary orphans.

Paths inside are relative to the table root and are checked on load against the only places expiration deletes
from (``snapshot/snapshot-N``, ``manifest/<name>``, ``tag/tag-<name>``, ``consumer/consumer-<id>``,
``statistics/stat-<name>``, ``index/index-<name>``, and ``[<data-file.path-directory>/]k=v/.../bucket-N/<file>``
paths of data, changelog and index files), so even a tampered journal cannot make a run delete anything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tableformat.codec.journal_codec import RowList
from tableformat.context import TableContext
from tableformat.data_paths import data_directory
from tableformat.errors import MaintenanceError, UnsafePathError
from tableformat.layout import INDEX_DIR, check_file_name, is_path_of_kind

from .metadata import TagRef
from .planned import Attached, ExpirePlan, PlannedFile


def journal_path(ctx: TableContext, plan_id: str) -> str:
    return ctx.layout.expire_journal_file(plan_id)


def list_journals(ctx: TableContext) -> list[str]:
    """Paths of pending journals (temp files of an interrupted write, ``..expire-journal-*.tmp``, are not)."""
    return ctx.store.expire_journals()


def _file(f: PlannedFile) -> list[Any]:
    return [f.path, f.size]


def _file_with_extras(f: PlannedFile) -> list[Any]:
    return [f.path, f.size, list(f.extras)]


def _files(files: Sequence[PlannedFile]) -> list[list[Any]]:
    return [_file(f) for f in files]


def _tags(refs: Sequence[TagRef]) -> list[list[Any]]:
    return [[r.name, r.snapshot_id, r.base_manifest_list] for r in refs]


def plan_to_document(plan: ExpirePlan) -> dict[str, Any]:
    """The journal document of a plan (long file lists encoded lazily, see codec.journal_codec.RowList)."""
    return {
        "planId": plan.plan_id,
        "nowMs": plan.now_ms,
        "end": plan.end,
        "expiredSnapshots": list(plan.expired_snapshots),
        "changelogRoots": list(plan.changelog_roots),
        "expiredChangelogs": list(plan.expired_changelogs),
        "changelogRootFiles": _files(plan.changelog_root_files),
        "changelogEnd": plan.changelog_end,
        "fingerprints": [list(fp) for fp in plan.fingerprints],
        "snapshotFiles": _files(plan.snapshot_files),
        "dataFiles": RowList(plan.data_files, _file_with_extras),
        "manifests": RowList(plan.manifests, _file),
        "manifestLists": RowList(plan.manifest_lists, _file),
        "tagFiles": _files(plan.tag_files),
        "consumerFiles": _files(plan.consumer_files),
        "changelogFiles": RowList(plan.attached.changelog_files, _file_with_extras),
        "changelogManifests": RowList(plan.attached.changelog_manifests, _file),
        "changelogManifestLists": RowList(plan.attached.changelog_manifest_lists, _file),
        "statisticsFiles": _files(plan.attached.statistics_files),
        "indexFiles": RowList(plan.attached.index_files, _file),
        "indexManifests": _files(plan.attached.index_manifests),
        "expiredTags": _tags(plan.expired_tags),
        "protectingTags": _tags(plan.protecting_tags),
        "protectingBranchRoots": _tags(plan.protecting_branch_roots),
        "expiredConsumers": list(plan.expired_consumers),
        "consumerCutoffMs": plan.consumer_cutoff_ms,
        "skippedExternal": list(plan.skipped_external),
        "emptyDirCandidates": list(plan.empty_dir_candidates),
    }


def write_journal(ctx: TableContext, plan: ExpirePlan) -> str:
    """Record the plan; returns the journal path. A failure here deletes nothing (the caller stops)."""
    return ctx.store.write_expire_journal(plan.plan_id, plan_to_document(plan))


def remove_journal(ctx: TableContext, path: str) -> None:
    ctx.store.delete_expire_journal(path)


# --- loading, with path checks -----------------------------------------------------------------------------------
def _check_components(path: str) -> list[str]:
    parts = path.split("/")
    for part in parts:
        check_file_name(part, what="journal path component")
    return parts


def _check_path(path: str, kind: str, data_dir: str = "") -> str:
    parts = _check_components(path)
    if kind == "index" and parts[0] != INDEX_DIR:  # index-file-in-data-file-dir: in a bucket directory
        kind = "data"
    if kind in ("data", "dir") and data_dir:  # data paths start with the table's data-file.path-directory
        prefix = data_dir.split("/")
        ok = len(parts) > len(prefix) and parts[: len(prefix)] == prefix
        if not ok:
            raise UnsafePathError(f"journal names {path!r}, which is not a {kind} path expiration may delete")
        parts = parts[len(prefix) :]
    ok = is_path_of_kind(parts, kind)
    if not ok:
        raise UnsafePathError(f"journal names {path!r}, which is not a {kind} path expiration may delete")
    return path


def _load_files(raw: Any, kind: str, *, with_extras: bool = False, data_dir: str = "") -> tuple[PlannedFile, ...]:
    result = []
    for item in raw:
        extras: tuple[str, ...] = ()
        if with_extras:
            extras = tuple(_check_path(str(e), kind, data_dir) for e in item[2])
        result.append(PlannedFile(_check_path(str(item[0]), kind, data_dir), int(item[1]), extras))
    return tuple(result)


def _load_tags(raw: Any) -> tuple[TagRef, ...]:
    return tuple(TagRef(str(name), int(sid), str(base)) for name, sid, base in raw)


def plan_from_document(doc: Mapping[str, Any], data_dir: str = "") -> ExpirePlan:
    """The plan a journal holds; its data paths must lie under ``data_dir`` (the table's data directory)."""
    cutoff = doc.get("consumerCutoffMs")
    return ExpirePlan(
        plan_id=str(doc["planId"]),
        now_ms=int(doc["nowMs"]),
        end=None if doc["end"] is None else int(doc["end"]),
        expired_snapshots=tuple(int(i) for i in doc["expiredSnapshots"]),
        changelog_roots=tuple(int(i) for i in doc.get("changelogRoots", [])),
        expired_changelogs=tuple(int(i) for i in doc.get("expiredChangelogs", [])),
        changelog_root_files=_load_files(doc.get("changelogRootFiles", []), "changelog"),
        changelog_end=None if doc.get("changelogEnd") is None else int(doc["changelogEnd"]),
        fingerprints=tuple((int(i), str(name)) for i, name in doc["fingerprints"]),
        snapshot_files=_load_files(doc["snapshotFiles"], "snapshot"),
        data_files=_load_files(doc["dataFiles"], "data", with_extras=True, data_dir=data_dir),
        manifests=_load_files(doc["manifests"], "manifest"),
        manifest_lists=_load_files(doc["manifestLists"], "manifest"),
        tag_files=_load_files(doc["tagFiles"], "tag"),
        consumer_files=_load_files(doc["consumerFiles"], "consumer"),
        attached=Attached(
            changelog_files=_load_files(doc.get("changelogFiles", []), "data", with_extras=True, data_dir=data_dir),
            changelog_manifests=_load_files(doc.get("changelogManifests", []), "manifest"),
            changelog_manifest_lists=_load_files(doc.get("changelogManifestLists", []), "manifest"),
            statistics_files=_load_files(doc.get("statisticsFiles", []), "statistics"),
            index_files=_load_files(doc.get("indexFiles", []), "index", data_dir=data_dir),
            index_manifests=_load_files(doc.get("indexManifests", []), "index manifest"),
        ),
        expired_tags=_load_tags(doc["expiredTags"]),
        protecting_tags=_load_tags(doc["protectingTags"]),
        protecting_branch_roots=_load_tags(doc.get("protectingBranchRoots", [])),
        expired_consumers=tuple(str(c) for c in doc["expiredConsumers"]),
        consumer_cutoff_ms=None if cutoff is None else int(cutoff),
        skipped_external=tuple(str(p) for p in doc["skippedExternal"]),
        empty_dir_candidates=tuple(_check_path(str(d), "dir", data_dir) for d in doc["emptyDirCandidates"]),
    )


def read_journal(ctx: TableContext, path: str) -> ExpirePlan | None:
    """The journal's plan; None if it vanished (another run completed it). Unreadable = MaintenanceError."""
    try:
        document = ctx.store.read_expire_journal(path)
    except OSError as exc:
        raise MaintenanceError(f"cannot read expiration journal {ctx.io.url(path)}: {exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise MaintenanceError(
            f"expiration journal {ctx.io.url(path)} is unreadable ({exc}); inspect it, then delete it to continue "
            "(files it lists are then left for orphan cleanup)"
        ) from exc
    if document is None:
        return None
    try:
        plan = plan_from_document(document, data_directory(ctx.options))
    except UnsafePathError as exc:
        raise MaintenanceError(f"expiration journal {ctx.io.url(path)} is unsafe, refusing it: {exc}") from exc
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        raise MaintenanceError(
            f"expiration journal {ctx.io.url(path)} is unreadable ({exc}); inspect it, then delete it to continue "
            "(files it lists are then left for orphan cleanup)"
        ) from exc
    if journal_path(ctx, plan.plan_id) != path:
        raise MaintenanceError(f"expiration journal {ctx.io.url(path)} holds plan {plan.plan_id}, not its own")
    return plan
