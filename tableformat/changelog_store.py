"""The store's reads and writes of long-lived changelogs: ``changelog/changelog-<id>`` and the hints
``changelog/EARLIEST`` and ``changelog/LATEST`` (Paimon's ChangelogManager).

A mixin of :class:`tableformat.store.MetadataStore` (kept apart for the store's size): through it the store stays
the only reader and writer of metadata files. A long-lived changelog holds the JSON of the snapshot it was made from
(Paimon's ``Changelog`` has a snapshot's fields), so it is read and written with the snapshot codec.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from tableformat.codec import json_codec
from tableformat.io.fileio import FileIO
from tableformat.layout import CHANGELOG_DIR, CHANGELOG_PREFIX, TableLayout
from tableformat.model.snapshot import Snapshot

log = logging.getLogger(__name__)

_T = TypeVar("_T")



class ChangelogStore:
    """Long-lived changelogs of one table (``io`` and ``layout`` are the store's)."""

    io: FileIO
    layout: TableLayout

    def _read_if_present(self, path: str, decode: Callable[[bytes, str], _T]) -> _T | None:
        raise NotImplementedError  # MetadataStore's

    def read_changelog(self, key: str) -> Snapshot | None:
        """``changelog/changelog-<key>`` (a snapshot-shaped root), or None when it does not exist."""
        return self._read_if_present(self.layout.changelog_file(key), json_codec.snapshot_from_json)

    def changelog_ids(self) -> list[int]:
        """The ids of the main table's long-lived changelogs, ascending (the listing decides, not the hints)."""
        names = self.io.list_names(self.layout.join(CHANGELOG_DIR))
        return sorted(int(n[len(CHANGELOG_PREFIX) :]) for n in names if n[len(CHANGELOG_PREFIX) :].isdigit())

    def write_changelog(self, snapshot_id: int) -> bool | None:
        """Create ``changelog/changelog-<id>`` as a copy of ``snapshot/snapshot-<id>`` (Paimon's ``new
        Changelog(snapshot)``; atomic create-if-absent). False when it exists already (a re-run after a crash wrote
        it), None when the snapshot is gone."""
        data = self._read_if_present(self.layout.snapshot_file(snapshot_id), _checked_snapshot)  # never copy damage
        if data is None:
            return None
        return self.io.write_if_absent(self.layout.changelog_file(str(snapshot_id)), data)

    def delete_changelog(self, changelog_id: int) -> bool:
        """Delete ``changelog/changelog-<id>``; False if it was not there."""
        return bool(self.io.delete_files([self.layout.changelog_file(str(changelog_id))]))

    def write_changelog_hint(self, which: str, changelog_id: int) -> None:
        """``changelog/EARLIEST`` or ``changelog/LATEST``. Best effort: hints are only hints."""
        try:
            self.io.write_bytes(self.layout.join(CHANGELOG_DIR, which), json_codec.hint_to_bytes(changelog_id))
        except OSError as exc:
            log.warning("could not write changelog %s hint %d: %s", which, changelog_id, exc)

    def read_changelog_hint(self, which: str) -> int | None:
        """``changelog/EARLIEST`` or ``changelog/LATEST`` as written (None when missing or unreadable)."""
        try:
            return json_codec.hint_from_bytes(self.io.read_bytes(self.layout.join(CHANGELOG_DIR, which)))
        except OSError:
            return None

    def delete_changelog_hint(self, which: str) -> None:
        """Remove ``changelog/EARLIEST`` or ``changelog/LATEST`` (no long-lived changelog is left)."""
        self.io.delete_files([self.layout.join(CHANGELOG_DIR, which)])


def _checked_snapshot(data: bytes, url: str) -> bytes:
    """The bytes of a snapshot file, once they decode as one."""
    json_codec.snapshot_from_json(data, url)
    return data
