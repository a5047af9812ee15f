"""Count the S3 requests a FileIO sends, at the botocore call (an event hook on its client), for request-count tests.

``RequestLog.attach(io)`` registers a ``before-parameter-build.s3`` handler (it sees the API parameters: Key,
Prefix, Delete) on the client of an ``S3FileIO``'s s3fs filesystem: every API call made through it (retries are
not calls) is recorded as (operation, key or prefix, number of keys for DeleteObjects), in order, from every thread.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tableformat.io.s3 import S3FileIO


@dataclass(frozen=True)
class Call:
    operation: str
    """The S3 API operation, e.g. GetObject, ListObjectsV2, DeleteObjects."""
    key: str
    """Key of an object operation, Prefix of a listing, '' otherwise."""
    keys: int = 0
    """DeleteObjects: how many keys the request named."""
    delimiter: str = ""
    """ListObjectsV2: its Delimiter ('' for a recursive listing)."""
    start_after: str = ""
    """ListObjectsV2: its StartAfter ('' when the listing starts at its Prefix)."""


class RequestLog:
    """Every S3 call of the attached FileIOs, in order."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def attach(self, io: Any) -> RequestLog:
        """Hook ``io`` (an S3FileIO, or a wrapper whose ``inner`` chain leads to one)."""
        while not isinstance(io, S3FileIO):
            io = io.inner
        io.fs.connect()
        io.fs.s3.meta.events.register("before-parameter-build.s3", self._record)
        return self

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        key = str(params.get("Key") or params.get("Prefix") or "")
        keys = len(params.get("Delete", {}).get("Objects", [])) if model.name == "DeleteObjects" else 0
        with self._lock:
            delimiter, start_after = str(params.get("Delimiter") or ""), str(params.get("StartAfter") or "")
            self.calls.append(Call(model.name, key, keys, delimiter, start_after))

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def counts(self) -> Counter[str]:
        """Calls by operation."""
        return Counter(call.operation for call in self.calls)

    def read_twice(self) -> list[str]:
        """Keys fetched by more than one GetObject."""
        reads = Counter(call.key for call in self.calls if call.operation == "GetObject")
        return sorted(key for key, n in reads.items() if n > 1)

    def of(self, operation: str) -> list[Call]:
        return [call for call in self.calls if call.operation == operation]
