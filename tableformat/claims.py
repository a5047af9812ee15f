"""Claims: what keeps a rollback and the runs that delete or rewrite metadata from overlapping, across processes and
hosts (docs/reliability.md, "Rollback and maintenance never overlap").

A run writes its claim, ``.tablefmt/claim-<kind>-<owner>``, *then* lists the claims of others. A maintenance claim
(any number at once: expiration, orphan cleanup, partition and record expiry, compaction, tag deletion) conflicts
only with a rollback claim; a rollback claim conflicts with every other claim. On a conflict the run removes its own
claim and stops with :class:`TableBusyError`, having changed nothing. Because each side writes before it lists, and
the store is strongly consistent (local disk; S3 and its peers since 2020), of two conflicting runs at least one
sees the other: they never both go on.

A claim counts until its ``expires_ms`` (plus :data:`CLOCK_SKEW_MS` for another host's clock), so a crashed run
holds the table for at most one claim duration. Its holder checks the claim before every change it makes
(:meth:`TableClaim.check`, through a :class:`~tableformat.io.guarded.GuardedFileIO`): it renews the claim once half
has passed and stops for good once it lapsed, so a run paused past its claim never changes the table again.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from collections.abc import Callable
from typing import TypeVar

from tableformat.audit import note_crashed
from tableformat.clock import system_clock
from tableformat.errors import CorruptMetadataError, MaintenanceError, TableBusyError
from tableformat.io.guarded import GuardedFileIO
from tableformat.model.maintain import Claim
from tableformat.parallel import executor
from tableformat.store import MetadataStore

log = logging.getLogger(__name__)

_T = TypeVar("_T")

MAINTENANCE = "maintenance"
ROLLBACK = "rollback"

CLAIM_DURATION_MS = 10 * 60_000
"""How long a claim counts without renewal: a crashed run holds the table this long at most."""
CLOCK_SKEW_MS = 30_000
"""Another host's claim counts this much longer than it says (clocks of hosts differ a little)."""


_HELD: set[str] = set()
"""Owners of the claims this process holds now: a claim of this process not among them was left behind by a run
whose release failed (or that crashed in a test), and counts no more."""


def _left_by_this_process(claim: Claim) -> bool:
    return claim.pid == os.getpid() and claim.host == socket.gethostname() and claim.owner not in _HELD


def conflicts(mine: str, theirs: str) -> bool:
    """Whether a claim of kind ``theirs`` keeps a run of kind ``mine`` off the table."""
    return mine == ROLLBACK or theirs == ROLLBACK


def describe(claim: Claim) -> str:
    until = dt.datetime.fromtimestamp(claim.expires_ms / 1000, dt.timezone.utc).strftime("%H:%M:%S UTC")
    what = "a rollback" if claim.kind == ROLLBACK else f"maintenance ({claim.operation})"
    return f"{what} by {claim.host} pid {claim.pid} holds the table (its claim lapses at {until} if it stopped)"


class TableClaim:
    """One run's claim on one table. ``store`` must write straight to storage (not through this claim's guard)."""

    def __init__(
        self,
        store: MetadataStore,
        kind: str,
        operation: str,
        *,
        clock: Callable[[], int] = system_clock,
        duration_ms: int = CLAIM_DURATION_MS,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.kind = kind
        self.operation = operation
        self.clock = clock
        self.duration_ms = duration_ms
        self.owner = owner or uuid.uuid4().hex
        """Unique per run; a run that keeps an audit record uses its run id (tableformat/audit.py): a claim left
        behind without a record then names the run that crashed."""
        self.held: Claim | None = None

    def _new(self) -> Claim:
        now = self.clock()
        return Claim(
            kind=self.kind,
            owner=self.owner,
            operation=self.operation,
            host=socket.gethostname(),
            pid=os.getpid(),
            acquired_ms=now,
            expires_ms=now + self.duration_ms,
        )

    def acquire(self, alongside: Callable[[], _T] | None = None) -> _T | None:
        """Write the claim, then look for a conflicting one: TableBusyError (own claim removed) when there is.
        ``alongside`` (a read the run needs once it holds the claim) runs while the claims are listed, at the same
        time on object stores; its answer is returned."""
        claim = self._new()
        self.held = claim
        _HELD.add(self.owner)
        lapsed: list[Claim] = []
        try:
            self.store.write_claim(claim)
            with executor(2 if alongside is not None and self.store.io.is_object_store else 1, "claim") as pool:
                answer = pool.submit(alongside) if alongside is not None else None
                blocking, dead = self._others(lapsed)
                found = answer.result() if answer is not None else None
        except BaseException:
            self.release()
            raise
        if blocking:
            self.release()
            raise TableBusyError(f"{blocking[0]}; nothing was changed, run again once it ends")
        if dead:
            note_crashed(self.store, lapsed, f"{self.operation} run {self.owner}", self.clock())
            try:
                self.store.delete_claims(dead)
            except OSError as exc:  # a lapsed claim is harmless: it no longer counts
                log.info("could not delete lapsed claims on %s: %s", self.where, exc)
        return found

    def _others(self, lapsed: list[Claim]) -> tuple[list[str], list[tuple[str, str]]]:
        return survey(self.store, self.kind, self.clock(), mine=self.owner, lapsed=lapsed)

    @property
    def where(self) -> str:
        return self.store.io.url(self.store.layout.root)

    def check(self) -> None:
        """Before each change: go on only while the claim counts; renew it once half of it has passed."""
        held = self.held
        if held is None:
            raise MaintenanceError(f"no claim held on {self.where}; stopping before the next change")
        now = self.clock()
        if now >= held.expires_ms:
            raise MaintenanceError(
                f"this run's claim on {self.where} lapsed (the run was held up for "
                f"{(now - held.acquired_ms) // 1000} s); stopping before the next change, run it again"
            )
        if now >= held.acquired_ms + self.duration_ms // 2:
            renewed = self._new()
            self.store.write_claim(renewed)
            self.held = renewed

    def release(self) -> None:
        """Remove the claim (best effort: a claim left behind lapses by itself)."""
        held, self.held = self.held, None
        if held is None:
            return
        _HELD.discard(held.owner)
        for attempt in range(2):  # once more after a transient failure; a claim left behind lapses by itself
            try:
                self.store.delete_claims([(held.kind, held.owner)])
                if not self.store.io.is_object_store:  # no empty .tablefmt/ left behind (never removed if not empty)
                    self.store.io.remove_empty_dir(self.store.layout.maintain_dir)
                return
            except Exception as exc:  # never in place of the run's own error (release runs in a finally)
                if attempt:
                    log.warning("could not remove the claim %s on %s: %s", held.owner, self.where, exc)

    def guarded_store(self) -> MetadataStore:
        """The claim's store whose every change asks :meth:`check` first."""
        return self.store.through(GuardedFileIO(self.store.io, self.check))


def survey(
    store: MetadataStore, kind: str, now_ms: int, *, mine: str = "", lapsed: list[Claim] | None = None
) -> tuple[list[str], list[tuple[str, str]]]:
    """Why a run of ``kind`` may not go on (conflicting live claims, described), and the claims that no longer count
    (lapsed, or left behind by this process), besides the claim ``mine``; those are also added to ``lapsed``."""
    blocking: list[str] = []
    dead: list[tuple[str, str]] = []
    for other_kind, owner in store.claim_names():
        if owner == mine:
            continue
        try:
            other = store.read_claim(other_kind, owner)
        except CorruptMetadataError as exc:  # unreadable: it may be live, so it counts
            if conflicts(kind, other_kind):
                blocking.append(f"an unreadable claim holds the table ({exc})")
            continue
        if other is None:  # released meanwhile
            continue
        if now_ms >= other.expires_ms + CLOCK_SKEW_MS or _left_by_this_process(other):
            dead.append((other_kind, owner))
            if lapsed is not None:
                lapsed.append(other)
        elif conflicts(kind, other_kind):
            blocking.append(describe(other))
    return blocking, dead
