"""Bytes of the maintainer's lease and state files (JSON, tablefmt's own: Paimon never reads them)."""

from __future__ import annotations

import json
import sys
from typing import Any

from tableformat.errors import CorruptMetadataError, ValidationError
from tableformat.model.maintain import CLAIM_KINDS, Claim, HourStats, Lease, MaintainState, OperationState

STATE_VERSION = 1


def lease_to_json(lease: Lease) -> bytes:
    document = {
        "generation": lease.generation,
        "owner": lease.owner,
        "host": lease.host,
        "pid": lease.pid,
        "acquiredMillis": lease.acquired_ms,
        "expiresMillis": lease.expires_ms,
    }
    return json.dumps(document, indent=2).encode("utf-8")


def lease_from_json(data: bytes, path: str) -> Lease:
    try:
        doc = json.loads(data.decode("utf-8"))
        return Lease(
            generation=int(doc["generation"]),
            owner=str(doc["owner"]),
            host=str(doc.get("host", "")),
            pid=int(doc.get("pid", 0)),
            acquired_ms=int(doc["acquiredMillis"]),
            expires_ms=int(doc["expiresMillis"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptMetadataError(path, f"not a maintenance lease: {exc}") from None


def claim_to_json(claim: Claim) -> bytes:
    document = {
        "kind": claim.kind,
        "owner": claim.owner,
        "operation": claim.operation,
        "host": claim.host,
        "pid": claim.pid,
        "acquiredMillis": claim.acquired_ms,
        "expiresMillis": claim.expires_ms,
    }
    return json.dumps(document, indent=2).encode("utf-8")


def claim_from_json(data: bytes, path: str) -> Claim:
    try:
        doc = json.loads(data.decode("utf-8"))
        claim = Claim(
            kind=str(doc["kind"]),
            owner=str(doc["owner"]),
            operation=str(doc.get("operation", "")),
            host=str(doc.get("host", "")),
            pid=int(doc.get("pid", 0)),
            acquired_ms=int(doc["acquiredMillis"]),
            expires_ms=int(doc["expiresMillis"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptMetadataError(path, f"not a table claim: {exc}") from None
    if claim.kind not in CLAIM_KINDS:
        raise CorruptMetadataError(path, f"not a table claim: unknown kind {claim.kind!r}")
    return claim


def _operation_doc(state: OperationState) -> dict[str, Any]:
    return {
        "lastRunMillis": state.last_run_ms,
        "nextDueMillis": state.next_due_ms,
        "backlog": state.backlog,
        "failures": state.failures,
        "lastError": state.last_error,
        "onChange": state.on_change,
    }


def _hour_doc(hour: HourStats) -> list[int]:
    return [hour.hour_ms, hour.commits, hour.ingest_rows, hour.ingest_bytes, hour.dropped_rows, hour.reclaimed_bytes]


def state_to_json(state: MaintainState) -> bytes:
    document = {
        "version": STATE_VERSION,
        "latestSnapshotId": state.latest_snapshot_id,
        "schemaId": state.schema_id,
        "countedSnapshotId": state.counted_snapshot_id,
        "lastSuccessMillis": state.last_success_ms,
        "operations": {name: _operation_doc(op) for name, op in state.operations.items()},
        "hours": [_hour_doc(h) for h in state.hours],
        "backlogHistory": list(state.backlog_history),
    }
    return json.dumps(document, indent=1).encode("utf-8")


def state_from_json(data: bytes, path: str) -> MaintainState:
    """The state; CorruptMetadataError for anything else (the caller treats the table as never maintained)."""
    try:
        doc = json.loads(data.decode("utf-8"))
        if doc.get("version") != STATE_VERSION:
            raise ValueError(f"version {doc.get('version')!r}")
        operations = {
            str(name): OperationState(
                last_run_ms=int(op["lastRunMillis"]),
                next_due_ms=int(op["nextDueMillis"]),
                backlog=int(op.get("backlog", 0)),
                failures=int(op.get("failures", 0)),
                last_error=str(op.get("lastError", "")),
                on_change=bool(op.get("onChange", True)),
            )
            for name, op in doc["operations"].items()
        }
        hours = tuple(HourStats(**dict(zip(_HOUR_KEYS, map(int, row), strict=True))) for row in doc["hours"])
        latest = doc.get("latestSnapshotId")
        schema_id = doc.get("schemaId")
        return MaintainState(
            latest_snapshot_id=None if latest is None else int(latest),
            schema_id=None if schema_id is None else int(schema_id),
            counted_snapshot_id=int(doc.get("countedSnapshotId", 0)),
            operations=operations,
            hours=hours,
            backlog_history=tuple(int(b) for b in doc.get("backlogHistory", ())),
            last_success_ms=int(doc.get("lastSuccessMillis", 0)),
        )
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise CorruptMetadataError(path, f"not a maintenance state: {exc}") from None


_HOUR_KEYS = ("hour_ms", "commits", "ingest_rows", "ingest_bytes", "dropped_rows", "reclaimed_bytes")


def config_from_toml(data: bytes, path: str) -> dict[str, Any]:
    """A ``tablefmt maintain`` config file as a dict; ValidationError naming the file for anything but TOML."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        document: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
        return document
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError(f"{path}: not a TOML file: {exc}") from None
