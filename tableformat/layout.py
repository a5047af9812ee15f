"""Where every file of a table lives, and the checks that keep names taken from metadata inside the table root."""

from __future__ import annotations

import itertools
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from tableformat.errors import UnsafePathError

SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
TAG_PREFIX = "tag-"
CONSUMER_PREFIX = "consumer-"
MANIFEST_PREFIX = "manifest-"
MANIFEST_LIST_PREFIX = "manifest-list-"
LATEST = "LATEST"
EARLIEST = "EARLIEST"
BUCKET_PREFIX = "bucket-"
BRANCH_DIR = "branch"
MANIFEST_DIR = "manifest"
STATISTICS_DIR = "statistics"
INDEX_DIR = "index"
SNAPSHOT_DIR = "snapshot"
SCHEMA_DIR = "schema"
TAG_DIR = "tag"
CONSUMER_DIR = "consumer"
CHANGELOG_DIR = "changelog"
METADATA_DIRS = (SNAPSHOT_DIR, SCHEMA_DIR, TAG_DIR, CONSUMER_DIR, CHANGELOG_DIR)
"""Directories of metadata roots, in the table root and in every branch: only temp files there can be orphans."""
TABLE_DIRS = frozenset({*METADATA_DIRS, MANIFEST_DIR, STATISTICS_DIR, INDEX_DIR, BRANCH_DIR})
"""Every directory of the table root that holds metadata (data directories are everything else the format makes)."""
INDEX_MANIFEST_PREFIX = "index-manifest-"
"""Index manifests: ``manifest/index-manifest-<uuid>-<n>`` (a snapshot's ``indexManifest``)."""
INDEX_FILE_PREFIX = "index-"
"""Index files (deletion vectors, hash indexes): ``index/index-<uuid>-<n>`` (``FileStorePathFactory.INDEX_PREFIX``)."""
STATISTICS_PREFIX = "stat-"
"""Statistics files: ``statistics/stat-<uuid>-<n>`` (a snapshot's ``statistics``)."""
CHANGELOG_PREFIX = "changelog-"
EXPIRE_JOURNAL_PREFIX = ".expire-journal-"
"""Expiration journals: ``snapshot/.expire-journal-<plan id>`` (cleanup/snapshots/journal.py)."""
BRANCH_PREFIX = "branch-"
MAINTAIN_DIR = ".tablefmt"
"""The maintainer's lease and state (``tablefmt maintain``): hidden, so that no reader or cleaner takes it for data."""
LEASE_PREFIX = "lease-"
CLAIM_PREFIX = "claim-"
"""A run's claim on the table (tableformat/claims.py): ``claim-<kind>-<owner>``."""
MAINTAIN_STATE = "maintain-state"
AUDIT_DIR = "audit"
"""The audit ledger, ``.tablefmt/audit/`` (tableformat/audit.py): one record per run, ``<run id>.parquet``, and for a
run that crashed before recording, ``<run id>.crashed.parquet`` written by the run that noticed."""
AUDIT_SUFFIX = ".parquet"
AUDIT_CRASHED_SUFFIX = ".crashed.parquet"
ERASURES_DIR = "erasures"
"""Erasures whose purge is pending (docs/erase.md): ``.tablefmt/erasures/erasure-<snapshot id>``."""
ERASURE_PREFIX = "erasure-"
UNDO_DIR = "undo"
"""What the undo window holds, ``.tablefmt/undo/<run id>/`` (cleanup/kernel/deferral.py): the run's ``held-<n>`` lists
of deferred files, ``saved/<path>`` copies of the snapshot, tag, changelog and consumer files it deleted, and
``released-<run id>`` lists of files an undo took back into the table."""
UNDO_HELD_PREFIX = "held-"
UNDO_PENDING_PREFIX = "pending-"
"""``pending-<n>``: files a run is about to take out of the table: kept from orphan cleanup, never purged."""
UNDO_RELEASED_PREFIX = "released-"
UNDO_SAVED_DIR = "saved"
METADATA_ENTRY_KINDS = ("snapshot", "tag", "changelog", "consumer")
"""The files that name a table state (a reader finds them by listing): deleted at once even inside an undo window,
after a copy is saved (cleanup/kernel/deferral.py)."""

_TAG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}")
"""Matched in full (``fullmatch``: a trailing newline does not pass, as it would with ``$``)."""
_UNSAFE_IN_NAME = re.compile(r"[/\\\x00:]")
"""A directory separator (either kind), NUL or a scheme/drive colon."""


def check_file_name(name: str, *, what: str = "file name") -> str:
    """A bare file name from metadata: no directory part, no '..', no scheme. Returns it unchanged."""
    if not name or name in (".", "..") or _UNSAFE_IN_NAME.search(name):
        raise UnsafePathError(f"refusing {what} {name!r} from metadata: not a plain file name inside the table")
    return name


def check_tag_name(name: str) -> str:
    """Tag names become file names: letters, digits, '_', '.', '-' only."""
    if not _TAG_NAME.fullmatch(name) or name.isdigit():
        raise UnsafePathError(
            f"invalid tag name {name!r}: use letters, digits, '_', '.', '-' (not only digits, at most 200 chars)"
        )
    return name


def is_path_of_kind(parts: Sequence[str], kind: str) -> bool:
    """Whether a path relative to the table root (split at '/', data paths without the data-file directory) is
    one of ``kind``: 'snapshot', 'manifest' (lists too), 'changelog', 'tag', 'index', 'index manifest',
    'statistics', 'consumer', 'data' (a file in a bucket directory below partition directories) or 'dir' (a
    partition or bucket directory). The file-name grammar journals are checked against."""

    def named(directory: str, prefix: str) -> bool:
        return len(parts) == 2 and parts[0] == directory and parts[1].startswith(prefix)

    if kind == "snapshot":
        return named(SNAPSHOT_DIR, SNAPSHOT_PREFIX) and parts[1][len(SNAPSHOT_PREFIX) :].isdigit()
    if kind == "changelog":
        return named(CHANGELOG_DIR, CHANGELOG_PREFIX) and parts[1][len(CHANGELOG_PREFIX) :].isdigit()
    if kind == "tag":
        return named(TAG_DIR, TAG_PREFIX) and _is_tag_name(parts[1][len(TAG_PREFIX) :])
    simple = {
        "manifest": (MANIFEST_DIR, MANIFEST_PREFIX),
        "index": (INDEX_DIR, INDEX_FILE_PREFIX),
        "index manifest": (MANIFEST_DIR, INDEX_MANIFEST_PREFIX),
        "statistics": (STATISTICS_DIR, STATISTICS_PREFIX),
        "consumer": (CONSUMER_DIR, CONSUMER_PREFIX),
    }
    if kind in simple:
        return named(*simple[kind])
    if kind == "data":
        return len(parts) >= 2 and parts[-2].startswith(BUCKET_PREFIX) and all("=" in p for p in parts[:-2])
    if kind == "dir":
        return all("=" in p for p in parts[:-1]) and ("=" in parts[-1] or parts[-1].startswith(BUCKET_PREFIX))
    return False


def is_metadata_entry(relative: str) -> bool:
    """Whether a path relative to the table root is a snapshot, tag, changelog or consumer file of the table or of
    one of its branches (``branch/branch-<name>/snapshot/snapshot-3``)."""
    parts = relative.split("/")
    if len(parts) == 4 and parts[0] == BRANCH_DIR and parts[1].startswith(BRANCH_PREFIX):
        parts = parts[2:]
    return any(is_path_of_kind(parts, kind) for kind in METADATA_ENTRY_KINDS)


def _is_tag_name(name: str) -> bool:
    try:
        check_tag_name(name)
    except UnsafePathError:
        return False
    return True


def bucket_dir_name(bucket: int) -> str:
    """``bucket-N`` (Paimon's postpone bucket -2 is ``bucket-postpone``)."""
    return "bucket-postpone" if bucket == -2 else f"{BUCKET_PREFIX}{bucket}"


class NameFactory:
    """Unique file names: prefix + one UUID per factory + an increasing counter, as Paimon names files."""

    def __init__(self) -> None:
        self._uuid = str(uuid.uuid4())
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def next(self, prefix: str, suffix: str = "") -> str:
        """The next name, e.g. ``manifest-<uuid>-3`` or ``data-<uuid>-0.parquet``."""
        with self._lock:
            n = next(self._counter)
        return f"{prefix}{self._uuid}-{n}{suffix}"


@dataclass(frozen=True, slots=True)
class TableLayout:
    """Paths of a table's files under ``root`` (a FileIO path: '/abs/dir' or 'bucket/prefix'). Data files are placed
    by :class:`tableformat.data_paths.DataPaths` (relative to the root, under the table's data-path options)."""

    root: str

    def join(self, *parts: str) -> str:
        """root/part/part..."""
        root = self.root.rstrip("/")
        if len(parts) == 2 and parts[0] and parts[1] and "/" not in parts[0] and "/" not in parts[1]:
            return f"{root}/{parts[0]}/{parts[1]}"  # the usual directory + file name, without the general loop
        return "/".join([root, *[p.strip("/") for p in parts if p]])

    @property
    def snapshot_dir(self) -> str:
        return self.join("snapshot")

    @property
    def schema_dir(self) -> str:
        return self.join("schema")

    @property
    def tag_dir(self) -> str:
        return self.join("tag")

    @property
    def consumer_dir(self) -> str:
        return self.join("consumer")

    def snapshot_file(self, snapshot_id: int) -> str:
        return self.join("snapshot", f"{SNAPSHOT_PREFIX}{snapshot_id}")

    def hint_file(self, which: str) -> str:
        return self.join("snapshot", which)

    def schema_file(self, schema_id: int) -> str:
        return self.join("schema", f"{SCHEMA_PREFIX}{schema_id}")

    def manifest_file(self, name: str) -> str:
        return self.join(MANIFEST_DIR, check_file_name(name, what="manifest name"))

    def is_write_once(self, path: str) -> bool:
        """Whether ``path`` is a manifest list, manifest or index manifest of this table: files named by a fresh
        UUID, written once and never changed (a snapshot file is not: a rollback frees its id for another)."""
        directory, _, name = path.rpartition("/")
        return directory == self.join(MANIFEST_DIR) and name.startswith((MANIFEST_PREFIX, INDEX_MANIFEST_PREFIX))

    @staticmethod
    def manifest_rel(name: str) -> str:
        """``manifest/<name>`` relative to the table root (the name checked)."""
        return f"{MANIFEST_DIR}/{check_file_name(name, what='manifest name')}"

    def index_manifest_file(self, name: str) -> str:
        """``manifest/<name>``: index manifests share the manifest directory."""
        return self.join(MANIFEST_DIR, check_file_name(name, what="index manifest name"))

    def index_file(self, name: str, bucket_dir: str | None = None) -> str:
        """Where an index file without an external path lives: ``index/<name>`` (Paimon's default), or
        ``<bucket_dir>/<name>`` for a table with ``index-file-in-data-file-dir`` (``bucket_dir``: the data files'
        bucket directory relative to the root, e.g. ``dt=1/bucket-0``; ``IndexInDataFileDirPathFactory``)."""
        checked = check_file_name(name, what="index file name")
        if bucket_dir is None:
            return self.join(INDEX_DIR, checked)
        if any(part in ("", ".", "..") for part in bucket_dir.split("/")):
            raise UnsafePathError(f"refusing bucket directory {bucket_dir!r}: not a relative path inside the table")
        return self.join(bucket_dir, checked)

    @staticmethod
    def index_file_rel(name: str) -> str:
        """``index/<name>`` relative to the table root (the name checked)."""
        return f"{INDEX_DIR}/{check_file_name(name, what='index file name')}"

    def statistics_file(self, name: str) -> str:
        """``statistics/<name>`` (``FileStorePathFactory.statsFileFactory``)."""
        return self.join(STATISTICS_DIR, check_file_name(name, what="statistics file name"))

    @staticmethod
    def statistics_rel(name: str) -> str:
        """``statistics/<name>`` relative to the table root (the name checked)."""
        return f"{STATISTICS_DIR}/{check_file_name(name, what='statistics file name')}"

    def tag_file(self, name: str) -> str:
        return self.join("tag", TAG_PREFIX + check_tag_name(name))

    def consumer_file(self, consumer_id: str) -> str:
        return self.join("consumer", CONSUMER_PREFIX + check_file_name(consumer_id, what="consumer id"))

    def expire_journal_file(self, plan_id: str) -> str:
        return self.join("snapshot", EXPIRE_JOURNAL_PREFIX + check_file_name(plan_id, what="plan id"))

    def changelog_file(self, key: str) -> str:
        return self.join("changelog", CHANGELOG_PREFIX + check_file_name(key, what="changelog id"))

    @property
    def maintain_dir(self) -> str:
        return self.join(MAINTAIN_DIR)

    def lease_file(self, generation: int) -> str:
        return self.join(MAINTAIN_DIR, f"{LEASE_PREFIX}{generation}")

    def claim_file(self, kind: str, owner: str) -> str:
        return self.join(
            MAINTAIN_DIR,
            f"{CLAIM_PREFIX}{check_file_name(kind, what='claim kind')}-{check_file_name(owner, what='claim owner')}",
        )

    @property
    def audit_dir(self) -> str:
        return self.join(MAINTAIN_DIR, AUDIT_DIR)

    def audit_file(self, name: str) -> str:
        """``.tablefmt/audit/<name>`` (a record's file name, as listed)."""
        return self.join(MAINTAIN_DIR, AUDIT_DIR, check_file_name(name, what="audit record name"))

    @property
    def erasures_dir(self) -> str:
        return self.join(MAINTAIN_DIR, ERASURES_DIR)

    def erasure_file(self, snapshot_id: int) -> str:
        return self.join(MAINTAIN_DIR, ERASURES_DIR, f"{ERASURE_PREFIX}{int(snapshot_id)}")

    @property
    def undo_dir(self) -> str:
        return self.join(MAINTAIN_DIR, UNDO_DIR)

    def undo_run_dir(self, run_id: str) -> str:
        """``.tablefmt/undo/<run id>``: what the undo window holds for that run."""
        return self.join(MAINTAIN_DIR, UNDO_DIR, check_file_name(run_id, what="run id"))

    def undo_saved_file(self, run_id: str, relative: str) -> str:
        """``.tablefmt/undo/<run id>/saved/<relative>``: the copy of a metadata file the run deleted."""
        parts = relative.split("/")
        for part in parts:
            check_file_name(part, what="saved path")
        return self.join(MAINTAIN_DIR, UNDO_DIR, check_file_name(run_id, what="run id"), UNDO_SAVED_DIR, *parts)

    @property
    def maintain_state_file(self) -> str:
        return self.join(MAINTAIN_DIR, MAINTAIN_STATE)

    def branch(self, name: str) -> TableLayout:
        """The metadata root of branch ``name`` (``branch/branch-<name>``): its own snapshots, tags and schemas; it
        shares ``manifest/`` and the data directories with the main table."""
        return TableLayout(self.join(BRANCH_DIR, BRANCH_PREFIX + check_file_name(name, what="branch name")))

    def relative(self, path: str) -> str:
        """A path inside the root, relative to it."""
        prefix = self.root.rstrip("/") + "/"
        rest = path[len(prefix) :]
        if not path.startswith(prefix) or any(part in ("", ".", "..") for part in rest.split("/")):
            raise UnsafePathError(f"{path!r} is not inside the table root {self.root!r}")
        return rest


def parse_id(name: str, prefix: str) -> int | None:
    """The numeric id in ``<prefix><digits>`` or None for anything else (temp files, hints)."""
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix) :]
    return int(rest) if rest.isdigit() else None
