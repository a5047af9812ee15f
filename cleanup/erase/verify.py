"""The erasure certificate (``tablefmt erase --verify``): every Parquet file under the table root is scanned, whether
a snapshot, a tag, a branch or nothing references it (data files, changelog files, files of failed writes, orphans,
temp files of atomic writes), reading only the filter's columns; the answer is how many rows match anywhere, in
which files, and which roots still reference those files. Nothing is written.

A file that cannot be read cannot be certified: it is reported (``unreadable``) and the certificate fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tableformat.clock import resolve_now
from tableformat.codec.arrow_schema import arrow_schema_of
from tableformat.context import TableContext
from tableformat.lazy_module import lazy_module
from tableformat.units import time_pair

from .pins import Pin, holding_roots, pins_json, pins_text
from .predicate import EraseFilter

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pq = lazy_module("pyarrow.parquet")

PARQUET_MARK = ".parquet"
"""Data and changelog files end in it; a temp file of an atomic write carries it inside its name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """Where rows matching the filter still exist under the table root."""

    matches: int
    files_scanned: int
    bytes_scanned: int
    """Bytes of the filter columns' chunks read (never the other columns)."""
    matched_files: tuple[tuple[str, int], ...]
    """(path relative to the root, matching rows)."""
    unreadable: tuple[tuple[str, str], ...]
    pinned_by: tuple[Pin, ...]
    snapshot_id: int | None
    """The latest snapshot when the check started."""
    checked_at_ms: int

    @property
    def certified(self) -> bool:
        """No row matches anywhere and every file was read."""
        return self.matches == 0 and not self.unreadable

    def to_json(self) -> dict[str, Any]:
        return {
            "matches": self.matches,
            "files_scanned": self.files_scanned,
            "bytes_scanned": self.bytes_scanned,
            "matched": [{"path": path, "matches": count} for path, count in self.matched_files],
            "unreadable": [{"path": path, "reason": reason} for path, reason in self.unreadable],
            "pinned_by": pins_json(self.pinned_by),
            "snapshot_id": self.snapshot_id,
            **time_pair("checked_at", self.checked_at_ms),
        }

    def summary(self) -> tuple[str, ...]:
        verdict = "no row matches" if self.certified else f"{self.matches} matching row(s) remain"
        lines = [
            f"erase --verify: {verdict} in {self.files_scanned} Parquet file(s) ({self.bytes_scanned} bytes of the "
            f"filter's columns read) at snapshot {self.snapshot_id}"
        ]
        lines += [f"  {path}: {count} row(s)" for path, count in self.matched_files]
        lines += [f"unreadable {path}: {reason}" for path, reason in self.unreadable]
        lines += [f"still held by {text}" for text in pins_text(self.pinned_by)]
        return tuple(lines)


def _column_bytes(metadata: Any, names: set[str]) -> int:
    total = 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            column = row_group.column(index)
            if column.path_in_schema.split(".")[0] in names:
                total += column.total_compressed_size
    return total


def file_matches(ctx: TableContext, fs: Any, path: str, row_filter: EraseFilter, types: pa.Schema) -> tuple[int, int]:
    """(matching rows, bytes read) of one Parquet file, by its columns' names; a column it lacks reads as nulls."""
    with pq.ParquetFile(path, filesystem=fs) as parquet:
        present = [n for n in row_filter.columns if n in parquet.schema_arrow.names]
        read = parquet.read(columns=present) if present else None
        rows = parquet.metadata.num_rows
        scanned = _column_bytes(parquet.metadata, set(present))
    arrays = {}
    for name in row_filter.columns:
        dtype = types.field(name).type
        arrays[name] = read[name].cast(dtype) if read is not None and name in present else pa.nulls(rows, dtype)
    table = pa.table(arrays) if arrays else pa.table({})
    return row_filter.count(table), scanned


def verify_erasure(ctx: TableContext, row_filter: EraseFilter, now_ms: int | None = None) -> VerifyResult:
    """Scan every Parquet file under the table root for rows ``row_filter`` matches (but the audit ledger's
    records, ``.tablefmt/audit/``: they hold no table rows, and an erasure's filter only as a digest)."""
    checked_at = resolve_now(now_ms)
    latest = ctx.store.latest_snapshot_id()
    types = arrow_schema_of(list(ctx.schema.fields))
    fs = ctx.io.arrow_filesystem()
    matches = files = scanned = 0
    found: list[tuple[str, int]] = []
    unreadable: list[tuple[str, str]] = []
    names: set[str] = set()
    ledger = ctx.layout.relative(ctx.layout.audit_dir) + "/"
    for info in ctx.io.walk_files(ctx.layout.root):
        relative = ctx.layout.relative(info.path)
        if PARQUET_MARK not in info.name or relative.startswith(ledger):
            continue
        files += 1
        try:
            count, read = file_matches(ctx, fs, info.path, row_filter, types)
        except (OSError, pa.ArrowException, ValueError) as exc:
            unreadable.append((relative, " ".join(str(exc).split())[:200]))
            continue
        scanned += read
        if count:
            matches += count
            found.append((relative, count))
            names.add(info.name)
    pins = tuple(holding_roots(ctx, names))
    return VerifyResult(
        matches=matches,
        files_scanned=files,
        bytes_scanned=scanned,
        matched_files=tuple(sorted(found)),
        unreadable=tuple(sorted(unreadable)),
        pinned_by=pins,
        snapshot_id=latest,
        checked_at_ms=checked_at,
    )
