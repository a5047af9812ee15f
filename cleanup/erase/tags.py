"""``erase --purge --include-tags``: the tags that hold erased rows are rewritten, so that each reads as before minus
those rows (docs/erase.md).

For each tag of the main table whose snapshot names a file holding matching rows, those files are rewritten without
them (the shared rewriter's writer and row filter, no commit), then one manifest of the tag's live files (the others
as they were, the new ones added) and two manifest lists (the base, an empty delta) are written, and the tag file is
replaced by the same snapshot (id, schema, commit user and time, properties) over those lists. Readers of the tag
(pypaimon and Paimon included) then find exactly its old rows but the erased ones; nothing of the table's own
snapshots changes. New files are written before the tag is replaced: a crash leaves them unreferenced (orphans), and
the tag either old or new. The files the tags no longer name are deleted by the erasure's purge once no root names
them (execute.py ``freed``), and the erasure records them as pending before, so that a crash between the tag and the
deletes leaves them to ``tablefmt maintain``.

A tag written with an older schema than the table's latest is left as it is and named in a note: its new files
would be written with the latest schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from tableformat.context import TableContext
from tableformat.data_paths import DataPaths
from tableformat.layout import NameFactory
from tableformat.live_set import live_entries
from tableformat.model.manifest import FileKind, ManifestEntry
from tableformat.model.snapshot import CommitKind, Tag

from ..rewrite import CommitSettings, Rewriter, RewriteUnit
from .pins import Pin
from .predicate import EraseFilter

UNCOMMITTED = CommitSettings(commit_user="", snapshot_kind=CommitKind.OVERWRITE)
"""The rewriter only writes here: a tag is replaced, the table gets no commit."""


@dataclass(frozen=True, slots=True)
class TagRewrite:
    """What rewriting the tags did (or, dry, would do)."""

    tags: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    """Files the rewritten tags no longer name (relative to the root): deleted once no root names them."""
    written: tuple[str, ...] = ()
    erased_rows: int = 0
    notes: tuple[str, ...] = ()


def tags_holding(holders: Mapping[Pin, frozenset[str]]) -> dict[str, frozenset[str]]:
    """``{tag name: file names with erased rows}`` of the main table's tags among ``holders``."""
    return {pin.name: names for pin, names in holders.items() if pin.kind == "tag"}


def rewrite_tags(
    ctx: TableContext,
    row_filter: EraseFilter,
    tags: Mapping[str, frozenset[str]],
    target_size: int,
    *,
    dry_run: bool,
    before_writing: Callable[[tuple[str, ...]], None] | None = None,
) -> TagRewrite:
    """Rewrite every tag of ``tags`` without the rows ``row_filter`` matches in the files named there (with
    ``dry_run``: only say which tags and files). ``before_writing`` gets the files the tags will no longer name once
    every tag is read and before anything is written (the caller records them: a crash leaves them findable)."""
    store = ctx.store
    latest = store.latest_schema()
    codec = ctx.partition_codec()
    paths = DataPaths(latest, codec)
    planned: list[tuple[Tag, list[ManifestEntry], list[ManifestEntry]]] = []
    notes: list[str] = []
    for name in sorted(tags):
        tag = store.read_tag(name)
        if tag.snapshot.schema_id != latest.id:
            notes.append(f"tag {name} was written with schema {tag.snapshot.schema_id}, not the latest: not rewritten")
            continue
        entries = live_entries(store, tag.snapshot, codec)
        planned.append((tag, entries, [e for e in entries if e.file.file_name in tags[name]]))
    replaced = tuple(sorted({paths.of_entry(e) for _, _, matched in planned for e in matched}))
    done = tuple(tag.name for tag, _, _ in planned)
    if dry_run:
        return TagRewrite(done, replaced, notes=tuple(notes))
    if before_writing is not None:
        before_writing(replaced)
    written: list[str] = []
    erased = 0
    for tag, entries, matched in planned:
        if not matched:
            continue
        rewriter = Rewriter(ctx, None, target_size, UNCOMMITTED, keep_rows=row_filter.kept)
        new_files = rewriter.write([RewriteUnit(e.partition, e.bucket, e.total_buckets, (e,)) for e in matched])
        erased += sum(e.file.row_count for e in matched) - sum(f.meta.row_count for f in new_files)
        written += [ctx.layout.relative(f.path) for f in new_files]
        adds = [
            ManifestEntry(
                kind=FileKind.ADD, partition=f.partition, bucket=f.bucket, total_buckets=f.total_buckets, file=f.meta
            )
            for f in new_files
        ]
        _replace_tag(ctx, tag, [*(e for e in entries if e.file.file_name not in tags[tag.name]), *adds])
    return TagRewrite(done, replaced, tuple(written), erased, tuple(notes))


def _replace_tag(ctx: TableContext, tag: Tag, entries: list[ManifestEntry]) -> None:
    """Write the manifest and lists of ``entries`` and replace the tag by its snapshot over them."""
    store = ctx.store
    schema = store.latest_schema()
    names = NameFactory()
    partition_types = [f.type for f in schema.partition_fields]
    manifest = store.write_manifest(entries, names, schema.id, partition_types)
    base = store.write_manifest_list([manifest], names)
    delta = store.write_manifest_list([], names)
    snapshot = replace(
        tag.snapshot,
        base_manifest_list=base.name,
        base_manifest_list_size=base.size,
        delta_manifest_list=delta.name,
        delta_manifest_list_size=delta.size,
        changelog_manifest_list=None,
        changelog_manifest_list_size=None,
        total_record_count=sum(e.file.row_count for e in entries),
        delta_record_count=0,
        changelog_record_count=None,
        statistics=None,
    )
    store.replace_tag(replace(tag, snapshot=snapshot))
