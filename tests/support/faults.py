"""A FileIO wrapper that fails the N-th mutating call, before or after it takes effect.

``FaultyFileIO(inner, fail_at=N, mode="before" | "after")`` forwards every call to ``inner`` and counts the mutating
ones (``write_bytes``, ``write_if_absent``, ``delete_files``, ``remove_empty_dir`` by default). For
``delete_files`` every path of a batch is one call point, so "fail at the 7th delete" works for batches: the paths
before the failing one are deleted, and so is the failing one in "after" mode. At call point N it raises
:class:`InjectedFault` (an ``OSError``):

* ``mode="before"``: the call has no effect (a request refused or lost on the way to the store);
* ``mode="after"``: the effect is applied, then the error is raised (the acknowledgement was lost).

By default the fault fires once and later calls pass (a transient fault: the caller's error handling runs).
With ``sticky=True`` every later mutating call fails too, before taking effect: the process has crashed and no
clean-up of its own ever reaches the store.

``fail_at=None`` is the counting mode: nothing fails, ``calls`` records every call point as ``(op, path)``, so a
sweep learns how many points an operation has and can iterate over all of them.

Reads are never counted or failed. The wrapper is thread-safe (deletes run on thread pools); call points are
numbered in the order the calls reach the wrapper, so sweeps run maintenance with ``parallelism=1``.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from support.observed_fs import observed_filesystem
from tableformat.context import TableContext
from tableformat.io.fileio import FileIO
from tableformat.io.forwarding import ForwardingFileIO
from tableformat.store import MetadataStore

Mode = Literal["before", "after"]

MUTATING_OPS: tuple[str, ...] = ("write_bytes", "write_if_absent", "delete_files", "remove_empty_dir")


class InjectedFault(OSError):
    """The failure FaultyFileIO raises; carries the call point, operation, path and mode."""

    def __init__(self, point: int, op: str, path: str, mode: str) -> None:
        super().__init__(f"injected fault at call {point} ({op} {path}, {mode})")
        self.point = point
        self.op = op
        self.path = path
        self.mode = mode


class FaultyFileIO(ForwardingFileIO):
    """Wraps a FileIO; fails its ``fail_at``-th mutating call (1-based) in the given mode, or only counts."""

    def __init__(
        self,
        inner: FileIO,
        fail_at: int | None = None,
        mode: Mode = "before",
        ops: Iterable[str] = MUTATING_OPS,
        *,
        sticky: bool = False,
    ) -> None:
        if mode not in ("before", "after"):
            raise ValueError(f"mode must be 'before' or 'after', got {mode!r}")
        if fail_at is not None and fail_at < 1:
            raise ValueError(f"fail_at counts from 1, got {fail_at}")
        unknown = set(ops) - set(MUTATING_OPS)
        if unknown:
            raise ValueError(f"unknown operations {sorted(unknown)}; choose from {MUTATING_OPS}")
        super().__init__(inner)
        self.fail_at = fail_at
        self.mode: Mode = mode
        self.ops = frozenset(ops)
        self.sticky = sticky
        self.calls: list[tuple[str, str]] = []
        """Every counted call point, in order: (operation, path)."""
        self.fired: InjectedFault | None = None
        """The fault raised at ``fail_at`` (None until it fires)."""
        self.refused = 0
        """Calls refused after a sticky fault."""
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Call points seen so far."""
        return len(self.calls)

    # --- the fault machinery ---------------------------------------------------------------------------------
    def _crashed(self) -> bool:
        return self.sticky and self.fired is not None

    def _points(self, op: str, paths: Sequence[str]) -> tuple[int | None, int]:
        """Number the call points of ``paths``; returns (index in ``paths`` that must fail or None, first point)."""
        with self._lock:
            first = len(self.calls) + 1
            failing: int | None = None
            if op in self.ops:
                for index, path in enumerate(paths):
                    self.calls.append((op, path))
                    if failing is None and self.fail_at is not None and first + index == self.fail_at:
                        failing = index
            return failing, first

    def _fault(self, point: int, op: str, path: str) -> InjectedFault:
        fault = InjectedFault(point, op, path, self.mode)
        with self._lock:
            self.fired = fault
        return fault

    def _refuse(self, op: str, path: str) -> InjectedFault:
        with self._lock:
            self.refused += 1
        return InjectedFault(0, op, path, "crashed")

    def _single(self, op: str, path: str, apply: Any) -> Any:
        if op in self.ops and self._crashed():
            raise self._refuse(op, path)
        failing, first = self._points(op, [path])
        if failing is None:
            return apply()
        if self.mode == "before":
            raise self._fault(first, op, path)
        apply()
        raise self._fault(first, op, path)

    # --- mutating calls --------------------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        self._single("write_bytes", path, lambda: self.inner.write_bytes(path, data))

    def write_if_absent(self, path: str, data: bytes) -> bool:
        result: bool = self._single("write_if_absent", path, lambda: self.inner.write_if_absent(path, data))
        return result

    def remove_empty_dir(self, path: str) -> bool:
        result: bool = self._single("remove_empty_dir", path, lambda: self.inner.remove_empty_dir(path))
        return result

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        paths = list(paths)
        op = "delete_files"
        if op in self.ops and self._crashed():
            raise self._refuse(op, paths[0] if paths else "")
        failing, first = self._points(op, paths)
        if failing is None:
            return self.inner.delete_files(paths)
        applied = paths[: failing + 1] if self.mode == "after" else paths[:failing]
        if applied:
            self.inner.delete_files(applied)
        raise self._fault(first + failing, op, paths[failing])


class InterferingFileIO(FaultyFileIO):
    """Fails nothing; runs ``action`` (what another process does meanwhile: a commit, an expiration) just before
    the first read of a file whose name starts with ``trigger`` (``manifest-`` means a manifest, not a manifest
    list), and again before the next such reads until it has run ``times`` times (``action`` is then None). Metadata
    is read with ``read_bytes``, data files are opened through the Arrow filesystem: both are watched. ``ran`` counts
    the runs.
    """

    def __init__(self, inner: Any, trigger: str, action: Any, times: int = 1) -> None:
        super().__init__(inner)
        self.trigger = trigger
        self.action = action
        self.times = times
        self.ran = 0
        self._running = False

    def _before_read(self, path: str) -> None:
        name = path.rsplit("/", 1)[-1]
        hit = name.startswith(self.trigger) and not (self.trigger == "manifest-" and name.startswith("manifest-list-"))
        action = self.action
        if action is not None and hit and not self._running:  # the action's own reads through this FileIO pass
            self.ran += 1
            if self.ran >= self.times:
                self.action = None  # done: None says the interference happened
            self._running = True
            try:
                action()
            finally:
                self._running = False

    def read_bytes(self, path: str) -> bytes:
        self._before_read(path)
        return super().read_bytes(path)

    def arrow_filesystem(self, sizes: Mapping[str, int] | None = None) -> Any:
        return observed_filesystem(self.inner.arrow_filesystem(sizes), self._before_read)


def faulty_context(ctx: TableContext, faulty: FileIO) -> TableContext:
    """A copy of ``ctx`` whose FileIO (and metadata store's FileIO) is ``faulty``."""
    return TableContext(
        location=ctx.location,
        io=faulty,
        layout=ctx.layout,
        store=MetadataStore(faulty, ctx.layout),
        schema=ctx.schema,
    )


class InterleavingFileIO(ForwardingFileIO):
    """Forwards every call; just before its ``at``-th change (a write, a delete of one path, a directory removal)
    runs ``action`` once (what another process does at that moment). ``at=None`` only counts the changes."""

    def __init__(self, inner: FileIO, at: int | None, action: Callable[[], None]) -> None:
        super().__init__(inner)
        self.at = at
        self.action = action
        self.changes = 0

    def _before_change(self, count: int = 1) -> None:
        first = self.changes + 1
        self.changes += count
        if self.at is not None and first <= self.at <= self.changes:
            self.at = None
            self.action()

    def write_bytes(self, path: str, data: bytes) -> None:
        self._before_change()
        self.inner.write_bytes(path, data)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        self._before_change()
        return self.inner.write_if_absent(path, data)

    def delete_files(self, paths: Sequence[str]) -> list[str]:
        self._before_change(max(1, len(paths)))
        return self.inner.delete_files(paths)

    def remove_empty_dir(self, path: str) -> bool:
        self._before_change()
        return self.inner.remove_empty_dir(path)


def fault_at_every_point(
    source: Path,
    work: Path,
    total: int,
    mode: str,
    sticky: bool,
    run: Callable[[TableContext], object],
    tolerated: tuple[type[BaseException], ...] = (OSError,),
) -> Iterator[tuple[int, Path, FaultyFileIO]]:
    """The crash sweep's loop: for each call point 1..``total``, a fresh copy of ``source`` under ``work``, ``run``
    on it with a fault at that point (``mode`` before or after the call; ``sticky``: every later call fails too, as
    after a crash), the fault's error (``tolerated``) swallowed; yields (point, the copy's root, the FileIO) for the
    caller's re-run and checks."""
    for point in range(1, total + 1):
        root = work / f"p{point}"
        shutil.copytree(source, root)
        ctx = TableContext.load(str(root))
        faulty = FaultyFileIO(ctx.io, point, mode, sticky=sticky)  # type: ignore[arg-type]
        try:
            run(faulty_context(ctx, faulty))
        except tolerated:
            pass
        yield point, root, faulty
