"""Who still holds erased rows: every snapshot, tag and branch whose live files include one of the given data files
(read through the same roots orphan cleanup and expiration read, :mod:`..roots`), and the consumers whose next
snapshot is such a snapshot (snapshot expiration never passes a consumer)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from tableformat.context import TableContext
from tableformat.live_set import merge_entries
from tableformat.model.manifest import ManifestEntry
from tableformat.parallel import resolve_parallelism
from tableformat.threads import thread_pool

from ..roots import References, Root

KINDS = ("snapshot", "tag", "branch", "changelog", "consumer")


@dataclass(frozen=True, slots=True, order=True)
class Pin:
    """One root that still references a file holding erased rows."""

    kind: str
    """``snapshot``, ``tag``, ``branch`` (one of its snapshots or tags), ``changelog`` or ``consumer``."""
    name: str
    """The snapshot id as text, the tag's name, ``<branch> <snapshot|tag> <key>``, the consumer's id."""
    snapshot_id: int | None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "snapshot_id": self.snapshot_id}

    def text(self) -> str:
        return f"{self.kind} {self.name}" + ("" if self.kind == "snapshot" else f" (snapshot {self.snapshot_id})")


class RootFiles:
    """Every root of the table (main and branches: snapshots, tags, changelogs) and the live data files of each,
    read once (manifests are shared by many roots and never change once written)."""

    def __init__(self, ctx: TableContext) -> None:
        self.ctx = ctx
        threads = resolve_parallelism(ctx.options, ctx.io, None)
        with thread_pool(threads, "tablefmt-erase-roots") as pool:
            self.roots = References(ctx, pool, threads).collect_roots()
        manifests: dict[str, list[ManifestEntry]] = {}
        self.live: list[tuple[Root, dict[str, ManifestEntry]]] = []
        for root in self.roots:
            lists = []
            for meta in ctx.store.manifests_of(root.snapshot):
                if meta.file_name not in manifests:
                    manifests[meta.file_name] = ctx.store.read_manifest(meta.file_name)
                lists.append(manifests[meta.file_name])
            live = {entry.file.file_name: entry for entry in merge_entries(lists).values()}
            self.live.append((root, live))

    def entries_outside(self, names: Collection[str]) -> list[ManifestEntry]:
        """One entry per data file some root holds whose name is not in ``names`` (files only older snapshots, tags
        or branches hold when ``names`` are the latest snapshot's)."""
        found: dict[str, ManifestEntry] = {}
        for _, live in self.live:
            for name, entry in live.items():
                if name not in names:
                    found.setdefault(name, entry)
        return list(found.values())

    def holding(self, file_names: Collection[str]) -> dict[Pin, frozenset[str]]:
        """Every root (and consumer) that references one of ``file_names``, sorted, with the names it references."""
        wanted = set(file_names)
        pins: dict[Pin, frozenset[str]] = {}
        if not wanted:
            return pins
        for root, live in self.live:
            held = frozenset(wanted.intersection(live))
            if held:
                pins[_pin_of(root)] = held
        by_snapshot = {p.snapshot_id: names for p, names in pins.items() if p.kind == "snapshot"}
        for consumer in self.ctx.store.consumers():
            if consumer.next_snapshot in by_snapshot:
                pin = Pin("consumer", consumer.consumer_id, consumer.next_snapshot)
                pins[pin] = by_snapshot[consumer.next_snapshot]
        order = sorted(pins, key=lambda p: (KINDS.index(p.kind), p.snapshot_id or 0, p.name))
        return {pin: pins[pin] for pin in order}


def _pin_of(root: Root) -> Pin:
    key = root.label.rpartition(" ")[2]
    if root.branch:
        return Pin("branch", f"{root.branch} {root.kind} {key}", root.snapshot.id)
    return Pin(root.kind, key, root.snapshot.id)


def holding_roots(ctx: TableContext, file_names: Collection[str]) -> dict[Pin, frozenset[str]]:
    """Every root (and consumer) that references one of ``file_names`` (none for no names)."""
    if not file_names:
        return {}
    return RootFiles(ctx).holding(file_names)


def pins_text(pins: Sequence[Pin]) -> list[str]:
    """The pins as text lines, runs of consecutive snapshots as one (``snapshots 1..200``)."""
    lines: list[str] = []
    ids = sorted(p.snapshot_id for p in pins if p.kind == "snapshot" and p.snapshot_id is not None)
    start = previous = None
    for snapshot_id in [*ids, None]:
        if start is not None and (snapshot_id is None or previous is None or snapshot_id != previous + 1):
            lines.append(f"snapshot {start}" if start == previous else f"snapshots {start}..{previous}")
            start = None
        if start is None:
            start = snapshot_id
        previous = snapshot_id
    return lines + [pin.text() for pin in pins if pin.kind != "snapshot"]


def pins_json(pins: Sequence[Pin]) -> list[dict[str, Any]]:
    return [pin.to_json() for pin in pins]
