"""Credentials kept out of every exception, log line and repr the S3 FileIO produces, and botocore's missing-credentials
failure told as what to set."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

from tableformat.errors import StorageError, TableFormatError

P = ParamSpec("P")
T = TypeVar("T")

_SECRET_OPTIONS = ("key", "secret", "token", "username", "password")
_SECRET_CLIENT_KWARGS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
_SECRET_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
_MIN_SECRET_LEN = 4
_REDACTED = "***"


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what it was raised from or during, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


class Scrubber:
    """Removes credential values from text and exceptions."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if len(s) >= _MIN_SECRET_LEN}
        self._secrets = sorted(unique, key=len, reverse=True)

    @classmethod
    def for_options(cls, options: dict[str, Any], fs: Any = None) -> Scrubber:
        """Secrets from storage options, the filesystem (fsspec config applied) and the standard AWS env vars."""
        values: list[Any] = [options.get(name) for name in _SECRET_OPTIONS]
        client_kwargs = options.get("client_kwargs") or {}
        values += [client_kwargs.get(name) for name in _SECRET_CLIENT_KWARGS]
        values += [getattr(fs, name, None) for name in ("key", "secret", "token")]
        values += [os.environ.get(name) for name in _SECRET_ENV]
        return cls(str(v) for v in values if v)

    def text(self, text: str) -> str:
        """``text`` with every secret replaced."""
        for secret in self._secrets:
            text = text.replace(secret, _REDACTED)
        return text

    def leaks(self, exc: BaseException) -> bool:
        """Whether a secret appears in the message or repr of ``exc`` or anything it chains to."""
        rendered = [f"{item}\n{item!r}" for item in exception_chain(exc)]
        return any(secret in text for text in rendered for secret in self._secrets)

    def exception(self, exc: BaseException) -> BaseException:
        """``exc`` itself when it leaks nothing, else a fresh exception of the same kind without a chain."""
        if not self.leaks(exc):
            return exc
        message = self.text(str(exc))
        own_text = f"{exc}\n{exc!r}"
        clean: BaseException
        if isinstance(exc, TableFormatError) and self.text(own_text) == own_text:
            clean = exc  # our own message is clean: keep the object (and its attributes), drop the chain
        elif type(exc).__module__ == "builtins":
            try:
                clean = type(exc)(message)
            except Exception:
                clean = StorageError(message)
        else:
            clean = StorageError(f"{type(exc).__name__}: {message}")
        clean.__cause__ = clean.__context__ = None
        clean.__suppress_context__ = True
        return clean


NO_CREDENTIALS = (
    "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in the environment, "
    "or give the storage options key and secret (CLI: --storage-option key=... --storage-option secret=...); "
    "a public bucket needs anon=true"
)


def call_scrubbed(scrubber: Scrubber, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``func(*args, **kwargs)``; anything raised is re-raised without credentials (and outside the handler)."""
    clean: BaseException | None = None
    try:
        return func(*args, **kwargs)
    except Exception as exc:
        if any(type(cause).__name__ == "NoCredentialsError" for cause in exception_chain(exc)):
            clean = StorageError(NO_CREDENTIALS)  # botocore's "Unable to locate credentials" says not what to give
            raise clean from None
        clean = scrubber.exception(exc)
        if not isinstance(clean, (OSError, TableFormatError, ValueError, TypeError)):
            # botocore/aiohttp failures such as EndpointConnectionError are not OSErrors: make them StorageErrors
            wrapped = StorageError(f"{type(clean).__name__}: {clean}")
            wrapped.__cause__ = clean  # already scrubbed: ``exc`` itself only when it leaks nothing
            clean = wrapped
        elif clean is exc:
            raise
    raise clean
