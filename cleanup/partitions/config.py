"""Partition expiration settings: the table's options with per-call overrides, validated before anything is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.context import TableContext
from tableformat.errors import ArgumentError, ValidationError
from tableformat.model.partition_time import PartitionTimeExtractor
from tableformat.options import (
    PARTITION_DEFAULT_NAME,
    PARTITION_EXPIRATION_BATCH_SIZE,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    TableOptions,
)
from tableformat.parallel import resolve_parallelism

STRATEGIES = ("values-time", "update-time")
"""``values-time``: the time the partition's values name; ``update-time``: its newest file's creation time."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionExpireConfig:
    """What one partition expiration run may drop."""

    expiration_ms: int
    """A partition expires once its time is older than now minus this (``partition.expiration-time``)."""
    strategy: str
    """One of :data:`STRATEGIES` (``partition.expiration-strategy``)."""
    extractor: PartitionTimeExtractor | None
    """The values-time extractor (pattern + formatter); None for update-time."""
    max_num: int
    """At most this many partitions per run, oldest first (``partition.expiration-max-num``)."""
    batch_size: int | None
    """Partitions per drop snapshot; None = one snapshot (``partition.expiration-batch-size``)."""
    threads: int = 8

    @classmethod
    def resolve(cls, ctx: TableContext, overrides: Mapping[str, Any]) -> PartitionExpireConfig:
        """The table's options, each overridden by an ``overrides`` value (the operation's parameters, checked and
        typed by the kernel: ``expiration_time`` in milliseconds)."""
        given = overrides
        if not ctx.schema.partition_keys:
            raise ValidationError("the table is not partitioned: there are no partitions to expire")
        options = ctx.options
        expiration_ms = options.get_or(PARTITION_EXPIRATION_TIME, given.get("expiration_time"))
        if expiration_ms is None:
            raise ArgumentError(
                "no expiration time: set the table option partition.expiration-time or pass {expiration_time}",
                expiration_time=("datetime.timedelta(days=30)", "30d"),
            )
        strategy = str(options.require_or(PARTITION_EXPIRATION_STRATEGY, given.get("strategy")))
        if strategy not in STRATEGIES:
            raise ValidationError(f"partition.expiration-strategy must be one of {', '.join(STRATEGIES)}: {strategy!r}")
        max_num = options.require_or(PARTITION_EXPIRATION_MAX_NUM, given.get("max_num"))
        return cls(
            expiration_ms=expiration_ms,
            strategy=strategy,
            extractor=_extractor(ctx, options, given) if strategy == "values-time" else None,
            max_num=max_num,
            batch_size=options.get(PARTITION_EXPIRATION_BATCH_SIZE),
            threads=resolve_parallelism(options, ctx.io, None),  # inline on local disk, threads on object stores
        )


def _extractor(ctx: TableContext, options: TableOptions, given: Mapping[str, Any]) -> PartitionTimeExtractor:
    pattern = given.get("timestamp_pattern", options.get(PARTITION_TIMESTAMP_PATTERN))
    formatter = given.get("timestamp_formatter", options.get(PARTITION_TIMESTAMP_FORMATTER))
    return PartitionTimeExtractor.create(
        ctx.schema.partition_fields, pattern, formatter, options.require(PARTITION_DEFAULT_NAME)
    )


def check_interval_ms(options: TableOptions) -> int:
    """``partition.expiration-check-interval`` in milliseconds (0 = after every commit)."""
    return options.require(PARTITION_EXPIRATION_CHECK_INTERVAL)
