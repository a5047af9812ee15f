"""The s3fs filesystem S3FileIO runs on, with less client CPU per request (issue 14).

On object stores with 8 requests in flight, botocore's own work per request (building, signing and parsing it,
about 1.2 ms of CPU) sets the pace as much as the store does, all of it on s3fs's one event-loop thread. Two
settings cut that work without changing what is sent or checked:

* a fixed ``User-Agent`` (botocore's ``Config(user_agent=...)``, overridable in ``config_kwargs``): otherwise botocore
  rebuilds and sanitises its User-Agent string twice per request;
* a timestamp parser for the two forms S3 sends (ISO 8601 in listings, RFC 1123 in headers) that falls back to
  botocore's own for anything else: botocore parses every ``LastModified`` with dateutil, about 60 us each, so a
  listing page of 1,000 keys cost 60 ms of CPU. The values are the same datetimes (UTC, ``dateutil.tz.tzutc``).

Checksums, parameter validation and signing stay botocore's defaults. Retries do not: botocore's own (up to four,
each after a random wait of up to 1, 2, 4, 8 s) and s3fs's (five more around them) are replaced by the filesystem's
:class:`~tableformat.io.pacing.RequestPacer`, which retries a throttled or transient failure after a short jittered
backoff and adapts how many requests go to a prefix at once (io/pacing.py).
"""

from __future__ import annotations

import datetime as dt
from email.utils import parsedate_to_datetime
from importlib import metadata
from typing import Any

from dateutil.tz import tzutc
from fsspec.asyn import sync_wrapper
from s3fs import S3FileSystem
from s3fs.core import S3_RETRYABLE_ERRORS
from s3fs.errors import translate_boto_error

from tableformat.io.pacing import RequestPacer, common_prefix_of, error_code, is_throttle, is_transient, prefix_of


def _version() -> str:
    try:
        return metadata.version("tablefmt")
    except metadata.PackageNotFoundError:
        return "0"


USER_AGENT = f"tablefmt/{_version()}"
_UTC = tzutc()
_ZERO = dt.timedelta(0)


def _botocore_timestamp(value: Any) -> Any:
    from botocore.parsers import DEFAULT_TIMESTAMP_PARSER

    return DEFAULT_TIMESTAMP_PARSER(value)


def parse_timestamp(value: Any) -> Any:
    """What botocore's parser returns for ``value``, faster for ``2026-11-24T03:52:00.000Z`` and
    ``Tue, 24 Nov 2026 03:52:00 GMT`` (any other form goes to botocore's parser)."""
    if type(value) is str:
        try:
            if value.endswith("Z") and "T" in value:
                parsed = dt.datetime.fromisoformat(value[:-1])
                if parsed.tzinfo is None:
                    return parsed.replace(tzinfo=_UTC)
            elif value.endswith(" GMT"):
                parsed = parsedate_to_datetime(value)
                if parsed.utcoffset() == _ZERO:
                    return parsed.replace(tzinfo=_UTC)
        except (ValueError, TypeError, IndexError):
            pass
    return _botocore_timestamp(value)


class LeanS3FileSystem(S3FileSystem):  # type: ignore[misc]
    """s3fs's filesystem whose botocore session parses timestamps with :func:`parse_timestamp` (set when s3fs
    creates the session, on the first request; ``connect()`` is s3fs's own and does not set it)."""

    _tuned: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pacer = RequestPacer()
        """Retries and per-prefix concurrency of every request (tests replace it to inject zero backoff)."""

    async def set_session(self, refresh: bool = False, kwargs: dict[str, Any] | None = None) -> Any:
        client = await super().set_session(refresh=refresh, kwargs=kwargs or {})
        session = getattr(self, "session", None)
        if session is not None and session is not self._tuned:
            session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
            self._tuned = session
        return client

    _connect = set_session

    async def _call_s3(self, method: str, *akwarglist: Any, **kwargs: Any) -> Any:
        """s3fs's request, paced: a slot of its prefix first, then retried while throttled or failing transiently
        (up to the pacer's ``max_attempts`` sends); the last error is raised as s3fs would raise it."""
        await self.set_session()
        client = await self.get_s3(kwargs.get("Bucket"))
        call = getattr(client, method)
        params = self._get_s3_method_kwargs(call, *akwarglist, **kwargs)
        pacer, prefix = self.pacer, request_prefix(params)
        attempt = 1
        while True:
            await pacer.acquire(prefix)
            throttled = False
            try:
                return await call(**params)
            except Exception as exc:
                code, status = error_code(exc)
                throttled = is_throttle(code, status)
                again = throttled or is_transient(code, status) or isinstance(exc, S3_RETRYABLE_ERRORS)
                if not again or attempt >= pacer.max_attempts:
                    translated = translate_boto_error(exc)  # as s3fs raises it (its cause set to exc)
                    if translated is exc:
                        raise
                    raise translated from exc
            finally:
                pacer.release(prefix, throttled=throttled)
            await pacer.pause_async(attempt)
            attempt += 1

    call_s3 = sync_wrapper(_call_s3)  # s3fs's own wraps its _call_s3, not this one


def request_prefix(params: dict[str, Any]) -> str:
    """The prefix a request is paced by: its key's directory, its listing prefix's, or its deleted keys' common one."""
    bucket = str(params.get("Bucket") or "")
    if "Key" in params:
        return prefix_of(bucket, str(params["Key"]))
    if "Delete" in params:
        return common_prefix_of(bucket, [str(item["Key"]) for item in params["Delete"].get("Objects", [])])
    return prefix_of(bucket, str(params.get("Prefix") or ""))


MAX_POOL_CONNECTIONS = 64
"""Connections to the store at once (botocore's default is 10): reads that each wait on the store's latency (the
keep-up count's GETs, a census's listings) go out as many at a time as the run has readers."""


def filesystem_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for s3fs with the User-Agent set, botocore's retries off and :data:`MAX_POOL_CONNECTIONS`, unless
    ``config_kwargs`` sets them."""
    config = dict(options.get("config_kwargs") or {})
    config.setdefault("user_agent", USER_AGENT)
    config.setdefault("retries", {"mode": "standard", "total_max_attempts": 1})  # the pacer retries instead
    config.setdefault("max_pool_connections", MAX_POOL_CONNECTIONS)
    return {**options, "config_kwargs": config}


def new_filesystem(options: dict[str, Any]) -> Any:
    """The filesystem for ``options`` (without listings cache or instance sharing, see S3FileIO.create)."""
    kwargs = {**filesystem_options(options), "use_listings_cache": False, "skip_instance_cache": True}
    return LeanS3FileSystem(**kwargs)
