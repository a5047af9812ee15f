"""The store's reads and writes of the undo window (``.tablefmt/undo/``; cleanup/kernel/deferral.py, docs/undo.md).

A mixin of :class:`tableformat.store.MetadataStore` (kept apart for the store's size): through it the store stays the
only reader and writer of metadata files. Bytes in :mod:`tableformat.codec.undo_codec`. Every file is created once
with the store's conditional create and never rewritten; a run's directory is deleted file by file (never
recursively) once its window is over or an undo took everything back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tableformat.codec import json_codec, undo_codec
from tableformat.errors import CorruptMetadataError
from tableformat.io.fileio import FileInfo, FileIO
from tableformat.layout import (
    CHANGELOG_DIR,
    EARLIEST,
    LATEST,
    MAINTAIN_DIR,
    SNAPSHOT_DIR,
    TAG_DIR,
    TAG_PREFIX,
    UNDO_HELD_PREFIX,
    UNDO_PENDING_PREFIX,
    UNDO_RELEASED_PREFIX,
    UNDO_SAVED_DIR,
    TableLayout,
)
from tableformat.model.snapshot import Snapshot
from tableformat.model.undo import HeldList, HeldRun, ReleasedList

LISTING_ATTEMPTS = 3
"""How often :meth:`UndoStore.held_runs` lists the window when a listed file is gone by the time it is read."""


class UndoStore:
    """The undo window of one table (``io`` and ``layout`` are the store's)."""

    io: FileIO
    layout: TableLayout

    def held_runs(self, run_id: str | None = None) -> list[HeldRun]:
        """Every run the window holds something for (only ``run_id`` when given), its lists read; one recursive
        listing, again when a listed file was gone by the time it was read (an undo or a purge removed a run's
        window meanwhile: a list is never rewritten, only deleted once it is done with). CorruptMetadataError when
        a list cannot be read: nothing held can be judged then."""
        for _ in range(LISTING_ATTEMPTS - 1):
            try:
                return self._held_runs(run_id)
            except FileNotFoundError:
                continue
        try:
            return self._held_runs(run_id)
        except FileNotFoundError as exc:
            url = self.io.url(self.layout.undo_dir)
            raise CorruptMetadataError(
                url, f"a listed file was gone at each of {LISTING_ATTEMPTS} listings: {exc}"
            ) from exc

    def _held_runs(self, run_id: str | None) -> list[HeldRun]:
        top = self.layout.undo_dir if run_id is None else self.layout.undo_run_dir(run_id)
        prefix = self.layout.undo_dir.rstrip("/") + "/"
        by_run: dict[str, list[FileInfo]] = {}
        for info in self.io.list_subtree(top):
            if info.is_dir or not info.path.startswith(prefix) or info.name.startswith("."):
                continue
            by_run.setdefault(info.path[len(prefix) :].split("/", 1)[0], []).append(info)
        return [self._held_run(run, infos) for run, infos in sorted(by_run.items())]

    def _held_run(self, run_id: str, infos: list[FileInfo]) -> HeldRun:
        gathered = _Gathered(self._saved_prefix(run_id))
        for info in infos:
            try:
                gathered.take(info, self.io.read_bytes)
            except ValueError as exc:
                raise CorruptMetadataError(self.io.url(info.path), str(exc)) from exc
        return HeldRun(
            run_id=run_id,
            due_ms=gathered.due,
            files=gathered.files,
            pending=frozenset(gathered.pending),
            released=frozenset(gathered.released),
            released_by=tuple(sorted(gathered.released_by)),
            saved=tuple(sorted(gathered.saved)),
            own_files=tuple(sorted(info.path for info in infos)),
            operation=gathered.operation,
        )

    def _create(self, path: str, data: bytes) -> None:
        """Create ``path`` once; an existing file with other bytes is an error (never overwritten)."""
        if not self.io.write_if_absent(path, data) and self.io.read_bytes(path) != data:
            raise CorruptMetadataError(self.io.url(path), "exists with other content; not overwritten")

    def write_held(self, held: HeldList, sequence: int, *, pending: bool = False) -> None:
        """Create the run's ``held-<sequence>`` list (before the files it names are deferred), or with ``pending``
        its ``pending-<sequence>`` list (before the step that takes them out of the table)."""
        name = f"{UNDO_PENDING_PREFIX if pending else UNDO_HELD_PREFIX}{sequence}"
        self._create(self._run_file(held.run_id, name), undo_codec.encode_held(held))

    def write_released(self, run_id: str, released: ReleasedList) -> None:
        """Create ``released-<undo run id>`` under run ``run_id``: the files the undo took back from its window."""
        name = f"{UNDO_RELEASED_PREFIX}{released.undo_run_id}"
        self._create(self._run_file(run_id, name), undo_codec.encode_released(released))

    def save_copy(self, run_id: str, relative: str) -> bool:
        """Keep a copy of the metadata file ``relative`` (path from the table root) that run ``run_id`` is about to
        delete; False when it is gone already (nothing to keep)."""
        try:
            data = self.io.read_bytes(self.layout.join(relative))
        except FileNotFoundError:
            return False
        path = self.layout.undo_saved_file(run_id, relative)
        self.io.mkdirs(path.rsplit("/", 1)[0])
        self._create(path, data)
        return True

    def read_saved(self, run_id: str, relative: str) -> bytes:
        return self.io.read_bytes(self.layout.undo_saved_file(run_id, relative))

    def held_run_ids(self) -> set[str]:
        """The runs the window has a directory for (one listing, nothing read)."""
        return {info.name for info in self.io.list_dir(self.layout.undo_dir) if info.is_dir}

    def read_saved_root(self, run_id: str, relative: str) -> Snapshot | None:
        """The snapshot a saved snapshot, tag or changelog copy holds (None for a consumer copy, or one gone);
        CorruptMetadataError when it cannot be parsed."""
        directory, _, name = relative.rpartition("/")
        kind = directory.rpartition("/")[2]
        if kind not in (SNAPSHOT_DIR, TAG_DIR, CHANGELOG_DIR) or name in (EARLIEST, LATEST):
            return None
        path = self.layout.undo_saved_file(run_id, relative)
        try:
            data = self.io.read_bytes(path)
        except FileNotFoundError:
            return None
        if kind == TAG_DIR:
            return json_codec.tag_from_json(name[len(TAG_PREFIX) :], data, self.io.url(path)).snapshot
        return json_codec.snapshot_from_json(data, self.io.url(path))

    def restore_saved(self, run_id: str, relative: str) -> bool:
        """Write the saved copy of ``relative`` back in its place (created once: never over another file); True
        when it is there now with the saved bytes (written now, or by an earlier undo that stopped)."""
        data = self.read_saved(run_id, relative)
        path = self.layout.join(relative)
        return self.io.write_if_absent(path, data) or self.io.read_bytes(path) == data

    def delete_undo_files(self, held: HeldRun) -> list[str]:
        """Delete the run's own files (listed: they exist) and then its emptied directories, deepest first (never
        recursively; not on object stores); returns the files deleted.

        In three batches, each only once the one before is gone: the saved copies (:meth:`delete_saved_copies`),
        then the held and pending lists, then the released lists (:meth:`delete_run_lists`). Within a batch the
        store picks the order (one DeleteObjects request), so a released list deleted alongside a held list that
        stays would leave the files an undo put back listed as held, and a later purge would delete them from the
        table."""
        return self.delete_saved_copies(held) + self.delete_run_lists(held)

    def delete_saved_copies(self, held: HeldRun) -> list[str]:
        """Delete the run's saved copies only (a purge does so before it deletes the held files: an orphan cleanup
        that reads a copy as a root then finds the copy gone with its files, never a copy whose files are gone)."""
        saved = [p for p in held.own_files if p.startswith(self._saved_prefix(held.run_id))]
        return self.io.delete_listed(saved) if saved else []

    def delete_run_lists(self, held: HeldRun) -> list[str]:
        """The rest of :meth:`delete_undo_files`, once the saved copies are gone: the held and pending lists, then
        the released lists, then the emptied directories."""
        lists = [p for p in held.own_files if not p.startswith(self._saved_prefix(held.run_id))]
        released = [p for p in lists if p.rsplit("/", 1)[-1].startswith(UNDO_RELEASED_PREFIX)]
        deleted: list[str] = []
        for batch in ([p for p in lists if p not in released], released):
            if batch:
                deleted += self.io.delete_listed(batch)
        if not self.io.is_object_store:
            top = self.layout.undo_run_dir(held.run_id).rstrip("/")
            dirs = {p.rsplit("/", 1)[0] for p in held.own_files}
            for directory in list(dirs):
                while directory.startswith(top + "/"):
                    directory = directory.rsplit("/", 1)[0]
                    dirs.add(directory)
            for directory in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
                if directory == top or directory.startswith(top + "/"):
                    self.io.remove_empty_dir(directory)
        return deleted

    def _saved_prefix(self, run_id: str) -> str:
        return self.layout.undo_run_dir(run_id).rstrip("/") + f"/{UNDO_SAVED_DIR}/"

    def _run_file(self, run_id: str, name: str) -> str:
        directory = self.layout.undo_run_dir(run_id)
        self.io.mkdirs(directory)
        return f"{directory.rstrip('/')}/{name}"


@dataclass(slots=True)
class _Gathered:
    """What one run's directory says, gathered file by file."""

    saved_prefix: str
    files: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    released: set[str] = field(default_factory=set)
    released_by: list[str] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    due: int | None = None
    operation: str = ""

    def take(self, info: FileInfo, read: Callable[[str], bytes]) -> None:
        """Add one file of the directory (ValueError for a list that cannot be decoded)."""
        if info.path.startswith(self.saved_prefix):
            self.saved.append(info.path[len(self.saved_prefix) :])
        elif info.name.startswith((UNDO_HELD_PREFIX, UNDO_PENDING_PREFIX)):
            held = undo_codec.decode_held(read(info.path))
            for path, _ in held.files:
                _check_held_path(path)
            (self.pending if info.name.startswith(UNDO_PENDING_PREFIX) else self.files).update(held.files)
            self.due = held.due_ms if self.due is None else max(self.due, held.due_ms)
            self.operation = self.operation or held.operation
        elif info.name.startswith(UNDO_RELEASED_PREFIX):
            undone = undo_codec.decode_released(read(info.path))
            self.released.update(undone.paths)
            self.released_by.append(undone.undo_run_id)


def _check_held_path(path: str) -> None:
    """ValueError for a held path that is not a table file's relative path (a '..', an absolute path, the
    maintainer's own directory): nothing named so is ever deleted."""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts) or parts[0] == MAINTAIN_DIR or ":" in parts[0]:
        raise ValueError(f"held path {path!r} is not a file of the table")


def held_paths(runs: Sequence[HeldRun]) -> dict[str, int]:
    """Every file the window holds over all ``runs`` (a file held by two runs counts once)."""
    found: dict[str, int] = {}
    for run in runs:
        found.update(run.held)
    return found


def kept_from_orphans(runs: Sequence[HeldRun], now_ms: int) -> set[str]:
    """Every file orphan cleanup must leave alone: named by a held or pending list of a run whose window has not
    ended by ``now_ms``, released or not (an undo releases a run's files before it writes back the snapshots that
    name them, and removes the lists only after: a cleanup that listed the roots before the undo wrote them back
    still finds the files listed). Once a window has ended its files are orphans like any other (so they go also
    after the window was turned off, when no run purges any more)."""
    kept: set[str] = set()
    for run in runs:
        if not run.is_due(now_ms):
            kept.update(run.files)
            kept.update(run.pending)
    return kept
