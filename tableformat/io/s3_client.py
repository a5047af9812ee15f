"""The s3fs filesystem S3FileIO runs on, with less client CPU per request (issue 14).

On object stores with 8 requests in flight, botocore's own work per request (building, signing and parsing it,
about 1.2 ms of CPU) sets the pace as much as the store does, all of it on s3fs's one event-loop thread. Two
settings cut that work without changing what is sent or checked:

* a fixed ``User-Agent`` (botocore's ``Config(user_agent=...)``, overridable in ``config_kwargs``): otherwise botocore
  rebuilds and sanitises its User-Agent string twice per request;
* a timestamp parser for the two forms S3 sends (ISO 8601 in listings, RFC 1123 in headers) that falls back to
  botocore's own for anything else: botocore parses every ``LastModified`` with dateutil, about 60 us each, so a
  listing page of 1,000 keys cost 60 ms of CPU. The values are the same datetimes (UTC, ``dateutil.tz.tzutc``).

Checksums, retries, parameter validation and signing stay botocore's defaults.
"""

from __future__ import annotations

import datetime as dt
from email.utils import parsedate_to_datetime
from importlib import metadata
from typing import Any

from dateutil.tz import tzutc
from s3fs import S3FileSystem


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

    async def set_session(self, refresh: bool = False, kwargs: dict[str, Any] | None = None) -> Any:
        client = await super().set_session(refresh=refresh, kwargs=kwargs or {})
        session = getattr(self, "session", None)
        if session is not None and session is not self._tuned:
            session.get_component("response_parser_factory").set_parser_defaults(timestamp_parser=parse_timestamp)
            self._tuned = session
        return client

    _connect = set_session


def filesystem_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for s3fs with the User-Agent set unless ``config_kwargs`` sets one."""
    config = dict(options.get("config_kwargs") or {})
    config.setdefault("user_agent", USER_AGENT)
    return {**options, "config_kwargs": config}


def new_filesystem(options: dict[str, Any]) -> Any:
    """The filesystem for ``options`` (without listings cache or instance sharing, see S3FileIO.create)."""
    kwargs = {**filesystem_options(options), "use_listings_cache": False, "skip_instance_cache": True}
    return LeanS3FileSystem(**kwargs)

