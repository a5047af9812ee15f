"""Snapshots, tags and consumers: the JSON metadata that roots every table state."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

LONG_MAX = 2**63 - 1
BATCH_COMMIT_IDENTIFIER = LONG_MAX


class CommitKind(str, Enum):
    """What a snapshot did: Paimon's enum names."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The content of snapshot/snapshot-N (Paimon snapshot version 3)."""

    version: int = 3
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: Mapping[str, str] | None = None
    next_row_id: int | None = None
    uuid: str | None = None
    writer_version: str | None = None
    extra: Mapping[str, object] = field(default_factory=dict)
    """Top-level JSON keys tablefmt does not model (e.g. logOffsets); written back unchanged."""

    def manifest_lists(self) -> tuple[str, ...]:
        """Every manifest list file this snapshot references (names, not paths)."""
        names = [name for name in (self.base_manifest_list, self.delta_manifest_list) if name]
        if self.changelog_manifest_list:
            names.append(self.changelog_manifest_list)
        return tuple(names)

    def same_state(self, other: Snapshot) -> bool:
        """Whether ``other`` is this snapshot (or a copy of it, as a tag or a branch created from it holds): the same
        id and the same base manifest list (ids alone repeat after a rollback)."""
        return self.id == other.id and self.base_manifest_list == other.base_manifest_list


@dataclass(frozen=True, slots=True, kw_only=True)
class Tag:
    """The content of tag/tag-NAME: a snapshot plus tag fields."""

    name: str
    snapshot: Snapshot
    create_time: tuple[int, ...] | None = None
    """Jackson LocalDateTime array [y, m, d, h, min, s, nanos] as Paimon writes it."""
    time_retained_seconds: float | None = None

    def created_local(self) -> dt.datetime | None:
        """``create_time`` as a naive local date-time (None when absent or not a date)."""
        if not self.create_time or len(self.create_time) < 3:
            return None
        parts = [*self.create_time, 0, 0, 0, 0][:7]
        try:
            return dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] // 1000)
        except ValueError:
            return None

    def expires_ms(self) -> float | None:
        """When ``tagTimeRetained`` has passed, in epoch ms (the create time is local, as Paimon writes it); None
        for a tag kept forever or without a readable create time."""
        created = self.created_local()
        if self.time_retained_seconds is None or created is None:
            return None
        return created.timestamp() * 1000 + self.time_retained_seconds * 1000

    def expired(self, now_ms: int) -> bool:
        """Whether snapshot expiration deletes this tag at ``now_ms``."""
        expires = self.expires_ms()
        return expires is not None and expires < now_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class Consumer:
    """The content of consumer/consumer-ID: the next snapshot that consumer will read."""

    consumer_id: str
    next_snapshot: int
    modified_ms: int | None = None
