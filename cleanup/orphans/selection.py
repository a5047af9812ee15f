"""Which manifests orphan cleanup must read to know every data file any root names (see DataManifestSelection)."""

from __future__ import annotations

from dataclasses import dataclass

from tableformat.model.manifest import ManifestFileMeta

from ..roots import Root


@dataclass(frozen=True, slots=True)
class ListSummary:
    """What the selection below needs from one manifest list: its manifests and whether any has DELETE entries."""

    manifests: tuple[str, ...]
    has_deletes: bool


def summarize(rows: list[ManifestFileMeta]) -> ListSummary:
    return ListSummary(tuple(row.file_name for row in rows), any(row.num_deleted_files for row in rows))


class DataManifestSelection:
    """The manifests whose entries name every data file any root references, without reading every manifest.

    Paimon's base list of snapshot ``s + 1`` is the merged state of snapshot ``s`` (its base and delta), and merging
    only copies or cancels entries. So in a run of consecutive snapshots ``a..b`` of one branch, every entry of every
    manifest is in ``base(a)`` or in some ``delta(s)``. An entry of ``delta(s)`` is still live in ``b`` unless a later
    delta DELETEs it, which the manifest lists record (``_NUM_DELETED_FILES``). With ``k`` the last snapshot of the
    run whose delta has DELETE entries (or ``a`` when ``base(a)`` has some), the names used in the run are those of
    ``base(b) + delta(b)`` and, when ``k`` exists, of ``base(a)`` and ``delta(a..k)``. Tags and changelogs that are
    not a copy of a snapshot present, and every changelog list, are read in full. A missing list in a run makes the
    caller fall back to reading every manifest.
    """

    def __init__(self, roots: list[Root]) -> None:
        snapshots = sorted((r for r in roots if r.kind == "snapshot"), key=lambda r: (r.branch, r.snapshot.id))
        self.runs: list[list[Root]] = []
        for root in snapshots:
            last = self.runs[-1][-1] if self.runs else None
            if last is not None and last.branch == root.branch and last.snapshot.id + 1 == root.snapshot.id:
                self.runs[-1].append(root)
            else:
                self.runs.append([root])
        present = {(r.branch, r.snapshot.id, r.snapshot.manifest_lists()) for r in snapshots}
        self.others = [
            r
            for r in roots
            if r.kind != "snapshot" and (r.branch, r.snapshot.id, r.snapshot.manifest_lists()) not in present
        ]
        self.owners: dict[str, list[Root]] = {}
        for run in self.runs:
            for root in run:
                self._need(root.snapshot.delta_manifest_list, root)
                if root.snapshot.changelog_manifest_list:
                    self._need(root.snapshot.changelog_manifest_list, root)
            self._need(run[0].snapshot.base_manifest_list, run[0])
            self._need(run[-1].snapshot.base_manifest_list, run[-1])
        for root in self.others:
            for name in root.snapshot.manifest_lists():
                self._need(name, root)

    def _need(self, name: str, root: Root) -> None:
        self.owners.setdefault(name, []).append(root)

    def select(self, lists: dict[str, ListSummary]) -> dict[str, None] | None:
        """Manifest names to read, given the summaries of ``self.owners``' lists; None if any list is missing."""
        if any(name not in lists for name in self.owners):
            return None
        selected: dict[str, None] = {}

        def take(list_name: str) -> None:
            selected.update(dict.fromkeys(lists[list_name].manifests))

        for run in self.runs:
            first, last = run[0].snapshot, run[-1].snapshot
            take(last.base_manifest_list)
            take(last.delta_manifest_list)
            deleting = [i for i, r in enumerate(run) if lists[r.snapshot.delta_manifest_list].has_deletes]
            if lists[first.base_manifest_list].has_deletes:
                deleting.append(0)
            if deleting:
                take(first.base_manifest_list)
                for root in run[: max(deleting) + 1]:
                    take(root.snapshot.delta_manifest_list)
            for root in run:
                if root.snapshot.changelog_manifest_list:
                    take(root.snapshot.changelog_manifest_list)
        for root in self.others:
            for name in root.snapshot.manifest_lists():
                take(name)
        return selected
