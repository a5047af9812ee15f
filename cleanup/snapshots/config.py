"""Expiration settings: the table's options with per-call overrides, validated before anything is touched."""

from __future__ import annotations

from dataclasses import dataclass

from tableformat.errors import ValidationError
from tableformat.option_types import INT32_MAX
from tableformat.options import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_PRODUCER,
    CHANGELOG_TIME_RETAINED,
    CONSUMER_EXPIRATION_TIME,
    FILE_OPERATION_THREAD_NUM,
    SNAPSHOT_CLEAN_EMPTY_DIRECTORIES,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
    TableOptions,
)

"""A retention time: a timedelta, milliseconds, or a duration string such as ``30s``, ``15m``, ``1h``, ``7d``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpireConfig:
    """What one expiration run may expire (Paimon's ExpireConfig, plus tablefmt's run settings)."""

    retain_min: int
    """The newest N snapshots never expire (``snapshot.num-retained.min``, >= 1)."""
    retain_max: int
    """Snapshots beyond the newest N expire regardless of age (``snapshot.num-retained.max``, >= retain_min)."""
    time_retained_ms: int
    """A snapshot expires only once its successor is older than this (``snapshot.time-retained``)."""
    limit: int
    """At most this many snapshot ids per run (``snapshot.expire.limit``, >= 1)."""
    clean_empty_dirs: bool = False
    """Remove partition/bucket directories left empty (``snapshot.clean-empty-directories``)."""
    parallelism: int = 8
    """Threads for metadata reads and deletes (``file-operation.thread-num``)."""
    consumer_expiration_ms: int | None = None
    """Consumers not updated for this long stop protecting snapshots and are removed (``consumer.expiration-time``)."""
    changelog_decoupled: str = ""
    """Why changelogs outlive their snapshots (Paimon's ``changelogDecoupled``: a ``changelog.*`` retention above the
    snapshot one, e.g. ``changelog.num-retained.max (20) > 5``); '' when the changelog expires with its snapshot.
    Decoupled, each expired snapshot leaves ``changelog/changelog-<id>`` (changelog.py)."""
    produce_changelog: bool = False
    """``changelog-producer`` is not ``none``: the changelog is in changelog manifests (else the delta's data files
    are the changelog, and a long-lived changelog keeps its manifest lists and data files)."""
    changelog_retain_min: int = 1
    """Long-lived changelogs never expired: the newest N ids (``changelog.num-retained.min``, default retain_min)."""
    changelog_retain_max: int = INT32_MAX
    """Long-lived changelogs beyond the newest N ids expire whatever their age (``changelog.num-retained.max``)."""
    changelog_time_retained_ms: int = 0
    """A long-lived changelog expires once older than this (``changelog.time-retained``, default time_retained_ms)."""
    delete_tags: frozenset[str] = frozenset()
    """Tags to delete now whatever their time-retained (``tag delete``: with the files only they held)."""

    def __post_init__(self) -> None:
        for name in ("retain_min", "retain_max", "time_retained_ms", "limit", "parallelism"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValidationError(f"{name} must be an integer, got {value!r}")
        if self.retain_min < 1:
            raise ValidationError(f"snapshot.num-retained.min must be >= 1, got {self.retain_min}")
        if self.retain_max < self.retain_min:
            raise ValidationError(
                f"snapshot.num-retained.max ({self.retain_max}) must be >= "
                f"snapshot.num-retained.min ({self.retain_min})"
            )
        if self.time_retained_ms < 0:
            raise ValidationError(f"snapshot.time-retained must not be negative, got {self.time_retained_ms} ms")
        if self.limit < 1:
            raise ValidationError(f"snapshot.expire.limit must be >= 1, got {self.limit}")
        if self.parallelism < 1:
            raise ValidationError(f"parallelism must be >= 1, got {self.parallelism}")
        if self.changelog_decoupled and self.changelog_retain_max < self.changelog_retain_min:
            raise ValidationError(
                f"changelog.num-retained.max ({self.changelog_retain_max}) must be >= "
                f"changelog.num-retained.min ({self.changelog_retain_min})"
            )
        if self.consumer_expiration_ms is not None and self.consumer_expiration_ms < 0:
            raise ValidationError(f"consumer.expiration-time must not be negative: {self.consumer_expiration_ms} ms")

    @classmethod
    def resolve(
        cls,
        options: TableOptions,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        time_retained: int | None = None,
        limit: int | None = None,
        parallelism: int | None = None,
    ) -> ExpireConfig:
        """The table's options, each overridden by the argument when it is not None (the kernel typed and
        range-checked it as the option; ``time_retained`` in milliseconds)."""
        low = options.require_or(SNAPSHOT_NUM_RETAINED_MIN, retain_min)
        high = options.require_or(SNAPSHOT_NUM_RETAINED_MAX, retain_max)
        time_ms = options.require_or(SNAPSHOT_TIME_RETAINED, time_retained)
        return cls(
            retain_min=low,
            retain_max=high,
            time_retained_ms=time_ms,
            limit=options.require_or(SNAPSHOT_EXPIRE_LIMIT, limit),
            clean_empty_dirs=options.require(SNAPSHOT_CLEAN_EMPTY_DIRECTORIES),
            parallelism=options.require_or(FILE_OPERATION_THREAD_NUM, parallelism),
            consumer_expiration_ms=options.get(CONSUMER_EXPIRATION_TIME),
            changelog_decoupled=changelog_decoupled(options, low, high, time_ms),
            produce_changelog=options.require(CHANGELOG_PRODUCER) != "none",
            changelog_retain_min=_or(options.get(CHANGELOG_NUM_RETAINED_MIN), low),
            changelog_retain_max=_or(options.get(CHANGELOG_NUM_RETAINED_MAX), high),
            changelog_time_retained_ms=_or(options.get(CHANGELOG_TIME_RETAINED), time_ms),
        )


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def changelog_decoupled(options: TableOptions, retain_min: int, retain_max: int, time_retained_ms: int) -> str:
    """Paimon's ``CoreOptions.changelogLifecycleDecoupled`` against the snapshot retention of this run: a set
    ``changelog.num-retained.max`` / ``.min`` / ``changelog.time-retained`` above its snapshot counterpart (unset,
    each falls back to it). The first such option, as text; '' when coupled."""
    for option, snapshot_value in (
        (CHANGELOG_NUM_RETAINED_MAX, retain_max),
        (CHANGELOG_TIME_RETAINED, time_retained_ms),
        (CHANGELOG_NUM_RETAINED_MIN, retain_min),
    ):
        value = options.get(option)
        if value is not None and value > snapshot_value:
            shown = option.type.render(value), option.type.render(snapshot_value)
            return f"{option.key} ({shown[0]}) is above the snapshot retention ({shown[1]})"
    return ""
