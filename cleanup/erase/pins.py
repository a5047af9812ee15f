"""Who still holds erased rows: every snapshot, tag and branch whose live files include one of the given data files
(read through the same roots orphan cleanup and expiration read, :mod:`..roots`), and the consumers whose next
snapshot is such a snapshot (snapshot expiration never passes a consumer)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from tableformat.context import TableContext
from tableformat.live_set import merge_entries
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.parallel import executor, resolve_parallelism

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


@dataclass(slots=True)
class Span:
    """A data file and the main-table snapshots it is live in: ``first`` up to (not including) ``end``."""

    entry: ManifestEntry
    first: int
    end: int | None = None
    """The snapshot that deleted it (None: live in the newest snapshot read)."""


class RootFiles:
    """Every root of the table (main and branches: snapshots, tags, changelogs) and the live data files of each,
    read once. The main table's snapshots are walked by their deltas (a file is live from the snapshot that adds it
    to the one that deletes it): the first snapshot and any after a gap in the ids are read whole, every other one
    by its delta list only. Tags, branches and changelogs are read whole; manifests are read once for all, none of
    ``manifests`` ({name: entries} already read, to which this adds what it reads: a cache the caller may hand to
    the next RootFiles; manifests never change once written)."""

    def __init__(self, ctx: TableContext, manifests: dict[str, list[ManifestEntry]] | None = None) -> None:
        self.ctx = ctx
        threads = resolve_parallelism(ctx.options, ctx.io, None)
        with executor(threads, "tablefmt-erase-roots") as pool:  # inline on local disk (parallel.py)
            roots = References(ctx, pool, threads).collect_roots()
        self._manifests = manifests if manifests is not None else {}
        main = sorted((r for r in roots if r.kind == "snapshot" and not r.branch), key=lambda r: r.snapshot.id)
        self.main_ids = [root.snapshot.id for root in main]
        self.spans = self._walk(main)
        self.live: list[tuple[Root, dict[str, ManifestEntry]]] = []
        for root in roots:
            if root.kind != "snapshot" or root.branch:
                self.live.append((root, self._whole(root)))

    def _entries(self, name: str) -> list[ManifestEntry]:
        if name not in self._manifests:
            self._manifests[name] = self.ctx.store.read_manifest(name)
        return self._manifests[name]

    def _whole(self, root: Root) -> dict[str, ManifestEntry]:
        lists = [self._entries(meta.file_name) for meta in self.ctx.store.manifests_of(root.snapshot)]
        return {entry.file.file_name: entry for entry in merge_entries(lists).values()}

    def _walk(self, main: list[Root]) -> list[Span]:
        spans: list[Span] = []
        open_spans: dict[str, Span] = {}
        previous: int | None = None
        for root in main:
            snapshot_id = root.snapshot.id
            if previous is None or snapshot_id != previous + 1:
                whole = self._whole(root)
                for name in [n for n in open_spans if n not in whole]:
                    open_spans.pop(name).end = snapshot_id
                for name, entry in whole.items():
                    if name not in open_spans:
                        open_spans[name] = Span(entry, snapshot_id)
                        spans.append(open_spans[name])
            else:
                for meta in self.ctx.store.read_manifest_list_fast(root.snapshot.delta_manifest_list):
                    for entry in self._entries(meta.file_name):
                        name = entry.file.file_name
                        if entry.kind is FileKind.ADD and name not in open_spans:
                            open_spans[name] = Span(entry, snapshot_id)
                            spans.append(open_spans[name])
                        elif entry.kind is FileKind.DELETE and name in open_spans:
                            open_spans.pop(name).end = snapshot_id
            previous = snapshot_id
        return spans

    def latest_names(self) -> set[str]:
        """The data file names of the newest main-table snapshot read (none without snapshots)."""
        return {span.entry.file.file_name for span in self.spans if span.end is None}

    def entries_outside(self, names: Collection[str]) -> list[ManifestEntry]:
        """One entry per data file some root holds whose name is not in ``names`` (files only older snapshots, tags
        or branches hold when ``names`` are the latest snapshot's)."""
        found: dict[str, ManifestEntry] = {}
        for span in self.spans:
            if span.entry.file.file_name not in names:
                found.setdefault(span.entry.file.file_name, span.entry)
        for _, live in self.live:
            for name, entry in live.items():
                if name not in names:
                    found.setdefault(name, entry)
        return list(found.values())

    def holding(self, file_names: Collection[str]) -> dict[Pin, frozenset[str]]:
        """Every root (and consumer) that references one of ``file_names``, sorted, with the names it references."""
        wanted = set(file_names)
        pins: dict[Pin, set[str]] = {}
        if not wanted:
            return {}
        for span in self.spans:
            name = span.entry.file.file_name
            if name in wanted:
                for snapshot_id in self.main_ids:
                    if span.first <= snapshot_id and (span.end is None or snapshot_id < span.end):
                        pins.setdefault(Pin("snapshot", str(snapshot_id), snapshot_id), set()).add(name)
        for root, live in self.live:
            held = wanted.intersection(live)
            if held:
                pins[_pin_of(root)] = held
        by_snapshot = {p.snapshot_id: names for p, names in pins.items() if p.kind == "snapshot"}
        for consumer in self.ctx.store.consumers():
            if consumer.next_snapshot in by_snapshot:
                pins[Pin("consumer", consumer.consumer_id, consumer.next_snapshot)] = by_snapshot[
                    consumer.next_snapshot
                ]
        order = sorted(pins, key=lambda p: (KINDS.index(p.kind), p.snapshot_id or 0, p.name))
        return {pin: frozenset(pins[pin]) for pin in order}


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
