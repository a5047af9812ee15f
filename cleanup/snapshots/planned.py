"""What a snapshot expiration plan holds (plan.py decides it, execute.py carries it out, journal.py records it)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tableformat.layout import TableLayout
from tableformat.model.snapshot import Consumer

from ..roots import Root
from .metadata import TagRef


@dataclass(frozen=True, slots=True)
class PlannedFile:
    """A file to delete: path relative to the table root, size in bytes, and (data files) its extra files."""

    path: str
    size: int
    extras: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Attached:
    """The files a snapshot names besides its data files and data manifests that a plan deletes (attached.py)."""

    changelog_files: tuple[PlannedFile, ...] = ()
    """Changelog files (in bucket directories) ADDed in the changelog manifests below."""
    changelog_manifests: tuple[PlannedFile, ...] = ()
    changelog_manifest_lists: tuple[PlannedFile, ...] = ()
    statistics_files: tuple[PlannedFile, ...] = ()
    """``statistics/<name>``."""
    index_files: tuple[PlannedFile, ...] = ()
    """``index/<name>``: deletion vectors, hash indexes (the index files the index manifests below list)."""
    index_manifests: tuple[PlannedFile, ...] = ()
    """``manifest/index-manifest-<name>``."""

    def files(self) -> list[PlannedFile]:
        return [
            *self.changelog_files,
            *self.changelog_manifests,
            *self.changelog_manifest_lists,
            *self.statistics_files,
            *self.index_files,
            *self.index_manifests,
        ]

    def keeping(self, keep: Callable[[PlannedFile], bool]) -> Attached:
        """Only the files ``keep`` accepts."""
        return Attached(
            changelog_files=tuple(filter(keep, self.changelog_files)),
            changelog_manifests=tuple(filter(keep, self.changelog_manifests)),
            changelog_manifest_lists=tuple(filter(keep, self.changelog_manifest_lists)),
            statistics_files=tuple(filter(keep, self.statistics_files)),
            index_files=tuple(filter(keep, self.index_files)),
            index_manifests=tuple(filter(keep, self.index_manifests)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpirePlan:
    """Everything one expiration deletes, decided before anything is deleted. Immutable."""

    plan_id: str
    now_ms: int
    end: int | None
    """The snapshot that becomes EARLIEST (None when the table has no snapshot)."""
    expired_snapshots: tuple[int, ...] = ()
    changelog_roots: tuple[int, ...] = ()
    """Decoupled changelog lifecycle: the expired snapshots copied to ``changelog/changelog-<id>`` before their
    snapshot files are deleted (changelog.py)."""
    expired_changelogs: tuple[int, ...] = ()
    """Long-lived changelogs this plan expires (changelog_expiry.py); their files are ``changelog_root_files``."""
    changelog_root_files: tuple[PlannedFile, ...] = ()
    changelog_end: int | None = None
    """The first long-lived changelog kept: ``changelog/EARLIEST`` moves there before the changelogs are deleted."""
    fingerprints: tuple[tuple[int, str], ...] = ()
    """(id, base manifest list) of every expired snapshot and of ``end``: a re-run refuses a changed table."""
    snapshot_files: tuple[PlannedFile, ...] = ()
    data_files: tuple[PlannedFile, ...] = ()
    manifests: tuple[PlannedFile, ...] = ()
    manifest_lists: tuple[PlannedFile, ...] = ()
    tag_files: tuple[PlannedFile, ...] = ()
    consumer_files: tuple[PlannedFile, ...] = ()
    attached: Attached = field(default_factory=Attached)
    """The changelogs and statistics files only expired snapshots and tags named (attached.py)."""
    expired_tags: tuple[TagRef, ...] = ()
    protecting_tags: tuple[TagRef, ...] = ()
    protecting_branch_roots: tuple[TagRef, ...] = ()
    """Every snapshot and tag of every branch (named by label, e.g. 'branch b1 tag release'): branches share the
    main table's manifests and data files, so what they hold is kept like what a tag holds."""
    expired_consumers: tuple[str, ...] = ()
    consumer_cutoff_ms: int | None = None
    skipped_external: tuple[str, ...] = ()
    """Files of expired snapshots with an external path: never deleted by tablefmt, reported."""
    empty_dir_candidates: tuple[str, ...] = ()
    """Bucket and partition directories (relative, deepest first) that may be empty afterwards."""
    note: str = ""
    backlog: int = 0
    """Snapshots left expirable by ``snapshot.expire.limit`` (reason.py counts them); 0 when the limit did not
    decide the range."""
    tag_versions: tuple[tuple[str, str], ...] = ()
    """(name, listing version) of the tags this plan holds as expired or protecting, as planning listed them
    (execution re-reads only tags whose version changed). Not journaled."""
    branch_versions: tuple[tuple[str, str], ...] = ()
    """(label, listing version) of the branch roots this plan read (see protecting_branch_roots): execution's
    re-check reads only those listed with another version, or new. Not journaled."""
    earliest_hint: int | None = None
    earliest_hint_read: bool = False
    """The EARLIEST hint as planning read it (when ``earliest_hint_read``): execution advances it from there without
    reading it again. Not journaled: a run completing a journal reads the hint itself."""

    @property
    def is_empty(self) -> bool:
        return not (self.expired_snapshots or self.files() or self.expired_tags or self.expired_consumers)

    def files(self) -> list[PlannedFile]:
        """Every planned file, in deletion order: consumers, snapshots, tags, then the files of one step."""
        return [
            *self.consumer_files,
            *self.snapshot_files,
            *self.changelog_root_files,
            *self.tag_files,
            *self.step_files(),
        ]

    def step_files(self) -> list[PlannedFile]:
        """The files deleted in one step once nothing names them (execute.py step 7): data files, manifests, manifest
        lists, then the attached files; extra files not included."""
        return [*self.data_files, *self.manifests, *self.manifest_lists, *self.attached.files()]

    def file_count(self) -> int:
        return len(self.files()) + sum(len(f.extras) for f in self.step_files())


def new_plan_id() -> str:
    return str(uuid.uuid4())


def consumer_files(layout: TableLayout, dead: Sequence[Consumer]) -> tuple[PlannedFile, ...]:
    """The files of expired consumers (sizes unknown: 0)."""
    return tuple(PlannedFile(layout.relative(layout.consumer_file(c.consumer_id)), 0) for c in dead)


def consumers_only(layout: TableLayout, now_ms: int, dead: Sequence[Consumer], cutoff: int | None) -> ExpirePlan:
    """The plan of a table without snapshots: only its expired consumers go."""
    return ExpirePlan(
        plan_id=new_plan_id(),
        now_ms=now_ms,
        end=None,
        consumer_files=consumer_files(layout, dead),
        expired_consumers=tuple(c.consumer_id for c in dead),
        consumer_cutoff_ms=cutoff,
    )


def branch_ref(root: Root) -> TagRef:
    """How a plan records a branch root it protects (a re-created one is a different ref)."""
    return TagRef(root.label, root.snapshot.id, root.snapshot.base_manifest_list)


def manifest_files(sizes: dict[str, int]) -> tuple[PlannedFile, ...]:
    """Planned files in manifest/ from name -> size, by name (``TableLayout.manifest_rel``: the checked name under
    manifest/, without two path joins)."""
    return tuple(PlannedFile(TableLayout.manifest_rel(n), size) for n, size in sorted(sizes.items()))


def emptied_dirs(data: list[PlannedFile], depth: int) -> tuple[str, ...]:
    """Partition and bucket directories of the deleted data files (those below the first ``depth`` levels of their
    path), deepest first: removed only if empty."""
    dirs: set[str] = set()
    for parent in {planned.path.rsplit("/", 1)[0] for planned in data if "/" in planned.path}:
        parts = parent.split("/")
        dirs.update("/".join(parts[:level]) for level in range(depth + 1, len(parts) + 1))
    return tuple(sorted(dirs, key=lambda d: (-d.count("/"), d)))
