"""Debian's headless Chromium, driven through the DevTools protocol by a small websocket client (stdlib only).

``chromium()`` finds ``/usr/bin/chromium`` and installs Debian's package when it is missing and the run may install
packages (CI set, or running as root); under CI an install that fails is an error, elsewhere the caller skips.
``render(html_file, png_file)`` loads a page, records console errors, uncaught exceptions, error log entries
(failed loads included) and every URL the page requested, then writes a full-page PNG screenshot; ``evaluate``
expressions are run in the loaded page (layout measurements) and their JSON values returned.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
)
"""As the machine's own probe starts it (no background connections: the network is closed), plus DevTools."""


class BrowserUnavailable(Exception):
    """Chromium is not installed and could not be installed."""


def _may_install() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.geteuid() == 0


def chromium() -> str:
    """The Chromium binary, installed from Debian's packages when missing and allowed (see the module doc)."""
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found:
        return found
    if not _may_install():
        raise BrowserUnavailable("chromium is not installed (apt-get install chromium)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    for command in (
        ["apt-get", "install", "-y", "-q", "chromium"],
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "chromium"],
    ):
        done = subprocess.run([*sudo, *command], env=env, capture_output=True, text=True, timeout=900)
        if done.returncode == 0 and command[1] == "install":
            break
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if not found:
        raise BrowserUnavailable(f"apt-get install chromium failed: {done.stderr.strip()[-500:]}")
    return found


class _WebSocket:
    """Just enough of RFC 6455 for DevTools: masked text frames out, whole messages in."""

    def __init__(self, url: str, timeout: float) -> None:
        rest = url.removeprefix("ws://")
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the websocket: {head[:200]!r}")

    def _exact(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            data += chunk
        return bytes(data)

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x81, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def receive(self) -> str:
        message = bytearray()
        while True:
            first, second = self._exact(2)
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._exact(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._exact(8))[0]
            payload = self._exact(size)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the websocket")
            if opcode in (0x9, 0xA):  # ping / pong: not sent by DevTools in practice
                continue
            message += payload
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


@dataclass
class Rendered:
    """What loading a page showed."""

    errors: list[str] = field(default_factory=list)
    """Console errors and assertions, uncaught exceptions, error log entries (failed loads included)."""
    requests: list[str] = field(default_factory=list)
    """Every URL the page requested (the page itself first)."""
    width: int = 0
    height: int = 0
    values: list[Any] = field(default_factory=list)
    """The values of the ``evaluate`` expressions, in order."""


class _Session:
    def __init__(self, ws: _WebSocket, deadline: float) -> None:
        self.ws = ws
        self.deadline = deadline
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def _message(self) -> dict[str, Any]:
        if time.monotonic() > self.deadline:
            raise TimeoutError("the page did not finish loading in time")
        parsed: dict[str, Any] = json.loads(self.ws.receive())
        return parsed

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._message())


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            texts = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            found.append(f"console.{params.get('type')}: {' '.join(texts)}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
    return found


def _page_socket(port: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as answer:
            targets = json.loads(answer.read())
        pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
        if pages:
            return str(pages[0]["webSocketDebuggerUrl"])
        if time.monotonic() > deadline:
            raise TimeoutError("Chromium opened no page")
        time.sleep(0.1)  # polling Chromium's own startup, not synchronising the code under test


def _start(binary: str, profile: str, timeout: float) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the renderer and GPU processes end with it
    )
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while not (port_file.exists() and port_file.read_text().strip()):
        if process.poll() is not None:
            raise BrowserUnavailable(f"chromium exited with {process.returncode} before DevTools was up")
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError("chromium's DevTools did not come up")
        time.sleep(0.05)  # waiting for Chromium's startup
    return process, int(port_file.read_text().split()[0])


def render(
    html_file: Path,
    png_file: Path,
    *,
    width: int = 1200,
    height: int | None = None,
    timeout: float = 90.0,
    evaluate: tuple[str, ...] = (),
) -> Rendered:
    """Load ``html_file`` in headless Chromium and write a PNG screenshot of the whole page (or of the top
    ``height`` CSS pixels) to ``png_file``; each ``evaluate`` JavaScript expression's value is in ``values``."""
    binary = chromium()
    with tempfile.TemporaryDirectory(prefix="tablefmt-chromium-", ignore_cleanup_errors=True) as profile:
        process, port = _start(binary, profile, timeout)
        try:
            ws = _WebSocket(_page_socket(port, timeout), timeout)
            try:
                session = _Session(ws, time.monotonic() + timeout)
                return _load_and_capture(session, html_file, png_file, width, height, evaluate)
            finally:
                ws.close()
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End Chromium and every process it started (its process group), waiting for the main one."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # the helpers of the group may outlive the main process by a moment: make sure they are gone
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _load_and_capture(
    session: _Session, html_file: Path, png_file: Path, width: int, height: int | None, evaluate: tuple[str, ...]
) -> Rendered:
    for domain in ("Page", "Runtime", "Log", "Network"):
        session.call(f"{domain}.enable")
    session.call(
        "Emulation.setDeviceMetricsOverride", width=width, height=height or 800, deviceScaleFactor=1, mobile=False
    )
    session.call("Page.navigate", url=Path(html_file).resolve().as_uri())
    session.wait_for("Page.loadEventFired")
    metrics = session.call("Page.getLayoutMetrics")
    full = int(metrics.get("cssContentSize", metrics.get("contentSize", {})).get("height", 800))
    shot_height = min(full, height) if height else full
    session.call(
        "Emulation.setDeviceMetricsOverride", width=width, height=shot_height, deviceScaleFactor=1, mobile=False
    )
    shot = session.call("Page.captureScreenshot", format="png")
    png_file.write_bytes(base64.b64decode(shot["data"]))
    rendered = Rendered(width=width, height=shot_height)
    for expression in evaluate:
        answer = session.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression!r} failed: {answer['exceptionDetails']}")
        rendered.values.append(answer["result"].get("value"))
    rendered.errors = _errors(session.events)
    rendered.requests = [
        e["params"]["request"]["url"] for e in session.events if e.get("method") == "Network.requestWillBeSent"
    ]
    return rendered


def screenshot(html_file: Path, png_file: Path, *, width: int = 1200, height: int | None = None) -> list[str]:
    """``render`` for scripts: the console errors (empty when there were none)."""
    return render(Path(html_file), Path(png_file), width=width, height=height).errors
