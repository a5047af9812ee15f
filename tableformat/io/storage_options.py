"""Storage options from text: the one parser behind the CLI's ``--storage-option k=v`` and Spark's ``storage.<key>``.

fsspec filesystems take their storage options as Python keyword arguments, but a command line or a Spark option
map only carries strings, and a string such as ``"false"`` is truthy. This module turns ``key=value`` text into
the typed keyword arguments:

* a key of :data:`TYPED_KEYS` gets its value converted: booleans are ``true`` / ``false`` (any case), integers
  and numbers are Python literals; anything else there is a :class:`~tableformat.errors.ValidationError`;
* ``outer.inner=value`` nests one level (``client_kwargs.region_name=eu`` -> ``{"client_kwargs": {...}}``);
* every other value stays the string it was, unstripped.

The typed keys are those of ``s3fs.S3FileSystem.__init__`` (and the fsspec cache options it passes on) whose
default is a bool or an int, plus the bool/int/number entries of botocore's ``create_client`` (``client_kwargs``)
and ``Config`` (``config_kwargs``). A test checks the table against the installed s3fs and botocore.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from tableformat.errors import ValidationError


class ValueKind(str, Enum):
    """How the text of a typed storage option is read."""

    BOOLEAN = "boolean"
    """``true`` or ``false``, any case."""
    INTEGER = "integer"
    """A Python int literal (``4``, ``8_388_608``)."""
    NUMBER = "number"
    """An int, else a finite float (timeouts and expiry times in seconds)."""
    BOOLEAN_OR_TEXT = "boolean-or-text"
    """``true`` / ``false`` as a bool, anything else kept as text (botocore's ``verify``: a flag or a CA bundle)."""


TYPED_KEYS: Mapping[str, ValueKind] = {
    # s3fs.S3FileSystem.__init__
    "anon": ValueKind.BOOLEAN,
    "use_ssl": ValueKind.BOOLEAN,
    "requester_pays": ValueKind.BOOLEAN,
    "default_fill_cache": ValueKind.BOOLEAN,
    "version_aware": ValueKind.BOOLEAN,
    "cache_regions": ValueKind.BOOLEAN,
    "asynchronous": ValueKind.BOOLEAN,
    "fixed_upload_size": ValueKind.BOOLEAN,
    "local_expiry_check": ValueKind.BOOLEAN,
    "default_block_size": ValueKind.INTEGER,
    "max_concurrency": ValueKind.INTEGER,
    # fsspec options that s3fs passes on (instance cache, listings cache)
    "skip_instance_cache": ValueKind.BOOLEAN,
    "use_listings_cache": ValueKind.BOOLEAN,
    "listings_expiry_time": ValueKind.NUMBER,
    "max_paths": ValueKind.INTEGER,
    # botocore Session.create_client, via s3fs client_kwargs
    "client_kwargs.use_ssl": ValueKind.BOOLEAN,
    "client_kwargs.verify": ValueKind.BOOLEAN_OR_TEXT,
    # botocore.config.Config, via s3fs config_kwargs
    "config_kwargs.connect_timeout": ValueKind.NUMBER,
    "config_kwargs.read_timeout": ValueKind.NUMBER,
    "config_kwargs.max_pool_connections": ValueKind.INTEGER,
    "config_kwargs.parameter_validation": ValueKind.BOOLEAN,
    "config_kwargs.inject_host_prefix": ValueKind.BOOLEAN,
    "config_kwargs.use_dualstack_endpoint": ValueKind.BOOLEAN,
    "config_kwargs.use_fips_endpoint": ValueKind.BOOLEAN,
    "config_kwargs.ignore_configured_endpoint_urls": ValueKind.BOOLEAN,
    "config_kwargs.tcp_keepalive": ValueKind.BOOLEAN,
    "config_kwargs.request_min_compression_size_bytes": ValueKind.INTEGER,
    "config_kwargs.disable_request_compression": ValueKind.BOOLEAN,
}
"""Storage option -> how its text is read (nested options as ``outer.inner``). Keys not here stay strings."""


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError
    return lowered == "true"


def _integer(text: str) -> int:
    return int(text.strip())


def _number(text: str) -> int | float:
    try:
        return int(text.strip())
    except ValueError:
        value = float(text.strip())
    if not math.isfinite(value):
        raise ValueError
    return value


def _boolean_or_text(text: str) -> bool | str:
    try:
        return _boolean(text)
    except ValueError:
        return text


_READERS: dict[ValueKind, tuple[Callable[[str], Any], str]] = {
    ValueKind.BOOLEAN: (_boolean, "true or false"),
    ValueKind.INTEGER: (_integer, "an integer"),
    ValueKind.NUMBER: (_number, "a number"),
    ValueKind.BOOLEAN_OR_TEXT: (_boolean_or_text, "true, false or a path"),
}
"""Each kind's reader (raises ValueError on bad text) and what the error message says is expected."""


def typed_value(key: str, text: str, *, name: str | None = None) -> Any:
    """The value of storage option ``key`` (``outer.inner`` when nested) read from ``text``.

    ``name`` is how the key is named in the error (default: ``key``).
    """
    kind = TYPED_KEYS.get(key)
    if kind is None:
        return text
    reader, expected = _READERS[kind]
    try:
        return reader(text)
    except ValueError:
        raise ValidationError(f"storage option {name or key!r} must be {expected}, got {text!r}") from None


def split_pair(pair: str) -> tuple[str, str]:
    """``'k=v'`` -> ``('k', 'v')``, split at the first ``=``; a pair without ``=`` or key is a ValidationError."""
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise ValidationError(f"expected KEY=VALUE, got {pair!r}")
    return key, value


def storage_options_from_items(items: Iterable[tuple[str, str]], *, prefix: str = "") -> dict[str, Any]:
    """(key, text) items -> typed storage options; later items win.

    Each key starts with ``prefix`` (e.g. Spark's ``storage.``), which is dropped from the option and kept in
    error messages, so they name the key as the user wrote it.
    """
    result: dict[str, Any] = {}
    for given, text in items:
        key = given[len(prefix) :] if prefix and given.startswith(prefix) else given
        outer, dot, inner = key.partition(".")
        if not outer or (dot and not inner):
            raise ValidationError(f"storage option {given!r}: expected KEY or OUTER.KEY, both parts non-empty")
        value = typed_value(key, text, name=given)
        if not dot:
            if isinstance(result.get(key), dict):
                raise ValidationError(f"storage option {given!r} is also given nested keys ({key}.KEY=VALUE)")
            result[key] = value
            continue
        nested = result.setdefault(outer, {})
        if not isinstance(nested, dict):
            raise ValidationError(
                f"storage option {given!r} nests under {prefix + outer!r}, which is also given a value"
            )
        nested[inner] = value
    return result


def parse_storage_options(pairs: Iterable[str]) -> dict[str, Any]:
    """``key=value`` texts (the CLI's ``--storage-option``) -> typed storage options; see the module doc."""
    return storage_options_from_items(split_pair(pair) for pair in pairs)
