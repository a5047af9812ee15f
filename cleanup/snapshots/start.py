"""The reads a snapshot expiration plan starts with, all at once on object stores: the EARLIEST and LATEST hints
(with the snapshots they name, read), the tags (with their listing versions), the consumers and the branch roots."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tableformat.context import TableContext
from tableformat.errors import SnapshotNotFoundError
from tableformat.layout import EARLIEST, LATEST, TAG_PREFIX
from tableformat.model.snapshot import Consumer, Snapshot, Tag
from tableformat.parallel import executor
from tableformat.threads import InlineExecutor

from ..roots import References, Root, keeps_whole
from .changelog import produces_changelog
from .metadata import MetadataCache


def branch_roots(ctx: TableContext, unchanged: Mapping[str, str] | None = None) -> tuple[list[Root], set[str]]:
    """Every snapshot and tag of every branch, read (unreadable branch metadata raises: nothing may be deleted),
    except those listed with the version ``unchanged`` gives for their label: (roots read, labels left unread).

    Also the main table's long-lived changelogs without a changelog manifest list (``changelog/changelog-<id>`` of
    ``changelog-producer=none``: Paimon keeps their manifest lists and data files for the changelog), which protect
    like a branch root; the others (with a changelog list, or a compaction's of a changelog producer) keep their base
    and delta lists no longer, and protect only the changelog and the files they name (attached.py)."""
    refs = References(ctx, InlineExecutor(), 1)
    roots = refs.collect_roots(include_main=False, unchanged=unchanged, main_changelogs=True)
    produce = produces_changelog(ctx)
    names_only = [r.kind == "changelog" and not r.branch and not keeps_whole(r.snapshot, produce) for r in roots]
    return [r for r, only in zip(roots, names_only) if not only], refs.unchanged_labels


class LatestVanished(SnapshotNotFoundError):
    """The latest snapshot was listed and is gone when read: only a rollback removes the latest snapshot, so the
    plan is given up (nothing to do now) rather than failed."""


class PlanStart:
    """The first reads of one plan. ``read`` reads a snapshot through the planner's cache (None: missing), ``ids``
    lists every snapshot id (only when a hint is missing or stale). The earliest and the latest snapshot are read
    (``read`` keeps them)."""

    def __init__(
        self,
        ctx: TableContext,
        cache: MetadataCache,
        read: Callable[[int], tuple[Snapshot, int] | None],
        ids: Callable[[], list[int]],
    ) -> None:
        self.ctx = ctx
        self.cache = cache
        self._cached_read = read
        self._ids = ids
        self._locks: dict[int, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self.earliest_hint: int | None = None
        self.tag_versions: dict[str, str] = {}
        """Listing version of each tag read, by name."""

    def _read(self, snapshot_id: int) -> tuple[Snapshot, int] | None:
        """``read``, one at a time per id: when EARLIEST and LATEST name the same snapshot, both jobs ask for it at
        once, and the second one takes the first one's read from the planner's cache."""
        with self._locks_lock:
            lock = self._locks.setdefault(snapshot_id, threading.Lock())
        with lock:
            return self._cached_read(snapshot_id)

    def _tags(self) -> list[Tag]:
        store = self.ctx.store
        for attempt in range(2):
            infos = {info.name[len(TAG_PREFIX) :]: info.version for info in store.tag_infos()}
            try:
                tags = self.cache.read_all(store.read_tag, list(infos), 1)
            except SnapshotNotFoundError:  # a tag was deleted between listing and reading: list again once
                if attempt:
                    raise
                continue
            self.tag_versions = infos
            return tags
        raise AssertionError("unreachable")

    def _all(self, *checks: Callable[[], bool]) -> bool:
        """Whether every check holds: one after another, stopping at the first that fails, or on object stores all
        at once (one round trip; a stale hint then costs the checks after the failing one too)."""
        if not self.cache.parallel:
            return all(check() for check in checks)
        with executor(len(checks), "tablefmt-hint") as pool:
            futures = [pool.submit(check) for check in checks]
            results = [future.result() for future in futures]  # every answer (or the first error) before judging
        return all(results)

    def _earliest(self) -> int | None:
        """EARLIEST if that snapshot exists and the one before it does not, else the listing's min; the hinted
        snapshot is read (it starts the range) rather than checked with a request of its own."""
        store = self.ctx.store
        self.earliest_hint = hint = store.read_hint(EARLIEST)
        if hint is not None and self._all(
            lambda: self._read(hint) is not None, lambda: not store.snapshot_exists(hint - 1)
        ):
            return hint
        ids = self._ids()
        return ids[0] if ids else None

    def _latest(self) -> int | None:
        """LATEST if snapshot LATEST + 1 does not exist and snapshot LATEST does, else the listing's max. The latest
        snapshot is read, not only found: the plan keeps what it holds, so an unreadable one stops the plan (a
        snapshot file is never visible half written: damage, not a commit in progress)."""
        store = self.ctx.store
        hint = store.read_hint(LATEST)
        if hint is not None and self._all(
            lambda: not store.snapshot_exists(hint + 1), lambda: self._read(hint) is not None
        ):
            return hint
        ids = self._ids()
        if ids and self._read(ids[-1]) is None:
            raise LatestVanished(
                f"the latest snapshot {ids[-1]} disappeared while planning (a rollback removed it): nothing done"
            )
        return ids[-1] if ids else None

    def run(self, started: Callable[[int | None], None]) -> tuple[int | None, list[Tag], list[Consumer], list[Root]]:
        """(latest, tags, consumers, branch roots); ``started(earliest)`` is called as soon as the earliest snapshot is
        known, even when another read fails (the planner compares with it to tell a concurrent expirer from damage).
        A separate small pool: each job uses the workers for its own reads."""
        jobs: list[Callable[[], Any]] = [
            self._earliest,
            self._latest,
            self._tags,
            self.ctx.store.consumers,
            lambda: branch_roots(self.ctx)[0],
        ]
        with executor(len(jobs) if self.cache.parallel else 1, "tablefmt-plan") as pool:
            futures = [pool.submit(job) for job in jobs]
            started(futures[0].result())
            latest, tags, consumers, branches = (future.result() for future in futures[1:])
        return latest, tags, consumers, branches
