"""One deleter for every maintenance operation: batched, parallel, truthful about what it deleted.

Paths are relative to the table root and are joined to it here, so nothing outside the root can be named.
``FileIO.delete_files`` never deletes a directory and reports the paths that existed and are gone now; only those
are reported as deleted, and paths that were already gone are counted apart (``absent``). A caller that listed or
read the files in this operation passes ``listed=True``: then ``FileIO.delete_listed`` deletes them without asking
the store first whether they exist (on S3 that question costs a listing or a HEAD; DeleteObjects alone answers
"deleted" for a missing key too, which is why only files known to exist may go that way).

On stores that batch by themselves (``FileIO.bulk_delete``: S3, DeleteObjects of 1,000 keys, batches in parallel)
everything of one call goes to the store at once, so n files cost ceil(n / 1,000) requests. Elsewhere (local disk)
the files are split into batches spread over the threads. Directories are removed only when empty, one at a time,
never recursively, and never on object stores (where they do not exist and every attempt would cost a listing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Sequence
from typing import NamedTuple

from tableformat.errors import DeleteFailedError
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.parallel import executor

from .deferral import current_deferral, split_entries
from .ledger import note_deleted

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""Called with (files done, files planned) as deletion goes on."""

DELETE_BATCH = 1000
"""Most paths per FileIO.delete_files call (one S3 DeleteObjects request)."""

MIN_DELETE_BATCH = 100
"""Batches are not split below this to spread them over threads: a thread per handful of files costs more."""

ORDERED_BATCH = 64
"""Batch size of an ordered deletion (batches one after another, in order)."""


class DeletionFile(NamedTuple):
    """A file to delete: path relative to the table root and its size in bytes."""

    path: str
    size: int


class Existence(NamedTuple):
    """Which of some files exist, asked of the store ahead of their deletion (Deleter.ask_existence)."""

    present: frozenset[str]
    """Relative paths found as files."""
    unanswered: dict[str, str]
    """``{relative path: 'path: reason'}`` of files whose existence could not be told (a directory, an error)."""
    error: OSError | None = None
    """The error that left the whole question unanswered."""


def _failed_paths(failures: Sequence[str], paths: Container[str]) -> dict[str, str]:
    """``{path: failure}`` for the failures (``'path: reason'``) that name one of ``paths``: the path is the longest
    prefix before a ``': '`` that is one of them (a table root or a reason may contain ``': '`` too)."""
    found: dict[str, str] = {}
    for failure in failures:
        end = failure.rfind(": ")
        while end > 0 and failure[:end] not in paths:
            end = failure.rfind(": ", 0, end)
        if end > 0:
            found[failure[:end]] = failure
    return found


class Deleter:
    """Deletes files of one table and keeps the account: deleted paths and bytes, failures, progress."""

    def __init__(
        self,
        file_io: FileIO,
        layout: TableLayout,
        threads: int,
        *,
        progress: Progress | None = None,
        total: int = 0,
        label: str = "deleted",
    ) -> None:
        self.io = file_io
        self.layout = layout
        self.threads = max(1, threads)
        self.progress = progress
        self.total = total
        self.label = label
        self.done = 0
        self.deleted: list[str] = []
        self.deleted_bytes = 0
        self.failures: list[str] = []
        """``'path: reason'`` of every file that could not be deleted."""
        self.absent: list[str] = []
        """Files that were already gone (deleted by another run, or by hand): never reported as deleted."""
        self.first_error: BaseException | None = None
        """The first storage error met (for chaining when the caller stops)."""
        self.held: list[str] = []
        """Files the undo window keeps instead of deleting (kernel/deferral.py), relative to the table root."""
        self.held_bytes = 0

    def _batch(
        self, files: Sequence[tuple[str, int]], listed: bool = False
    ) -> tuple[list[tuple[str, int]], list[str], OSError | None, list[str]]:
        """(deleted (path, size), failures, first error, paths already gone) of one FileIO call."""
        root = self.layout.root.rstrip("/") + "/"
        by_path = {root + rel.strip("/"): (rel, size) for rel, size in files}
        delete = self.io.delete_listed if listed else self.io.delete_files
        try:
            deleted = [by_path[p] for p in delete(list(by_path)) if p in by_path]
            failed: list[str] = []
            error: OSError | None = None
        except DeleteFailedError as exc:
            deleted = [by_path[p] for p in exc.deleted if p in by_path]
            failed, error = list(exc.failed), exc
        except OSError as exc:
            return [], [f"{rel}: {exc}" for rel, _ in files], exc, []
        done = {rel for rel, _ in deleted}
        refused = _failed_paths(failed, by_path)
        absent = [rel for path, (rel, _) in by_path.items() if rel not in done and path not in refused]
        return deleted, failed, error, absent

    def ask_existence(self, files: Sequence[tuple[str, int]]) -> Existence:
        """Which of the files exist, asked of the store by itself (FileIO.existing_files: on object stores one
        listing per directory), so that the question can go out while the operation does something else; the
        answer is handed to :meth:`delete` later. Nothing is recorded here."""
        root = self.layout.root.rstrip("/") + "/"
        by_path = {root + rel.strip("/"): rel for rel, _ in files}
        try:
            present, failed = self.io.existing_files(list(by_path))
        except OSError as exc:
            return Existence(frozenset(), {rel: f"{rel}: {exc}" for rel in by_path.values()}, exc)
        unanswered = {by_path[path]: failure for path, failure in _failed_paths(failed, by_path).items()}
        return Existence(frozenset(by_path[p] for p in present if p in by_path), unanswered)

    def delete(
        self,
        files: Sequence[tuple[str, int]],
        *,
        ordered: bool = False,
        listed: bool = False,
        existence: Existence | None = None,
    ) -> list[str]:
        """Delete the files (``(relative path, size)`` pairs); returns the paths actually deleted, in order of
        confirmation. Failures are recorded, not raised.

        ``ordered``: batches one after another in the given order (e.g. snapshot files ascending). ``listed``: this
        operation saw every file in a listing or read it, so it existed (see the module docstring). ``existence``:
        the store's answer to :meth:`ask_existence` for (a superset of) the files, taken before this call: files it
        found are deleted as listed, the others are recorded as absent or, unanswered, as failures.
        """
        files = self._defer(files)
        if existence is not None:
            failed = [existence.unanswered[rel] for rel, _ in files if rel in existence.unanswered]
            absent = [rel for rel, _ in files if rel not in existence.present and rel not in existence.unanswered]
            self._record([], failed, existence.error if failed else None, absent)
            files, listed = [f for f in files if f[0] in existence.present], True
        if not files:
            return []
        if self.io.bulk_delete:
            size = DELETE_BATCH if ordered else len(files)
        elif ordered:
            size = ORDERED_BATCH
        else:
            size = min(DELETE_BATCH, max(MIN_DELETE_BATCH, -(-len(files) // self.threads)))
        batches = [files[i : i + size] for i in range(0, len(files), size)]
        gone: list[str] = []
        if ordered or len(batches) == 1:
            for batch in batches:
                gone += self._record(*self._batch(batch, listed))
            return gone
        with executor(min(self.threads, len(batches)), "tablefmt-delete") as pool:
            futures = [pool.submit(self._batch, batch, listed) for batch in batches]
        raised: BaseException | None = None
        for future in futures:  # every batch that went through is recorded, also when another one raised
            try:
                gone += self._record(*future.result())
            except BaseException as exc:  # e.g. the lease guard refused this batch: re-raised once all are recorded
                raised = raised or exc
        if raised is not None:
            raise raised
        return gone

    def _defer(self, files: Sequence[tuple[str, int]]) -> Sequence[tuple[str, int]]:
        """Inside an undo window: save copies of the metadata entries among ``files`` and hold the rest; returns
        what is deleted now (kernel/deferral.py). Outside one: ``files``."""
        deferral = current_deferral()
        if deferral is None or not files:
            return files
        entries, rest = split_entries(deferral, self.layout.root, files)
        held = deferral.hold(self.layout.root, rest)
        self.held += [path for path, _ in held]
        self.held_bytes += sum(size for _, size in held)
        self.done += len(held)
        if held and self.progress is not None:
            self.progress(self.done, self.total)
        deferral.save(self.layout.root, entries, self.threads)
        return entries

    def _record(
        self, deleted: list[tuple[str, int]], failed: list[str], error: OSError | None, absent: list[str]
    ) -> list[str]:
        for rel in absent:
            log.info("%s: %s was already gone", self.label, rel)
        self.absent += absent
        for rel, size in deleted:
            log.info("%s %s", self.label, rel)
            self.deleted.append(rel)
            self.deleted_bytes += size
            note_deleted(rel, size)
        for failure in failed:
            log.warning("could not delete %s", failure)
        self.failures += failed
        if error is not None and self.first_error is None:
            self.first_error = error
        self.done += len(deleted) + len(failed) + len(absent)
        if self.progress is not None:
            self.progress(self.done, self.total)
        return [rel for rel, _ in deleted]

    def remove_empty_dirs(self, dirs: Sequence[str]) -> list[str]:
        """Remove the directories (relative, deepest first) that are empty; non-recursive, skipped on object
        stores. Returns those removed; a directory with anything left in it stays."""
        if self.io.is_object_store:
            return []
        removed = []
        for rel in dirs:
            try:
                if self.io.remove_empty_dir(self.layout.join(rel)):
                    removed.append(rel)
                    log.info("removed empty directory %s", rel)
            except OSError as exc:
                log.warning("could not remove empty directory %s: %s", rel, exc)
        return removed
