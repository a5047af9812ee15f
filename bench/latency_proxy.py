"""A small HTTP/1.1 proxy for the S3 benchmarks: adds a fixed latency to every request and counts them by type.

It sits between s3fs (botocore) and a local SeaweedFS: every request read from a client connection waits
``latency_s`` before it is forwarded upstream on that connection's own upstream connection, then the response is
passed back. Requests are classified from the method, path and query string (GetObject, ListObjectsV2,
DeleteObjects, ...) and the object keys of GetObject requests are recorded, so a benchmark can print requests per
operation and find objects read twice. Bench only: no TLS, no pipelining (botocore never pipelines).

With ``slowdown_every=n`` the proxy answers every n-th request (counted over all connections, in arrival order)
with ``503 SlowDown`` itself, after the same latency, as S3 does when a prefix is asked too fast; those requests
never reach SeaweedFS and are counted apart (``SlowDown``), on top of their operation.

The proxy runs in a child process (its event loop must not compete for the benchmark's GIL); the parent talks to it
over a pipe (``reset``, ``snapshot``, ``stats``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_HEAD_LIMIT = 1 << 20


def classify(method: str, target: str) -> tuple[str, str]:
    """(S3 operation, key or prefix) of a path-style request such as ``GET /bucket/key``."""
    parts = urlsplit(target)
    query = parse_qs(parts.query, keep_blank_values=True)
    _bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
    if method == "GET":
        if "list-type" in query:
            return "ListObjectsV2", query.get("prefix", [""])[0]
        if not key:
            return "ListObjects" if not query else "GetBucket" + ",".join(sorted(query)), ""
        return "GetObject", key
    if method == "HEAD":
        return ("HeadObject", key) if key else ("HeadBucket", "")
    if method == "PUT":
        return ("PutObject", key) if key else ("CreateBucket", "")
    if method == "POST" and "delete" in query:
        return "DeleteObjects", ""
    if method == "DELETE":
        return "DeleteObject", key
    return f"{method}?{','.join(sorted(query))}", key


class _ProxyServer:
    """The proxy itself (runs in the child process)."""

    def __init__(self, upstream_host: str, upstream_port: int, latency_s: float, slowdown_every: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.latency_s = latency_s
        self.slowdown_every = slowdown_every
        self.arrivals = 0
        self.counts: Counter[str] = Counter()
        self.keys_read: Counter[str] = Counter()
        self.prefixes_listed: set[str] = set()
        self.spans: list[tuple[float, float, str, str]] = []
        self.endpoint_url = ""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------------
    def __enter__(self) -> _ProxyServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=512))
            port = self._server.sockets[0].getsockname()[1]
            self.endpoint_url = f"http://127.0.0.1:{port}"
            ready.set()
            loop.run_forever()
            self._server.close()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=run, name="latency-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join()

    def reset(self) -> None:
        with self._lock:
            self.counts.clear()
            self.keys_read.clear()
            self.prefixes_listed.clear()
            self.spans.clear()

    def timeline(self) -> list[tuple[float, float, str, str]]:
        """(arrival, answered, operation, key or prefix) of every request since the last reset (monotonic seconds)."""
        with self._lock:
            return list(self.spans)

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.counts)

    def stats(self) -> tuple[Counter[str], list[str], int, int]:
        """(requests by type, keys fetched by more than one GetObject, distinct keys read, distinct prefixes listed)."""
        with self._lock:
            twice = sorted(key for key, n in self.keys_read.items() if n > 1)
            return Counter(self.counts), twice, len(self.keys_read), len(self.prefixes_listed)

    # --- proxying -----------------------------------------------------------------------------------------------
    async def _serve(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        upstream_in: asyncio.StreamReader | None = None
        upstream_out: asyncio.StreamWriter | None = None
        try:
            while True:
                head = await _read_head(client_in)
                if head is None:
                    return
                arrived = time.monotonic()
                method, target, headers = _parse_request_head(head)
                if headers.get("expect", "").lower() == "100-continue":
                    client_out.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    await client_out.drain()
                    head = _drop_header(head, b"expect")
                body = await _read_body(client_in, headers)
                operation, key = classify(method, target)
                with self._lock:
                    self.arrivals += 1
                    refuse = bool(self.slowdown_every) and self.arrivals % self.slowdown_every == 0
                    self.counts[operation] += 1
                    if refuse:
                        self.counts["SlowDown"] += 1
                    elif operation == "GetObject":
                        self.keys_read[key] += 1
                    elif operation == "ListObjectsV2":
                        self.prefixes_listed.add(key)
                await asyncio.sleep(self.latency_s)
                if refuse:
                    client_out.write(_slowdown(method))
                    await client_out.drain()
                    with self._lock:
                        self.spans.append((arrived, time.monotonic(), operation, key))
                    continue
                if upstream_out is None:
                    upstream_in, upstream_out = await asyncio.open_connection(*self.upstream)
                assert upstream_in is not None
                upstream_out.write(head + body)
                await upstream_out.drain()
                response = await _read_head(upstream_in)
                if response is None:
                    return
                status, response_headers = _parse_response_head(response)
                no_body = method == "HEAD" or status in (204, 304) or 100 <= status < 200
                payload = b"" if no_body else await _read_body(upstream_in, response_headers, until_close=True)
                client_out.write(response + payload)
                await client_out.drain()
                with self._lock:
                    self.spans.append((arrived, time.monotonic(), operation, key))
                if response_headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            for writer in (client_out, upstream_out):
                if writer is not None:
                    writer.close()


def _slowdown(method: str) -> bytes:
    """S3's answer to a request rate its prefix cannot take."""
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
        b"<Message>Please reduce your request rate.</Message><RequestId>proxy</RequestId></Error>"
    )
    head = (
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\nx-amz-request-id: proxy\r\n\r\n"
    ).encode("latin-1")
    return head if method == "HEAD" else head + body


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    except asyncio.LimitOverrunError:
        return await reader.read(_HEAD_LIMIT)


def _headers(lines: list[bytes]) -> dict[str, str]:
    result = {}
    for line in lines:
        name, _, value = line.decode("latin-1").partition(":")
        result[name.strip().lower()] = value.strip()
    return result


def _parse_request_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head[:-4].split(b"\r\n")
    method, target, _version = lines[0].decode("latin-1").split(" ", 2)
    return method, target, _headers(lines[1:])


def _parse_response_head(head: bytes) -> tuple[int, dict[str, str]]:
    lines = head[:-4].split(b"\r\n")
    return int(lines[0].split(b" ", 2)[1]), _headers(lines[1:])


def _drop_header(head: bytes, name: bytes) -> bytes:
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() != name]
    return b"\r\n".join(kept) + b"\r\n\r\n"


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], *, until_close: bool = False) -> bytes:
    """The raw body (chunked bodies are passed on as they are, chunk framing included)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            parts.append(size_line)
            size = int(size_line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    line = await reader.readuntil(b"\r\n")
                    parts.append(line)
                    if line == b"\r\n":
                        return b"".join(parts)
            parts.append(await reader.readexactly(size + 2))
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    return await reader.read() if until_close else b""


def _child(upstream_host: str, upstream_port: int, latency_s: float, slowdown_every: int, conn: Connection) -> None:
    with _ProxyServer(upstream_host, upstream_port, latency_s, slowdown_every) as server:
        conn.send(server.endpoint_url)
        while True:
            command = conn.recv()
            if command == "stop":
                conn.send(None)
                return
            if command == "reset":
                server.reset()
                conn.send(None)
            elif command == "stats":
                conn.send(server.stats())
            elif command == "timeline":
                conn.send(server.timeline())


class LatencyProxy:
    """``with LatencyProxy(host, port, 0.020) as proxy:`` then point s3fs at ``proxy.endpoint_url``
    (``slowdown_every=10``: one request in ten answered 503 SlowDown)."""

    def __init__(self, upstream_host: str, upstream_port: int, latency_s: float, slowdown_every: int = 0) -> None:
        self._args = (upstream_host, upstream_port, latency_s, slowdown_every)
        self.endpoint_url = ""
        self._conn: Connection | None = None
        self._process: Any = None

    def __enter__(self) -> LatencyProxy:
        parent, child = multiprocessing.Pipe()
        self._process = multiprocessing.get_context("spawn").Process(
            target=_child, args=(*self._args, child), name="latency-proxy", daemon=True
        )
        self._process.start()
        self._conn = parent
        self.endpoint_url = parent.recv()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ask("stop")
        self._process.join()

    def _ask(self, command: str) -> Any:
        assert self._conn is not None
        self._conn.send(command)
        return self._conn.recv()

    def reset(self) -> None:
        """Forget the requests counted so far."""
        self._ask("reset")

    def stats(self) -> tuple[Counter[str], list[str], int, int]:
        """(requests by type, keys read more than once, distinct keys read, distinct prefixes listed) since reset."""
        result: tuple[Counter[str], list[str], int, int] = self._ask("stats")
        return result

    def timeline(self) -> list[tuple[float, float, str, str]]:
        """(arrival, answered, operation, key or prefix) of every request since reset (monotonic seconds)."""
        spans: list[tuple[float, float, str, str]] = self._ask("timeline")
        return spans
