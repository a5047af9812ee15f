"""What a caller that needs the planner's listing and references too (``check``) is handed as the planner goes.

``check`` verifies every referenced file against the listing and counts the orphans a dry run would delete. Both
need the table listed and every root's manifests read; with a :class:`SharedRead` the planner does each once: it
lists every file with its size, reads every manifest list and manifest of the roots in full (not only the ones
orphan cleanup needs), and hands each over. The planner's own rules and checks are unchanged: what it hands over is
what it subtracted.
"""

from __future__ import annotations

from typing import Protocol

from tableformat.codec.avro_projection import ScanRef
from tableformat.model.manifest import ManifestFileMeta

from ..roots import Root
from .census import Listing


class SharedRead(Protocol):
    """Receives the planner's listings and reads (called from the planning thread, in order)."""

    def listed(self, listing: Listing) -> None:
        """One listed directory, every file with its size."""

    def roots(self, roots: list[Root]) -> None:
        """The table's roots (snapshots, tags and changelogs of the main table and its branches) as first read."""

    def manifest_list(self, name: str, rows: list[ManifestFileMeta]) -> None:
        """A manifest list of those roots, read."""

    def manifest(self, name: str, entries: list[ScanRef]) -> None:
        """A manifest of those lists, its entries projected (no statistics)."""
