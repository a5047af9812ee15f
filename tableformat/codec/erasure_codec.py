"""Bytes of a pending erasure (``.tablefmt/erasures/erasure-<snapshot id>``): a small JSON document."""

from __future__ import annotations

import json

from tableformat.model.erasure import PendingErasure

FORMAT = "tablefmt-pending-erasure"
VERSION = 1


def encode_pending_erasure(pending: PendingErasure) -> bytes:
    document = {
        "format": FORMAT,
        "version": VERSION,
        "snapshot_id": pending.snapshot_id,
        "deadline_ms": pending.deadline_ms,
        "files": list(pending.files),
    }
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def decode_pending_erasure(data: bytes) -> PendingErasure:
    """ValueError when the bytes are not a pending erasure."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("version") != VERSION:
        raise ValueError("not a pending erasure")
    try:
        files = tuple(str(name) for name in document["files"])
        return PendingErasure(int(document["snapshot_id"]), int(document["deadline_ms"]), files)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed pending erasure: {exc}") from exc
