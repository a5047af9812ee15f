"""Answer S3 requests with SlowDown, deterministically, at the botocore call (fault injection for throttling tests).

``SlowDown(rule).attach(io)`` registers event handlers on the client of an ``S3FileIO``'s s3fs filesystem (the
one ``RequestLog`` hooks), so the requests it refuses never reach the store, as with S3's own throttling:

* ``rule(call)`` sees every API call in order (``Call``: the call's number from 1, its operation and key or
  prefix, its DeleteObjects keys) and says which to refuse: ``True`` answers the whole request with HTTP 503
  ``SlowDown``; a set of keys (DeleteObjects only) refuses just those entries, ``SlowDown`` in the result's
  ``Errors``, while the other keys are really deleted by the store.
* ``refused`` counts the refusals: whole requests, and DeleteObjects entries.

Nothing sleeps: the store answers at once, and tests give the FileIO a pacer with zero backoff (``no_backoff``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tableformat.io.pacing import RequestPacer
from tableformat.io.s3 import S3FileIO


@dataclass(frozen=True)
class Call:
    number: int
    """1 for the first call the injector saw, then 2, 3, ... (retries are calls)."""
    operation: str
    key: str
    """Key of an object operation, Prefix of a listing, '' otherwise."""
    keys: tuple[str, ...] = ()
    """DeleteObjects: the keys it names."""


Rule = Callable[[Call], "bool | set[str]"]


def no_backoff(attempt: int) -> float:
    return 0.0


def zero_backoff_pacer(**settings: Any) -> RequestPacer:
    """A pacer that retries at once (tests never sleep)."""
    return RequestPacer(backoff=no_backoff, **settings)


def every(n: int, operations: tuple[str, ...] = ()) -> Rule:
    """Refuse every n-th call (of the given operations, or of all): 1 in n requests answered SlowDown."""
    seen = 0
    lock = threading.Lock()

    def rule(call: Call) -> bool:
        nonlocal seen
        if operations and call.operation not in operations:
            return False
        with lock:
            seen += 1
            return seen % n == 0

    return rule


def first_attempt_of_each(operations: tuple[str, ...] = ()) -> Rule:
    """Refuse the first send of every distinct request (by operation and key or prefix; DeleteObjects by its keys,
    each entry refused once): every request is throttled exactly once."""
    sent: set[tuple[str, str]] = set()
    lock = threading.Lock()

    def rule(call: Call) -> bool | set[str]:
        if operations and call.operation not in operations:
            return False
        with lock:
            if call.operation == "DeleteObjects":
                fresh = {key for key in call.keys if ("DeleteObjects", key) not in sent}
                sent.update(("DeleteObjects", key) for key in fresh)
                return fresh
            first = (call.operation, call.key) not in sent
            sent.add((call.operation, call.key))
            return first

    return rule


def keys_always(keys: set[str]) -> Rule:
    """Refuse these DeleteObjects entries every time (a store that never lets them go)."""

    def rule(call: Call) -> set[str]:
        return {key for key in call.keys if key in keys}

    return rule


class _Answer:
    """The HTTP response object botocore's after-call handlers and status check read."""

    def __init__(self, status: int) -> None:
        self.status_code = status
        self.headers: dict[str, str] = {}


class SlowDown:
    """Refuses the calls ``rule`` picks, on every S3FileIO it is attached to."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.refused = 0
        """Whole requests answered 503 SlowDown."""
        self.refused_keys = 0
        """DeleteObjects entries answered SlowDown."""
        self._number = 0
        self._lock = threading.Lock()

    def attach(self, io: Any) -> SlowDown:
        """Hook ``io`` (an S3FileIO, or a wrapper whose ``inner`` chain leads to one)."""
        while not isinstance(io, S3FileIO):
            io = io.inner
        io.fs.connect()
        events = io.fs.s3.meta.events
        events.register("before-parameter-build.s3", self._decide)
        events.register("before-call.s3", self._answer)
        events.register("after-call.s3.DeleteObjects", self._add_errors)
        return self

    def _decide(self, model: Any, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        objects = params.get("Delete", {}).get("Objects", []) if model.name == "DeleteObjects" else []
        keys = tuple(str(item["Key"]) for item in objects)
        with self._lock:
            self._number += 1
            number = self._number
        verdict = self.rule(Call(number, model.name, str(params.get("Key") or params.get("Prefix") or ""), keys))
        if verdict is True:
            context["slowdown"] = True
        elif verdict:
            refused = [key for key in keys if key in verdict]
            context["slowdown-keys"] = refused
            kept = [item for item in objects if item["Key"] not in verdict]
            context["slowdown-all-keys"] = not kept
            if kept:
                params["Delete"]["Objects"] = kept

    def _answer(self, model: Any, context: dict[str, Any], **_: Any) -> tuple[_Answer, dict[str, Any]] | None:
        if context.get("slowdown"):
            with self._lock:
                self.refused += 1
            error = {"Code": "SlowDown", "Message": "Please reduce your request rate."}
            return _Answer(503), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 503}}
        if context.get("slowdown-all-keys"):
            return _Answer(200), {"Deleted": [], "ResponseMetadata": {"HTTPStatusCode": 200}}
        return None

    def _add_errors(self, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        refused = context.get("slowdown-keys") or []
        if not refused:
            return
        with self._lock:
            self.refused_keys += len(refused)
        errors = [{"Key": key, "Code": "SlowDown", "Message": "Please reduce your request rate."} for key in refused]
        parsed["Errors"] = [*parsed.get("Errors", []), *errors]
