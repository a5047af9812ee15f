"""The ``tablefmt maintain`` settings: defaults, overridden by a TOML file, so one cron line serves a warehouse.

Example (every key optional)::

    include = ["sales.*"]              # globs on db.table names or locations
    exclude = ["*.scratch_*"]
    parallelism = 2                    # tables maintained at once
    lease-duration = "10 min"
    poll-interval = "5 min"            # --watch: how often an idle table is looked at (3 small reads)
    discovery-interval = "5 min"       # --watch: how often targets are listed again
    backlog-retry = "1 min"            # a table a limit stopped comes back this soon
    keep-up-window = "24 h"
    operations = ["expire-partitions", "expire", "remove-orphans"]

    [storage]                          # storage options, as --storage-option KEY=VALUE
    "client_kwargs.endpoint_url" = "http://127.0.0.1:8333"

    [tables."sales.events"]            # table option overrides (Paimon's names), applied in memory only
    "snapshot.expire.limit" = "100"

A bad file (unknown key, bad or out-of-range duration (1 ms to 36500 d), unknown option or option value out of its
range, a ``[tables]`` glob that matches no table) is a one-line ValidationError naming the file and the key, raised
before any table is touched.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tableformat.codec.maintain_codec import config_from_toml
from tableformat.durations import MAX_DURATION_MS, duration_range, parse_duration_ms
from tableformat.errors import TableFormatError, UnknownOptionError, ValidationError
from tableformat.io.storage_options import storage_options_from_items
from tableformat.option_types import INT32_MAX
from tableformat.options import TableOptions, check_option_keys

from ..registry import OPERATIONS
from .targets import TableTarget, matches

CONFIG_ENV = "TABLEFMT_MAINTAIN_CONFIG"
"""Environment variable naming the config file when ``--config`` is not given."""

_DURATIONS = {
    "lease-duration": "lease_duration_ms",
    "poll-interval": "poll_interval_ms",
    "discovery-interval": "discovery_interval_ms",
    "backlog-retry": "backlog_retry_ms",
    "keep-up-window": "keep_up_window_ms",
}
_KEYS = {"include", "exclude", "parallelism", "operations", "storage", "tables", *_DURATIONS}


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintainSettings:
    """Everything a maintainer pass needs besides the targets."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    parallelism: int = 2
    lease_duration_ms: int = 600_000
    poll_interval_ms: int = 300_000
    discovery_interval_ms: int = 300_000
    backlog_retry_ms: int = 60_000
    keep_up_window_ms: int = 86_400_000
    operations: tuple[str, ...] = tuple(op.name for op in OPERATIONS)
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    table_options: tuple[tuple[str, Mapping[str, str]], ...] = ()
    """(glob, option overrides), in file order; later globs win for the same key."""
    source: str = ""
    """The config file the settings came from ('' for defaults)."""

    def overrides_for(self, table: TableTarget) -> dict[str, str]:
        """The table option overrides the ``[tables]`` globs give this table."""
        merged: dict[str, str] = {}
        for pattern, options in self.table_options:
            if matches(pattern, table):
                merged.update(options)
        return merged

    def check_globs(self, tables: Sequence[TableTarget]) -> None:
        """Refuse a ``[tables]`` or include glob that matches none of the discovered tables (likely a typo)."""
        for pattern, _ in self.table_options:
            if not any(matches(pattern, t) for t in tables):
                raise ValidationError(f"{self.source}: [tables.{pattern!r}] matches no table")


def _fail(path: str, key: str, message: str) -> ValidationError:
    return ValidationError(f"{path}: {key}: {message}")


def _strings(path: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(path, key, "expected a list of non-empty strings")
    return tuple(value)


def _table_options(path: str, value: Any) -> tuple[tuple[str, Mapping[str, str]], ...]:
    if not isinstance(value, dict):
        raise _fail(path, "tables", 'expected tables."<glob>" sections')
    result = []
    for pattern, options in value.items():
        if not isinstance(options, dict):
            raise _fail(path, f"tables.{pattern}", "expected a table of option = value")
        texts = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in options.items()}
        try:
            check_option_keys(texts, allow_unknown=False)
            TableOptions(texts).validate()
        except UnknownOptionError as exc:
            hint = "overrides must be options tablefmt applies (docs/options.md)"
            raise _fail(path, f"tables.{pattern}", exc.describe(hint)) from None
        except TableFormatError as exc:
            raise _fail(path, f"tables.{pattern}", str(exc)) from None
        result.append((str(pattern), texts))
    return tuple(result)


def _storage(path: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, "storage", "expected a table of option = value")
    try:
        return storage_options_from_items((str(k), str(v)) for k, v in value.items())
    except ValidationError as exc:
        raise _fail(path, "storage", str(exc)) from None


def settings_from_mapping(document: Mapping[str, Any], path: str) -> MaintainSettings:
    """Validate a parsed config document (``path`` names it in errors)."""
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise _fail(path, unknown[0], f"unknown key (known: {', '.join(sorted(_KEYS))})")
    values: dict[str, Any] = {"source": path}
    for key, attribute in _DURATIONS.items():
        if key in document:
            try:
                millis = parse_duration_ms(str(document[key]))
            except ValidationError as exc:
                raise _fail(path, key, str(exc)) from None
            if not 0 < millis <= MAX_DURATION_MS:
                raise _fail(path, key, f"must be {duration_range(1)}, got {str(document[key])!r}")
            values[attribute] = millis
    for key in ("include", "exclude"):
        if key in document:
            values[key] = _strings(path, key, document[key])
    if "parallelism" in document:
        parallelism = document["parallelism"]
        if not isinstance(parallelism, int) or isinstance(parallelism, bool):
            raise _fail(path, "parallelism", "expected a whole number >= 1")
        if not 1 <= parallelism <= INT32_MAX:
            raise _fail(path, "parallelism", f"must be >= 1 and <= {INT32_MAX}, got {parallelism}")
        values["parallelism"] = document["parallelism"]
    if "operations" in document:
        names = _strings(path, "operations", document["operations"])
        known = [op.name for op in OPERATIONS]
        for name in names:
            if name not in known:
                raise _fail(path, "operations", f"no operation {name!r} (registered: {', '.join(known)})")
        values["operations"] = names
    if "storage" in document:
        values["storage_options"] = _storage(path, document["storage"])
    if "tables" in document:
        values["table_options"] = _table_options(path, document["tables"])
    return MaintainSettings(**values)


def load_settings(path: str | None = None) -> MaintainSettings:
    """The settings of the file ``path`` (default: $TABLEFMT_MAINTAIN_CONFIG; none: the defaults)."""
    path = path or os.environ.get(CONFIG_ENV) or None
    if path is None:
        return MaintainSettings()
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ValidationError(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    return settings_from_mapping(config_from_toml(data, path), path)
