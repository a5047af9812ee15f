"""The store's reads and writes of pending erasures (``.tablefmt/erasures/``; docs/erase.md): a mixin of
:class:`tableformat.store.MetadataStore`, bytes in :mod:`tableformat.codec.erasure_codec`."""

from __future__ import annotations

from tableformat.codec import erasure_codec
from tableformat.errors import CorruptMetadataError
from tableformat.io.fileio import FileIO
from tableformat.layout import ERASURE_PREFIX, TableLayout, parse_id
from tableformat.model.erasure import PendingErasure


class ErasureStore:
    """The pending erasures of one table (``io`` and ``layout`` are the store's)."""

    io: FileIO
    layout: TableLayout

    def pending_erasures(self) -> list[PendingErasure]:
        """Every pending erasure, oldest snapshot first (one listing); CorruptMetadataError for an unreadable one."""
        found = []
        for name in self.io.list_names(self.layout.erasures_dir):
            snapshot_id = parse_id(name, ERASURE_PREFIX)
            if snapshot_id is None:
                continue
            path = self.layout.erasure_file(snapshot_id)
            try:
                found.append(erasure_codec.decode_pending_erasure(self.io.read_bytes(path)))
            except FileNotFoundError:
                continue  # completed meanwhile
            except ValueError as exc:
                raise CorruptMetadataError(self.io.url(path), str(exc)) from exc
        return sorted(found, key=lambda pending: pending.snapshot_id)

    def write_pending_erasure(self, pending: PendingErasure) -> None:
        """Record it (a later erasure of the same snapshot replaces it)."""
        self.io.mkdirs(self.layout.erasures_dir)
        self.io.write_bytes(
            self.layout.erasure_file(pending.snapshot_id), erasure_codec.encode_pending_erasure(pending)
        )

    def delete_pending_erasure(self, snapshot_id: int) -> None:
        self.io.delete_files([self.layout.erasure_file(snapshot_id)])
