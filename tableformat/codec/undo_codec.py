"""Bytes of the undo window's lists (``.tablefmt/undo/<run id>/held-<n>`` and ``released-<run id>``): small JSON
documents, each created once and never rewritten."""

from __future__ import annotations

import json
from typing import Any

from tableformat.model.undo import HeldList, ReleasedList

HELD_FORMAT = "tablefmt-undo-held"
RELEASED_FORMAT = "tablefmt-undo-released"
VERSION = 1


def _dumps(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data: bytes, expected: str) -> dict[str, Any]:
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != expected:
        raise ValueError(f"not a {expected} document")
    if document.get("version") != VERSION:
        raise ValueError(f"unsupported {expected} version {document.get('version')!r}")
    return document


def encode_held(held: HeldList) -> bytes:
    return _dumps(
        {
            "format": HELD_FORMAT,
            "version": VERSION,
            "run_id": held.run_id,
            "due_ms": held.due_ms,
            "operation": held.operation,
            "files": [[path, size] for path, size in held.files],
        }
    )


def decode_held(data: bytes) -> HeldList:
    """ValueError when the bytes are not a held list."""
    document = _loads(data, HELD_FORMAT)
    try:
        files = tuple((str(path), int(size)) for path, size in document["files"])
        operation = str(document.get("operation") or "")
        return HeldList(str(document["run_id"]), int(document["due_ms"]), files, operation)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed held list: {exc}") from exc


def encode_released(released: ReleasedList) -> bytes:
    return _dumps(
        {
            "format": RELEASED_FORMAT,
            "version": VERSION,
            "undo_run_id": released.undo_run_id,
            "paths": list(released.paths),
        }
    )


def decode_released(data: bytes) -> ReleasedList:
    """ValueError when the bytes are not a released list."""
    document = _loads(data, RELEASED_FORMAT)
    try:
        return ReleasedList(str(document["undo_run_id"]), tuple(str(p) for p in document["paths"]))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed released list: {exc}") from exc
