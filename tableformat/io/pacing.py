"""How fast S3FileIO asks an object store: retries of throttled requests with backoff, and a concurrency that adapts.

S3 answers a request rate above what a key prefix can take with ``503 SlowDown`` (or a per-key ``SlowDown`` in a
DeleteObjects result). A refused request did not happen, so it is sent again after a backoff, and the number of
requests let in flight to that prefix adapts, additive increase and multiplicative decrease (AIMD), as TCP's window:

* every prefix (a bucket and a key's parent directory, ``bucket/table/manifest/``) has a limit, starting at
  ``ceiling``; a request waits for a slot below its prefix's limit;
* a success raises the limit by ``increase`` (0.5), up to ``ceiling``;
* a throttle multiplies it by ``decrease`` (not below ``floor``), at most once per window: after a decrease, the
  limit is lowered again only once as many requests have completed as were in flight at the decrease (those were
  sent at the old limit, and their throttles say nothing about the new one);
* the request is retried after ``backoff(attempt)`` seconds (exponential with full jitter by default; tests inject
  zero), up to ``max_attempts`` sends in all; then its error is raised (or the per-key failure reported).

Why 0.5 per success rather than TCP's one per window: a store that refuses one request in ten at random (what S3
does now and then at any rate) would hold TCP's rule at about half the concurrency asked for, losing half the
throughput; with 0.5 per success and the decrease once per window, such a run keeps most of it (docs/benchmarks.md),
while a prefix that refuses half of the requests still drives the limit down near the floor (in a simulation of
eight workers, to a tenth of the unthrottled rate), and the doubling backoff slows it further.

Transient failures that are not throttles (HTTP 500, 502, 504, a dropped connection) are retried the same way but
leave the limit alone. The pacer runs on s3fs's event loop (``acquire``) and in the delete threads (``throttled``,
``pause``); its state is guarded by one lock, so both may use it at once.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tableformat.io.scrubbing import exception_chain

THROTTLE_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "TooManyRequests",
        "TooManyRequestsException",
        "ServiceUnavailable",
        "503 SlowDown",
    }
)
"""Error codes (of a response or of one DeleteObjects key) that mean "too fast, send it again later"."""

TRANSIENT_CODES = frozenset({"InternalError", "RequestTimeout", "RequestTimeTooSkewed"})
"""Error codes of failures worth sending again that say nothing about the request rate."""

_THROTTLE_STATUS = (429, 503)
_TRANSIENT_STATUS = (500, 502, 504)


def error_code(exc: BaseException) -> tuple[str, int]:
    """S3 error code and HTTP status of the botocore ClientError in ``exc``'s chain, or ('', 0)."""
    for item in exception_chain(exc):
        response = getattr(item, "response", None)
        if isinstance(response, dict):
            status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            return str(response.get("Error", {}).get("Code", "")), status
    return "", 0


def is_throttle(code: str, status: int) -> bool:
    """Whether an S3 error (code, HTTP status) says the request rate is too high."""
    return code in THROTTLE_CODES or status in _THROTTLE_STATUS


def is_transient(code: str, status: int) -> bool:
    """Whether an S3 error is worth retrying although it is no throttle (an internal error, a gateway timeout)."""
    return code in TRANSIENT_CODES or status in _TRANSIENT_STATUS


def jittered_backoff(attempt: int) -> float:
    """Seconds to wait before send ``attempt + 1`` (attempt >= 1): uniform in [0, min(5, 0.01 x 2^attempt)] ("full
    jitter": clients throttled together spread their retries). The first waits are short (at most 20, 40, 80 ms):
    a lone SlowDown costs about one more round trip, and a sustained one is answered by the lower limit (AIMD)
    and by the wait doubling with every attempt (up to 2.56 s before the eighth)."""
    return random.uniform(0.0, min(5.0, 0.01 * 2**attempt))


def prefix_of(bucket: str, key: str) -> str:
    """The prefix a request is paced by: ``bucket/`` plus the key's parent directory (with its ``/``)."""
    parent = key.rpartition("/")[0]
    return f"{bucket}/{parent}/" if parent else f"{bucket}/"


def common_prefix_of(bucket: str, keys: list[str]) -> str:
    """The prefix of a request naming many keys (DeleteObjects): their deepest common directory."""
    if not keys:
        return f"{bucket}/"
    low, high = min(keys), max(keys)
    size = 0
    while size < min(len(low), len(high)) and low[size] == high[size]:
        size += 1
    parent = low[:size].rpartition("/")[0]
    return f"{bucket}/{parent}/" if parent else f"{bucket}/"


@dataclass
class _Window:
    """One prefix's state: its limit, requests in flight, waiters for a slot, and the decrease guard."""

    limit: float
    in_flight: int = 0
    completed: int = 1
    """Requests completed since the last decrease (a request's throttle counts after its own completion)."""
    guard: int = 0
    """Requests in flight at the last decrease: completions needed before the next one."""
    waiters: deque[asyncio.Future[None]] = field(default_factory=deque)


class RequestPacer:
    """Retries with backoff and per-prefix AIMD concurrency for the requests of one S3 filesystem."""

    def __init__(
        self,
        *,
        ceiling: int = 64,
        floor: int = 1,
        increase: float = 0.5,
        decrease: float = 0.5,
        max_attempts: int = 8,
        backoff: Callable[[int], float] = jittered_backoff,
    ) -> None:
        self.ceiling = max(1, ceiling)
        self.floor = max(1, min(floor, self.ceiling))
        self.increase = increase
        self.decrease = decrease
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.throttles: Counter[str] = Counter()
        """Throttled answers by prefix (whole requests and DeleteObjects keys alike)."""
        self.retries = 0
        """Sends that repeated an earlier one (after a throttle or a transient failure)."""
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def limit(self, prefix: str) -> float:
        """The current limit of a prefix (``ceiling`` until it is first throttled)."""
        with self._lock:
            window = self._windows.get(prefix)
            return window.limit if window else float(self.ceiling)

    def _window(self, prefix: str) -> _Window:
        window = self._windows.get(prefix)
        if window is None:
            window = self._windows[prefix] = _Window(float(self.ceiling))
        return window

    async def acquire(self, prefix: str) -> None:
        """Wait for a slot of ``prefix`` (on the event loop)."""
        while True:
            with self._lock:
                window = self._window(prefix)
                if window.in_flight < max(self.floor, int(window.limit)):
                    window.in_flight += 1
                    return
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                window.waiters.append(waiter)
            await waiter

    def release(self, prefix: str, *, throttled: bool) -> None:
        """Free the slot taken by :meth:`acquire` and adapt the limit to how the request went."""
        with self._lock:
            window = self._window(prefix)
            window.in_flight -= 1
            window.completed += 1
            self._adapt(prefix, window, throttled, 1)
            self._wake(window)

    def keys_throttled(self, prefix: str, count: int) -> None:
        """Count ``count`` keys of one completed request refused as throttled (a DeleteObjects result's
        ``SlowDown`` entries): one throttle signal for the request, whatever the count."""
        with self._lock:
            self._adapt(prefix, self._window(prefix), True, count)

    def pause(self, attempt: int) -> None:
        """Sleep the backoff before send ``attempt + 1`` in a worker thread (nothing when the backoff is zero)."""
        delay = self._next_delay(attempt)
        if delay > 0:
            time.sleep(delay)

    async def pause_async(self, attempt: int) -> None:
        """:meth:`pause` on the event loop."""
        delay = self._next_delay(attempt)
        if delay > 0:
            await asyncio.sleep(delay)

    def _next_delay(self, attempt: int) -> float:
        with self._lock:
            self.retries += 1
        return self.backoff(attempt)

    def _adapt(self, prefix: str, window: _Window, throttled: bool, count: int) -> None:
        if not throttled:
            window.limit = min(float(self.ceiling), window.limit + self.increase)
            return
        self.throttles[prefix] += count
        if window.completed > window.guard:  # a window has passed since the last decrease: lower the limit
            window.limit = max(float(self.floor), window.limit * self.decrease)
            window.guard, window.completed = window.in_flight, 0

    @staticmethod
    def _wake(window: _Window) -> None:
        free = max(1, int(window.limit)) - window.in_flight
        while free > 0 and window.waiters:
            waiter = window.waiters.popleft()
            if not waiter.done():
                waiter.get_loop().call_soon_threadsafe(_settle, waiter)
                free -= 1


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
