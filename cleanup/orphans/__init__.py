"""Remove orphan files: files the table format wrote that no snapshot, tag, changelog or branch references.

Plan, then execute (``table.maintenance.remove_orphan_files`` does both; a dry run stops after planning):

1. **Candidates first.** List the table's own directories in parallel (:mod:`.file_census`) and keep, by name,
   the files whose names the format produces and whose mtime is older than the cutoff. Unknown names are
   reported, never deleted; metadata roots are never candidates.
2. **Then references.** Read every root of the main table and of every branch (snapshots, tags, changelogs;
   :mod:`.references`), their manifest lists and their manifests, and drop from the candidates every name any of
   them mentions: manifest lists, index manifests, statistics files, manifests, and the file name and extra files
   of every ADD *and* DELETE entry. Only candidates are held in memory; referenced names are never collected. A
   root that vanished concurrently is skipped; any unreadable root, list or manifest stops the run before deletion.
   Manifests are read only when data candidates exist, and then only those that can name a data file no other
   read manifest names (:class:`.references.DataManifestSelection`: live state of each run of snapshots plus the
   deltas up to its last DELETE); the manifest lists that selection needs are read first, every other list only
   when an old manifest-like candidate is still unreferenced after them.
   On the local filesystem, data, manifest and metadata directories are listed without a stat per file; only the
   files left unreferenced are stat'ed, after the references were read (as safe: table files are never
   rewritten, so a later stat sees the same mtime).
3. **Delete** what is left through the kernel Deleter (on S3: DeleteObjects of 1,000 keys, in parallel, with no
   existence check: the census listed every orphan; elsewhere batches spread over the threads); report only what
   the store confirms deleted. Then remove partition and bucket directories that are
   empty (non-recursively, never on object stores, never the table root or a metadata directory).

Listing candidates before reading references closes the race of Paimon #3074: a file committed after step 2's
listing was either written after step 1 (not a candidate) or is younger than the cutoff (not a candidate), unless
a writer took longer than the cutoff between writing a file and committing it. The cutoff is the only protection of
such in-flight files, hence its minimum of one hour (``force`` lowers it; a cutoff in the future is always refused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tableformat.lazy_module import lazy_attributes

if TYPE_CHECKING:
    from .candidates import CandidateSet
    from .execute import dry_run_result, execute_orphan_plan
    from .model import MIN_OLDER_THAN_MS, OrphanFile, OrphanPlan, OrphanResult, resolve_older_than_ms
    from .operation import ORPHAN_CLEANUP, OrphanConfig
    from .plan import plan_orphan_removal
else:  # each name's module is imported when the name is first read (start-up: docs/benchmarks.md)
    __getattr__ = lazy_attributes(
        __name__,
        {
            "CandidateSet": ".candidates",
            "dry_run_result": ".execute",
            "execute_orphan_plan": ".execute",
            "MIN_OLDER_THAN_MS": ".model",
            "OrphanFile": ".model",
            "OrphanPlan": ".model",
            "OrphanResult": ".model",
            "resolve_older_than_ms": ".model",
            "ORPHAN_CLEANUP": ".operation",
            "OrphanConfig": ".operation",
            "plan_orphan_removal": ".plan",
        },
    )

__all__ = [
    "MIN_OLDER_THAN_MS",
    "ORPHAN_CLEANUP",
    "CandidateSet",
    "OrphanConfig",
    "OrphanFile",
    "OrphanPlan",
    "OrphanResult",
    "dry_run_result",
    "execute_orphan_plan",
    "plan_orphan_removal",
    "resolve_older_than_ms",
]
