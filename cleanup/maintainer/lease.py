"""The maintenance lease: at most one maintainer works on a table at a time, across processes and hosts.

Leases are files ``.tablefmt/lease-<generation>`` made with the FileIO's atomic create-if-absent (local disk and
S3 alike), never overwritten. The highest generation is the current lease. To take a table, a maintainer reads it:
held by another and not expired (plus a clock-skew margin) -> skip; otherwise it creates the next generation, and of
two maintainers racing for it exactly one succeeds. Renewal is the holder creating the next generation itself;
release is a next generation with ``expires_ms = 0``. Older generations are deleted by whoever creates a newer one.

Before every delete or write of a run (through :class:`~tableformat.io.guarded.GuardedFileIO`) the holder calls
:meth:`TableLease.check`: it renews when half the lease has passed, and raises LeaseLostError when the lease expired
or a newer generation exists (taken over after this maintainer stalled), so a maintainer that lost its lease stops
before its next delete. The window left is one delete batch after a check; docs/maintain.md says so.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from typing import NoReturn

from tableformat.clock import Clock, system_clock
from tableformat.errors import LeaseLostError
from tableformat.model.maintain import Lease
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)

CLOCK_SKEW_MS = 30_000
"""Another host's lease is taken over only this long after it expired (clocks of hosts differ a little)."""


def new_owner() -> str:
    """A maintainer run's identity: unique even for two maintainers on one host."""
    return uuid.uuid4().hex


class TableLease:
    """One maintainer's lease on one table (``store`` must write straight to storage, not through the guard)."""

    def __init__(
        self, store: MetadataStore, owner: str, duration_ms: int, clock: Clock = system_clock, *, host: str = ""
    ) -> None:
        self.store = store
        self.owner = owner
        self.duration_ms = duration_ms
        self.clock = clock
        self.host = host or socket.gethostname()
        self.held: Lease | None = None
        self.holder: Lease | None = None
        """The other maintainer's live lease when acquire() returned False (None: lost a race to create)."""
        self.lost = ""
        """Why the lease was lost ('' while held, or when never taken or released): every later check says it."""
        self._lock = threading.Lock()
        """One check at a time: a deleter's parallel batches check at once, and two of them renewing together would
        race for the same next generation (the loser taking it for a takeover)."""

    def _new(self, generation: int, expires_ms: int | None = None) -> Lease:
        now = self.clock()
        return Lease(
            generation=generation,
            owner=self.owner,
            host=self.host,
            pid=os.getpid(),
            acquired_ms=now,
            expires_ms=now + self.duration_ms if expires_ms is None else expires_ms,
        )

    def acquire(self) -> bool:
        """Take the lease; False when another maintainer holds it (``holder`` says who) or won the race.
        CorruptMetadataError when the current lease cannot be read (the table is then left alone)."""
        generations = self.store.lease_generations()
        top = self.store.read_lease(generations[-1]) if generations else None
        now = self.clock()
        if top is not None and top.owner != self.owner and not top.released and now < top.expires_ms + CLOCK_SKEW_MS:
            self.holder = top
            return False
        lease = self._new(generations[-1] + 1 if generations else 0)
        if not self.store.create_lease(lease):
            self.holder = None
            return False
        self.held, self.lost = lease, ""
        if top is not None and top.owner != self.owner and not top.released:
            log.warning("took over the expired maintenance lease of %s (pid %d) on %s", top.host, top.pid, self.where)
        self._delete_older(generations)
        return True

    @property
    def where(self) -> str:
        return self.store.io.url(self.store.layout.root)

    def _delete_older(self, generations: list[int]) -> None:
        try:
            self.store.delete_leases(generations)
        except OSError as exc:  # stale generations are harmless: the highest one counts
            log.info("could not delete old lease files of %s: %s", self.where, exc)

    def check(self) -> None:
        """Raise LeaseLostError unless this maintainer still holds the lease; renew it when half has passed. Once
        lost, every later check raises with the same reason (expired, taken over): a clean-up that writes after the
        first refusal must not report the loss as 'no lease held'."""
        with self._lock:
            held = self.held
            if held is None:
                raise LeaseLostError(self.lost or f"no maintenance lease held on {self.where}")
            now = self.clock()
            if now >= held.expires_ms:
                self._lose(f"the maintenance lease on {self.where} expired; stopping before the next change")
            if now >= held.acquired_ms + self.duration_ms // 2:
                renewed = self._new(held.generation + 1)
                if not self.store.create_lease(renewed):
                    self._lose(f"the maintenance lease on {self.where} was taken over; stopping")
                self.held = renewed
                self._delete_older([held.generation])
                return
            if self.store.lease_exists(held.generation + 1):
                self._lose(f"the maintenance lease on {self.where} was taken over; stopping")

    def _lose(self, reason: str) -> NoReturn:
        self.held, self.lost = None, reason
        raise LeaseLostError(reason)

    def release(self) -> None:
        """Give the lease up (a released next generation), unless it was lost meanwhile."""
        with self._lock:
            held, self.held = self.held, None
        if held is None:
            return
        try:
            if self.store.create_lease(self._new(held.generation + 1, expires_ms=0)):
                self._delete_older([held.generation])
        except OSError as exc:  # it expires by itself
            log.warning("could not release the maintenance lease on %s: %s", self.where, exc)
