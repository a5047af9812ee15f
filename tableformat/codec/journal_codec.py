"""Bytes of expiration journals (``snapshot/.expire-journal-<plan id>``): compact UTF-8 JSON.

The document is built by the expiration (cleanup/snapshots); this module only turns it into bytes and back. Long
lists of rows (the files of a huge plan) are passed as :class:`RowList` and encoded chunk by chunk, so the journal
of a plan with millions of files never exists as one list of lists in memory.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

FORMAT = "tablefmt-expire-journal"
VERSION = 1

_CHUNK = 4096
"""Rows encoded per json.dumps call."""


class RowList:
    """A list in the document whose rows are made on demand: ``to_row(item)`` for each of ``items``."""

    def __init__(self, items: Sequence[Any], to_row: Callable[[Any], list[Any]]) -> None:
        self.items = items
        self.to_row = to_row


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def encode_journal(document: Mapping[str, Any]) -> bytes:
    """``json.dumps(document, separators=(",", ":"), ensure_ascii=False)`` in UTF-8 (with the format and version
    first), every RowList written as the list it stands for, chunk by chunk (the same bytes, a fraction of the
    memory)."""
    full = {"format": FORMAT, "version": VERSION, **document}
    out = io.BytesIO()
    for index, (key, value) in enumerate(full.items()):
        out.write((("{" if index == 0 else ",") + _dumps(key) + ":").encode("utf-8"))
        if not isinstance(value, RowList):
            out.write(_dumps(value).encode("utf-8"))
            continue
        out.write(b"[")
        for start in range(0, len(value.items), _CHUNK):
            rows = [value.to_row(item) for item in value.items[start : start + _CHUNK]]
            if start:
                out.write(b",")
            out.write(_dumps(rows)[1:-1].encode("utf-8"))
        out.write(b"]")
    out.write(b"}")
    return out.getvalue()


def decode_journal(data: bytes) -> dict[str, Any]:
    """The document; ValueError if the bytes are not a journal of a version this code reads."""
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not an expiration journal")
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported journal version {doc.get('version')!r}")
    return doc
