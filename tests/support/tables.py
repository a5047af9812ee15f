"""Tables on disk, for every suite: the files under a root, ageing them, rows as comparable tuples, and the
independent reachability oracle.

The oracle (:func:`reachable_files`) uses the scan side only (the metadata store, the live-set merge and the data
reader's paths), never ``tableformat.cleanup``: it is what cleanup is checked against. tests/test_import_rules.py
keeps it that way.

Nothing here needs more than pyarrow and tableformat (no pypaimon, no pytest): the interop environment, which pins
an older pyarrow, imports it too.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tableformat.context import TableContext
from tableformat.io.fileio import FileIO
from tableformat.layout import TableLayout
from tableformat.live_set import live_entries
from tableformat.scan.reader import DataReader
from tableformat.store import MetadataStore

DAY_S = 86_400
FAR_FUTURE_MS = 4_102_444_800_000  # 2100-01-01: every snapshot, tag and consumer is old by then

ID_PART_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int32())])
"""The two-column schema most maintenance tests partition by ``part``."""


# --- files on disk --------------------------------------------------------------------------------------------------
AUDIT_DIR = ".tablefmt/audit"
"""The audit ledger (docs/audit.md): beside the table, not one of its files. The helpers below leave it out (pass
``audit=True`` to keep it); tests of the ledger read it with ``audit_files``."""


def _audit(rel: str) -> bool:
    return rel == AUDIT_DIR or rel.startswith(AUDIT_DIR + "/")


def audit_files(root: str | Path) -> set[str]:
    """The audit ledger's files under ``root`` (names inside ``.tablefmt/audit/``)."""
    base = Path(root) / AUDIT_DIR
    return {p.name for p in base.iterdir() if p.is_file()} if base.is_dir() else set()


def files_under(root: str | Path, *, audit: bool = False) -> set[str]:
    """Every file under ``root`` (recursively), as a POSIX path relative to it; empty when ``root`` is missing.
    The audit ledger only with ``audit=True``."""
    base = Path(root)
    found = {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()}
    return found if audit else {rel for rel in found if not _audit(rel)}


def dirs_under(root: str | Path, *, audit: bool = False) -> set[str]:
    """Every directory under ``root`` (recursively, ``root`` itself excluded), relative to it. Without ``audit``,
    neither the ledger's directory nor a ``.tablefmt`` that holds nothing else."""
    base = Path(root)
    found = {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_dir()}
    if audit:
        return found
    found = {rel for rel in found if not _audit(rel)}
    maintain = base / ".tablefmt"
    if maintain.is_dir() and all(_audit(p.relative_to(base).as_posix()) for p in maintain.iterdir()):
        found.discard(".tablefmt")
    return found


def paths_under(root: str | Path) -> set[str]:
    """Every file and directory under ``root`` (``root`` excluded), relative to it; directories end in ``/``."""
    return files_under(root) | {f"{d}/" for d in dirs_under(root)}


def tree_bytes(root: str | Path, *, audit: bool = False) -> dict[str, bytes]:
    """Every file under ``root`` with its content (see files_under): a byte-exact picture of a tree."""
    base = Path(root)
    found = {p.relative_to(base).as_posix(): p for p in sorted(base.rglob("*")) if p.is_file()}
    return {rel: p.read_bytes() for rel, p in found.items() if audit or not _audit(rel)}


def age_path(path: str | Path, seconds: float) -> None:
    """Set the mtime (and atime) of one file or directory to ``seconds`` ago (negative: in the future)."""
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def age_files(root: str | Path, seconds: float) -> None:
    """Set the mtime of every file and directory under ``root`` to ``seconds`` ago (one stamp for all)."""
    stamp = time.time() - seconds
    for path in Path(root).rglob("*"):
        os.utime(path, (stamp, stamp))


# --- branches, as Paimon writes them ----------------------------------------------------------------------------
def branch_from_tag(root: Path, branch: str, tag: str, snapshot_id: int) -> None:
    """What pypaimon's create_branch(branch, tag) writes: the tag, its snapshot and schema-0, copied."""
    home = root / "branch" / f"branch-{branch}"
    for sub in ("tag", "snapshot", "schema"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "tag" / f"tag-{tag}", home / "tag" / f"tag-{tag}")
    shutil.copyfile(root / "snapshot" / f"snapshot-{snapshot_id}", home / "snapshot" / f"snapshot-{snapshot_id}")
    shutil.copyfile(root / "schema" / "schema-0", home / "schema" / "schema-0")


def branch_from_snapshot(root: Path, branch: str, snapshot_id: int) -> None:
    """A branch holding a copy of a main snapshot (Paimon Java's create_branch from a snapshot)."""
    home = root / "branch" / f"branch-{branch}"
    for sub in ("snapshot", "schema"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / "snapshot" / f"snapshot-{snapshot_id}", home / "snapshot" / f"snapshot-{snapshot_id}")
    shutil.copyfile(root / "schema" / "schema-0", home / "schema" / "schema-0")


# --- rows -----------------------------------------------------------------------------------------------------------
def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, v if v is not None else 0) for v in row)


def _plain(value: Any) -> Any:
    """Values that compare differently but mean the same (memoryviews are bytes)."""
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def rows_of(table: pa.Table, columns: Sequence[str] | None = None) -> list[tuple[Any, ...]]:
    """Every row of ``table`` as a tuple (in ``columns`` order, default the table's), sorted; None sorts last."""
    names = list(columns) if columns is not None else table.column_names
    data = table.select(names).to_pylist()
    return sorted((tuple(_plain(r[n]) for n in names) for r in data), key=_sort_key)


def row_counts(table: pa.Table, columns: Sequence[str] | None = None) -> Counter[tuple[Any, ...]]:
    """The rows of ``table`` as a multiset (see rows_of): for models that add and remove rows."""
    return Counter(rows_of(table, columns))


def id_part_rows(start: int, count: int, parts: Iterable[int] = (0, 1, 2, 3)) -> pa.Table:
    """``count`` rows of ID_PART_SCHEMA: ids ``start``, ``start + 1``, ..., parts cycling through ``parts``."""
    cycle = list(parts)
    return pa.table(
        {"id": list(range(start, start + count)), "part": [cycle[i % len(cycle)] for i in range(count)]},
        schema=ID_PART_SCHEMA,
    )


# --- contexts and the oracle ----------------------------------------------------------------------------------------
def context_with_io(root: str | Path, file_io: FileIO) -> TableContext:
    """The context of the table at ``root`` (local path), doing all its IO through ``file_io``."""
    layout = TableLayout(str(root))
    store = MetadataStore(file_io, layout)
    return TableContext(location=str(root), io=file_io, layout=layout, store=store, schema=store.latest_schema())


def reachable_files(ctx: TableContext) -> set[str]:
    """What a table needs, relative to its root: the metadata roots (snapshots, tags, consumers, schemas, hints)
    plus every file a present snapshot or tag references (manifest lists, manifests, live data files).

    Independent of cleanup/: the snapshots and tags are read through the metadata store, the live files merged by
    the scan's live-set code and located by the data reader, i.e. exactly what a reader would open.
    """
    store, layout = ctx.store, ctx.layout
    reader = DataReader(ctx.io, layout, ctx.schema, ctx.schema_by_id, ctx.partition_codec())
    ids = store.snapshot_ids()
    roots = [store.read_snapshot(i) for i in ids] + [t.snapshot for t in store.tags()]
    files = {layout.relative(layout.snapshot_file(i)) for i in ids}
    files |= {layout.relative(layout.tag_file(n)) for n in store.tag_names()}
    files |= {layout.relative(layout.consumer_file(c.consumer_id)) for c in store.consumers()}
    files |= {layout.relative(layout.schema_file(i)) for i in store.schema_ids()}
    files |= {f"snapshot/{hint}" for hint in ("LATEST", "EARLIEST") if ctx.io.exists(layout.hint_file(hint))}
    for snapshot in roots:
        for name in snapshot.manifest_lists():
            files.add(layout.relative(layout.manifest_file(name)))
        for meta in store.manifests_of(snapshot):
            files.add(layout.relative(layout.manifest_file(meta.file_name)))
        for entry in live_entries(store, snapshot, ctx.partition_codec(), threads=1):
            files.add(layout.relative(reader.path_of(entry)))
    return files


# --- options written unchecked ---------------------------------------------------------------------------------
def with_stored_options(table: Any, **options: str) -> Any:
    """The table (a tableformat Table) after a new schema whose options were written unchecked, as an older
    tablefmt, Paimon or pypaimon may have written them."""
    from dataclasses import replace

    store = table.context.store
    latest = store.latest_schema()
    assert store.write_schema_if_absent(replace(latest, id=latest.id + 1, options={**latest.options, **options}))
    return type(table).open(table.location)
