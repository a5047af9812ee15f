"""Bytes of the audit ledger (``.tablefmt/audit/<run id>.parquet``): one Parquet file per run.

Every row is one file of the run, and carries the run's columns too (run id, operation, start, end, outcome,
host, process, options, overrides; dictionary-encoded, so repeating them costs next to nothing), so that
``SELECT * FROM '<table>/.tablefmt/audit/*.parquet'`` in DuckDB, ``pl.read_parquet`` or ``pq.read_table`` reads
the ledger as one table with no join. A run with no file rows (a crashed run's record) has one row whose file
columns are null. Rows are sorted by path and written in small row groups with statistics, so a question about one
path reads only the row groups whose min/max can hold it. The run itself, with its totals, is also in the footer's
key-value metadata (``tablefmt.audit``, JSON): listing runs reads footers only.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from tableformat.lazy_module import lazy_module
from tableformat.model.audit import (
    DEFERRED,
    DELETED,
    RESTORED,
    RETIRED,
    AuditFile,
    AuditRun,
    FileColumns,
    RunCounts,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")
    pq = lazy_module("pyarrow.parquet")

FORMAT = "tablefmt-audit"
VERSION = 1
METADATA_KEY = b"tablefmt.audit"
ROW_GROUP_ROWS = 16_384
"""Rows per row group: small enough that a path question reads little, large enough for few footers entries."""


def schema() -> pa.Schema:
    """The ledger's Parquet schema (run columns, then file columns)."""
    ts = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            ("run_id", pa.string()),
            ("operation", pa.string()),
            ("started", ts),
            ("finished", ts),
            ("outcome", pa.string()),
            ("detail", pa.string()),
            ("host", pa.string()),
            ("pid", pa.int64()),
            ("options", pa.string()),
            ("overrides", pa.string()),
            ("undo_until", ts),
            ("path", pa.string()),
            ("size", pa.int64()),
            ("reason", pa.string()),
            ("state", pa.string()),
            ("due", ts),
            ("undoes", pa.string()),
        ]
    )


def _counts(states: pa.Array, sizes: pa.Array) -> RunCounts:
    by_state: dict[str, tuple[int, int]] = {}
    if len(states):
        grouped = (
            pa.table({"state": states, "size": sizes}).group_by("state").aggregate([("size", "count"), ("size", "sum")])
        )
        for state, count, total in zip(
            *(grouped[c].to_pylist() for c in ("state", "size_count", "size_sum")), strict=True
        ):
            by_state[state] = (count, total)
    return RunCounts(
        deleted_files=by_state.get(DELETED, (0, 0))[0],
        deleted_bytes=by_state.get(DELETED, (0, 0))[1],
        retired_files=by_state.get(RETIRED, (0, 0))[0],
        retired_bytes=by_state.get(RETIRED, (0, 0))[1],
        deferred_files=by_state.get(DEFERRED, (0, 0))[0],
        deferred_bytes=by_state.get(DEFERRED, (0, 0))[1],
        restored_files=by_state.get(RESTORED, (0, 0))[0],
        restored_bytes=by_state.get(RESTORED, (0, 0))[1],
    )


def _run_document(run: AuditRun, counts: RunCounts) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "run_id": run.run_id,
        "operation": run.operation,
        "started_ms": run.started_ms,
        "finished_ms": run.finished_ms,
        "outcome": run.outcome,
        "detail": run.detail,
        "host": run.host,
        "pid": run.pid,
        "options": dict(run.options),
        "overrides": dict(run.overrides),
        "undo_until_ms": run.undo_until_ms,
        "undoes": run.undoes,
        "snapshot_ids": list(run.snapshot_ids),
        "counts": {name: getattr(counts, name) for name in RunCounts.__slots__},
    }


def _dumps(value: Mapping[str, str]) -> str:
    return json.dumps(dict(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def encode_audit(run: AuditRun, files: FileColumns) -> bytes:
    """The Parquet bytes of one run's record (``run.counts`` is computed from ``files``)."""
    rows = max(1, len(files))
    has_files = len(files) > 0
    paths, sizes = pa.array(files.paths, pa.string()), pa.array(files.sizes, pa.int64())
    states = pa.array(files.states, pa.string())
    counts = _counts(states, sizes)

    def repeated(value: Any, type_: pa.DataType) -> pa.Array:
        return pa.repeat(pa.scalar(value, type_), rows)

    ts = pa.timestamp("ms", tz="UTC")
    run_columns = [
        repeated(run.run_id, pa.string()),
        repeated(run.operation, pa.string()),
        repeated(run.started_ms, ts),
        repeated(run.finished_ms, ts),
        repeated(run.outcome, pa.string()),
        repeated(run.detail, pa.string()),
        repeated(run.host, pa.string()),
        repeated(run.pid, pa.int64()),
        repeated(_dumps(run.options), pa.string()),
        repeated(_dumps(run.overrides), pa.string()),
        repeated(run.undo_until_ms, ts),
    ]
    if has_files:
        file_columns = [
            paths,
            sizes,
            pa.array(files.reasons, pa.string()),
            states,
            pa.array([run.undo_until_ms if state == DEFERRED else None for state in files.states], ts),
            pa.array([run.undoes or None if state == RESTORED else None for state in files.states], pa.string()),
        ]
    else:
        file_columns = [pa.nulls(1, t) for t in (pa.string(), pa.int64(), pa.string(), pa.string(), ts, pa.string())]
    if has_files:  # rows by path; only the file columns are reordered (the run's columns are one value repeated)
        order = pc.sort_indices(paths)
        file_columns = [column.take(order) for column in file_columns]
    table = pa.Table.from_arrays(run_columns + file_columns, schema=schema())
    document = json.dumps(_run_document(run, counts), separators=(",", ":"), ensure_ascii=False)
    table = table.replace_schema_metadata({METADATA_KEY: document.encode("utf-8")})
    out = io.BytesIO()
    pq.write_table(
        table,
        out,
        row_group_size=ROW_GROUP_ROWS,
        compression="zstd",
        use_dictionary=["run_id", "operation", "outcome", "detail", "host", "options", "overrides", "reason", "state"],
        write_statistics=["path"],
    )
    return out.getvalue()


def _run_of(document: Mapping[str, Any]) -> AuditRun:
    if document.get("format") != FORMAT:
        raise ValueError("not an audit record")
    if document.get("version") != VERSION:
        raise ValueError(f"unsupported audit record version {document.get('version')!r}")
    return AuditRun(
        run_id=str(document["run_id"]),
        operation=str(document["operation"]),
        started_ms=int(document["started_ms"]),
        finished_ms=None if document["finished_ms"] is None else int(document["finished_ms"]),
        outcome=str(document["outcome"]),
        detail=str(document.get("detail", "")),
        host=str(document.get("host", "")),
        pid=int(document.get("pid", 0)),
        options={str(k): str(v) for k, v in document.get("options", {}).items()},
        overrides={str(k): str(v) for k, v in document.get("overrides", {}).items()},
        undo_until_ms=None if document.get("undo_until_ms") is None else int(document["undo_until_ms"]),
        undoes=str(document.get("undoes") or ""),
        snapshot_ids=tuple(int(i) for i in document.get("snapshot_ids") or ()),
        counts=RunCounts(**{k: int(v) for k, v in document.get("counts", {}).items() if k in RunCounts.__slots__}),
    )


def decode_audit_run(source: IO[bytes]) -> AuditRun:
    """The run (with its totals) from a record's footer; ValueError when the file is not an audit record."""
    try:
        metadata = pq.ParquetFile(source).schema_arrow.metadata or {}
    except pa.ArrowException as exc:
        raise ValueError(f"not a Parquet file: {exc}") from exc
    raw = metadata.get(METADATA_KEY)
    if raw is None:
        raise ValueError("a Parquet file without an audit record")
    return _run_of(json.loads(raw.decode("utf-8")))


def decode_audit_files(source: IO[bytes], path: str | None = None) -> list[AuditFile]:
    """The file rows of a record (with ``path``: only that file's rows, reading only the row groups whose
    statistics can hold it); ValueError when the file is not an audit record."""
    columns = ["path", "size", "reason", "state", "due", "undoes"]
    try:
        parquet = pq.ParquetFile(source)
        if path is None:
            table = parquet.read(columns=columns)
        else:
            groups = _groups_holding(parquet, path)
            table = parquet.read_row_groups(groups, columns=columns) if groups else None
    except pa.ArrowException as exc:
        raise ValueError(f"not an audit record: {exc}") from exc
    if table is None:
        return []
    if path is not None:
        table = table.filter(pc.equal(table["path"], path))
    due = table["due"].cast(pa.int64()).to_pylist()
    return [
        AuditFile(path=p, size=s, reason=r, state=st, due_ms=d, undoes=u or "")
        for p, s, r, st, d, u in zip(
            table["path"].to_pylist(),
            table["size"].to_pylist(),
            table["reason"].to_pylist(),
            table["state"].to_pylist(),
            due,
            table["undoes"].to_pylist(),
            strict=True,
        )
        if p is not None
    ]


def _groups_holding(parquet: pq.ParquetFile, path: str) -> list[int]:
    """Row groups whose path statistics (min/max) can hold ``path`` (every group without statistics)."""
    index = parquet.schema_arrow.get_field_index("path")
    groups = []
    for group in range(parquet.metadata.num_row_groups):
        stats = parquet.metadata.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max or stats.min <= path <= stats.max:
            groups.append(group)
    return groups
